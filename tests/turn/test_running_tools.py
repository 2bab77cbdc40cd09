"""`running_tools`' work (`acp_fsm.turn.running_tools.run_tools`) over in-memory ports: the
calls run in order (or together), each result stored before it is shown, refused calls
answered, the request limit, and a cancel while a call runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.fsm.tool_call import ToolCallState
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools.base import Tool, ToolEnv, ToolOutcome
from acp_fsm.turn.calls import classify
from acp_fsm.turn.runner import Turn
from acp_fsm.turn.running_tools import run_tools
from tests.turn.memory import Gate, Setup, call

S = ToolCallState


class Failing(Gate):
    """A tool with a bug: its run raises."""

    async def run(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        raise RuntimeError("a bug")


def with_calls(setup: Setup, *calls: tuple[str, str]) -> Turn:
    """A turn whose model called `calls` ((id, tool name)), classified as streaming does."""
    turn = setup.turn()
    turn.tools = setup.tools
    turn.calls = [classify(turn, call(c, name)) for c, name in calls]
    return turn


async def test_calls_run_in_order_and_each_result_is_stored_then_shown(tmp_path: Path) -> None:
    first, second = Gate("first"), Gate("second")
    first.opened.set()
    tools: dict[str, Tool] = {"first": first, "second": second}
    setup = Setup(tmp_path, tools=tools)
    turn = with_calls(setup, ("c1", "first"), ("c2", "second"))
    setup.memory.hold = asyncio.Event()
    work = asyncio.ensure_future(run_tools(turn))
    await setup.memory.queued.wait()
    assert setup.editor.statuses("c1") == ["in_progress"]  # not shown done before stored
    assert not second.running.is_set()  # one after the other
    setup.memory.hold.set()
    await second.running.wait()
    assert setup.editor.statuses("c1") == ["in_progress", "completed"]
    second.opened.set()
    assert await work == TurnTrigger.TOOLS_DONE
    assert [b["callId"] for b in setup.memory.of("tool_result")] == ["c1", "c2"]
    assert [pc.state for pc in turn.calls] == [S.COMPLETED, S.COMPLETED]
    assert setup.conversation.messages[-1].results[1].content == (  # type: ignore[union-attr]
        "second ran with {}"
    )


async def test_a_refused_call_is_answered_and_a_tool_bug_is_its_result(tmp_path: Path) -> None:
    tools: dict[str, Tool] = {"buggy": Failing("buggy")}
    setup = Setup(tmp_path, tools=tools)
    turn = with_calls(setup, ("c1", "missing"), ("c2", "buggy"))
    assert await run_tools(turn) == TurnTrigger.TOOLS_DONE
    assert [pc.state for pc in turn.calls] == [S.FAILED, S.FAILED]
    assert setup.editor.statuses("c1") == ["failed"]
    assert setup.editor.statuses("c2") == ["in_progress", "failed"]
    results = setup.memory.of("tool_result")
    assert "Unknown tool 'missing'" in results[0]["content"]
    assert "failed unexpectedly: a bug" in results[1]["content"]


async def test_the_request_limit_ends_the_turn(tmp_path: Path) -> None:
    gate = Gate()
    gate.opened.set()
    setup = Setup(tmp_path, tools={"gate": gate})
    turn = with_calls(setup, ("c1", "gate"))
    turn.requests = turn.max_requests
    assert await run_tools(turn) == TurnTrigger.LIMIT_REACHED
    assert turn.stop_reason == "max_turn_requests"


async def two_at_once(
    tmp_path: Path,
) -> tuple[Gate, Setup, Turn, asyncio.Future[TurnTrigger]]:
    """Two calls of a tool whose calls run together, both running."""
    task = Gate("task", concurrent=True)
    setup = Setup(tmp_path, tools={"task": task})
    turn = with_calls(setup, ("c1", "task"), ("c2", "task"))
    work = asyncio.ensure_future(run_tools(turn))
    await task.started.get()
    await task.started.get()  # both run at once
    return task, setup, turn, work


async def test_concurrent_calls_run_together(tmp_path: Path) -> None:
    task, _, turn, work = await two_at_once(tmp_path)
    task.opened.set()
    assert await work == TurnTrigger.TOOLS_DONE
    assert [pc.state for pc in turn.calls] == [S.COMPLETED, S.COMPLETED]


async def test_a_cancel_while_a_call_runs_leaves_the_rest_unrun(tmp_path: Path) -> None:
    first, second = Gate("first"), Gate("second")
    setup = Setup(tmp_path, tools={"first": first, "second": second})
    turn = with_calls(setup, ("c1", "first"), ("c2", "second"))
    work = asyncio.ensure_future(run_tools(turn))
    await first.running.wait()
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    assert [pc.state for pc in turn.calls] == [S.RUNNING, S.ALLOWED]  # draining closes them
    assert second.runs == [] and setup.memory.entries == []


async def test_a_cancel_stops_every_concurrent_call(tmp_path: Path) -> None:
    _, setup, turn, work = await two_at_once(tmp_path)
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    assert [pc.state for pc in turn.calls] == [S.RUNNING, S.RUNNING]
    assert setup.memory.entries == []  # neither finished: no result is stored
