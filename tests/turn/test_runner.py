"""The runner (`acp_fsm.turn.runner.Turn.run`) over in-memory ports: the whole turn, its path
through the machine, what it stores; a cancel in each working state ends in `draining` then
`cancelled` with every call closed; a failure; and a subagent on ports of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from acp_fsm import transcript
from acp_fsm.commands import COMPACT, STATUS, Command
from acp_fsm.errors import TurnFailed
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.types import Message, TextPart, UserMessage
from acp_fsm.tools.base import Tool
from acp_fsm.tools.task import Task
from acp_fsm.turn.runner import Turn
from tests.turn.memory import Gate, Reply, Setup, call


async def test_a_turn_with_a_tool_call_goes_round_once(tmp_path: Path) -> None:
    gate = Gate()
    gate.opened.set()
    setup = Setup(tmp_path, tools={"gate": gate})
    setup.model.script(Reply(calls=(call("c1", "gate"),)), Reply("done"))
    turn = setup.turn()
    assert await turn.run() == "end_turn"
    assert turn.path == ["idle", "streaming", "running_tools", "streaming", "done"]
    assert setup.memory.kinds() == ["assistant", "tool_result", "assistant", "turn_end"]
    assert setup.memory.of("turn_end") == [{"stopReason": "end_turn"}]
    assert turn.requests == 2


async def test_a_cancel_before_the_turn_starts_makes_no_call(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    turn = setup.turn()
    turn.token.cancel("test")
    assert await turn.run() == "cancelled"
    assert turn.path == ["idle", "cancelled"]
    assert setup.model.requests == []
    assert setup.memory.of("turn_end") == [{"stopReason": transcript.CANCELLED}]


async def run_and_cancel(turn: Turn, when: Callable[[], Awaitable[object]]) -> str:
    """Run `turn`, fire its token once `when` is over; its answer."""
    running = asyncio.ensure_future(turn.run())
    await when()
    turn.token.cancel("test")
    return await running


def talk() -> list[Message]:
    return [UserMessage((TextPart("x" * 20_000),)), UserMessage((TextPart("q"),))]


async def test_a_cancel_in_each_working_state_drains_the_turn(tmp_path: Path) -> None:
    # streaming: mid-stream
    setup = Setup(tmp_path)
    setup.model.script(Reply("partial", hang=True))
    turn = setup.turn()
    assert await run_and_cancel(turn, setup.model.streaming.wait) == "cancelled"
    assert turn.path == ["idle", "streaming", "draining", "cancelled"]

    # awaiting_permission: while the user is asked
    setup = Setup(tmp_path, tools={"edit": Gate("edit", "edit", asks=True)})
    setup.model.script(Reply(calls=(call("c1", "edit"),)))
    turn = setup.turn()
    assert await run_and_cancel(turn, setup.editor.channel.next_request) == "cancelled"
    assert turn.path == ["idle", "streaming", "awaiting_permission", "draining", "cancelled"]
    assert setup.memory.of("tool_result")[0]["content"] == transcript.NOT_STARTED

    # running_tools: while a call runs
    gate = Gate()
    setup = Setup(tmp_path, tools={"gate": gate})
    setup.model.script(Reply(calls=(call("c1", "gate"),)))
    turn = setup.turn()
    assert await run_and_cancel(turn, gate.running.wait) == "cancelled"
    assert turn.path == ["idle", "streaming", "running_tools", "draining", "cancelled"]
    assert setup.memory.of("tool_result")[0]["content"] == transcript.INTERRUPTED
    assert setup.editor.statuses("c1") == ["pending", "in_progress", "cancelled"]  # v1: failed

    # compacting: while the summary streams
    setup = Setup(tmp_path, messages=talk())
    setup.model.script(Reply("sum", hang=True))
    turn = setup.turn(Command(COMPACT, ""))
    assert await run_and_cancel(turn, setup.model.streaming.wait) == "cancelled"
    assert turn.path == ["idle", "compacting", "draining", "cancelled"]

    # reporting: as it reads the instruction files
    setup = Setup(tmp_path)
    turn = setup.turn(Command(STATUS, ""))
    assert await run_and_cancel(turn, lambda: asyncio.sleep(0)) == "cancelled"
    assert turn.path == ["idle", "reporting", "draining", "cancelled"]
    assert setup.memory.of("turn_end") == [{"stopReason": transcript.CANCELLED}]


async def test_a_failure_closes_the_open_calls_and_answers_with_the_error(tmp_path: Path) -> None:
    gate = Gate()
    gate.opened.set()
    setup = Setup(tmp_path, tools={"gate": gate})
    setup.model.script(
        Reply(calls=(call("c1", "gate"),)),
        Reply(error=ProviderError("openai", "overloaded", status=503)),
    )
    turn = setup.turn()
    with pytest.raises(TurnFailed, match="overloaded"):
        await turn.run()
    assert turn.path == ["idle", "streaming", "running_tools", "streaming", "failed"]
    assert setup.memory.of("turn_end") == [{"stopReason": "error"}]


async def test_a_subagent_runs_on_ports_of_its_own(tmp_path: Path) -> None:
    reader = Gate("reader")
    reader.opened.set()
    tools: dict[str, Tool] = {"task": Task(), "reader": reader, "edit": Gate("edit", "edit")}
    setup = Setup(tmp_path, tools=tools)
    setup.model.script(
        Reply(calls=(call("t1", "task", description="look", prompt="find it"),)),
        Reply(calls=(call("s1", "reader"),)),  # the subagent's first call
        Reply("found it in a.py"),  # its report
        Reply("the answer"),
    )
    turn = setup.turn()
    assert await turn.run() == "end_turn"

    subagent_call, its_report = setup.model.requests[1], setup.model.requests[2]
    assert subagent_call.messages == (UserMessage((TextPart("find it"),)),)
    assert {t.name for t in subagent_call.tools} == {"reader"}  # read-only: no task, no edit
    assert subagent_call.cache_key == "sess_test:task"
    assert len(its_report.messages) == 3
    # The session stores its transcript whole, nothing of it as it went.
    assert setup.memory.kinds() == ["assistant", "subagent", "tool_result", "assistant", "turn_end"]
    [stored] = setup.memory.of("subagent")
    assert stored["callId"] == "t1" and stored["modelCalls"] == 2
    assert [e["kind"] for e in stored["entries"]] == [
        "assistant",
        "tool_result",
        "assistant",
        "turn_end",
    ]
    # Its calls count in the session's ledger, marked; its progress shows in the task's call.
    assert [(c.call, c.subagent) for c in setup.charges] == [
        ("turn", False),
        ("turn", True),
        ("turn", True),
        ("turn", False),
    ]
    assert setup.memory.of("tool_result")[0]["content"] == "found it in a.py"
    shown = [u for u in setup.editor.updates if u.get("toolCallId") == "t1"]
    assert any("reader" in str(u.get("content")) for u in shown)
    assert setup.editor.text() == "the answer"  # the subagent's own text is not streamed
