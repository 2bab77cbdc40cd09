"""Races and odd inputs found in review, each reproduced against the real agent first.

A cancel that lands while a completed message is being committed (the store held by another
process), a provider error racing a cancel, an editor that creates a terminal after the turn
gave up on it, a command that outlives the client-RPC limit, servers that send no tool-call
ids, and arguments that tools cannot even describe.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, ErrorEvent, Reply, ScriptedProvider
from tests.e2e.support import (
    EDITOR,
    SETTLE_S,
    Launcher,
    args,
    for_call,
    stored,
    text_events,
    tool_call_ids,
    tool_results,
)
from tests.harness import wait_until


@contextmanager
def store_locked(home: Path) -> Iterator[None]:
    """Another writer (a second agent process) holds the sessions database's write lock."""
    db = sqlite3.connect(str(home / "sessions.db"), isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        db.execute("COMMIT")
        db.close()


async def test_cancel_while_a_finished_message_waits_for_the_store(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Commit, then tell: a cancel that lands while the finished message waits for the store
    (another process holds its lock) is answered once the turn's entries are committed, and
    they are all there when the answer comes."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=("hello ", "world"), delay_s=0.2))
    pending = await agent.start_prompt(session, "hi")
    await wait_until(lambda: agent.updates(session, pending.start), "the first chunk")
    with store_locked(launch.home):
        await wait_until(
            lambda: any(
                u["sessionUpdate"] == "usage_update"
                for u in agent.updates(session, pending.start, metadata=True)
            ),
            "the end of the stream",
        )
        await wait_until(
            lambda: agent.proc.logged("entry_queued", kind="assistant"),
            "the assistant message to wait for the lock",
        )
        await agent.cancel(session)
        await asyncio.sleep(SETTLE_S)
        assert not pending.done()  # nothing is answered that a crash could still lose
    turn = await pending.result()
    assert turn.stop_reason == "cancelled"
    kinds = [(kind, body.get("stopReason")) for kind, body in stored(launch.home, session)]
    assert kinds == [
        ("user", None),
        ("usage", None),  # the call's tokens: it had ended
        ("assistant", "cancelled"),
        ("turn_end", "cancelled"),
    ]


async def test_a_provider_error_racing_a_cancel_still_answers_cancelled(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(text=("hello ", "wor"), headers_delay_s=0.3, fault=ErrorEvent(text_events(2)))
    )
    pending = await agent.start_prompt(session, "hi")
    await wait_until(lambda: server.requests, "the model call")
    with store_locked(launch.home):
        await wait_until(lambda: len(agent.updates(session, pending.start)) >= 2, "two chunks")
        await wait_until(
            lambda: agent.proc.logged("entry_queued", kind="assistant"),
            "the error, and the partial message waiting for the lock",
        )
        await agent.cancel(session)
        await asyncio.sleep(SETTLE_S)
        assert not pending.done()  # answered once what it wrote is committed
    turn = await pending.result()
    assert "result" in turn.response, turn.response
    assert turn.stop_reason == "cancelled"


async def test_a_terminal_created_after_the_cancel_is_killed_and_released(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=EDITOR)
    session = await agent.new_session(project)
    agent.editor.permissions.append("allow_once")
    agent.editor.overrides["terminal/create"] = HOLD  # a slow editor
    server.script(Reply(calls=(Call("c1", "run_command", args(command="./deploy.sh")),)))
    pending = await agent.start_prompt(session, "deploy")
    request = await agent.wait_request("terminal/create")
    await agent.cancel(session)
    assert (await pending.result()).stop_reason == "cancelled"
    await agent.answer_held(request, {"terminalId": "term-42"})  # it did start one
    await wait_until(
        lambda: (
            ("terminal/release", "term-42")
            in [(r["method"], r["params"].get("terminalId")) for r in agent.editor.received]
        ),
        "the late terminal's release",
        3.0,
    )
    cleanup = [
        (r["method"], r["params"].get("terminalId"))
        for r in agent.editor.received
        if r["method"] in ("terminal/kill", "terminal/release")
    ]
    assert cleanup == [("terminal/kill", "term-42"), ("terminal/release", "term-42")]
    del agent.editor.overrides["terminal/create"]


async def test_a_command_may_outlive_the_client_rpc_limit(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """terminal/wait_for_exit is bounded by the command's own timeout_ms, not by
    ACP_CLIENT_RPC_TIMEOUT_MS (editors answer it only when the command ends)."""
    agent = await launch.start("openai", capabilities=EDITOR, ACP_CLIENT_RPC_TIMEOUT_MS="300")
    session = await agent.new_session(project)
    agent.editor.permissions.append("allow_once")
    agent.editor.terminal_exit = HOLD
    server.script(
        Reply(calls=(Call("c1", "run_command", args(command="make test", timeout_ms=10000)),)),
        Reply(text="done"),
    )
    pending = await agent.start_prompt(session, "run the tests")
    request = await agent.wait_request("terminal/wait_for_exit")
    await asyncio.sleep(1.0)  # well past the client-RPC limit, well inside timeout_ms
    agent.editor.terminal_exit = {"exitCode": 0}
    await agent.answer_held(request, {"exitCode": 0})
    turn = await pending.result()
    assert turn.stop_reason == "end_turn"
    assert for_call(turn.updates, "c1")[-1]["status"] == "completed"
    assert tool_results(server.requests[-1])["c1"][0].startswith("Exit code: 0")


async def test_made_up_tool_call_ids_are_unique_in_the_session(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    (project / "b.txt").write_text("B\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("", "read_file", args(path="a.txt")),)),  # no ids sent
        Reply(calls=(Call("", "read_file", args(path="b.txt")),)),
        Reply(text="done"),
    )
    turn = await agent.prompt(session, "read both")
    announced = [u["toolCallId"] for u in turn.updates if u["sessionUpdate"] == "tool_call"]
    assert len(announced) == 2 and len(set(announced)) == 2
    assert tool_call_ids(server.requests[-1]) == announced


async def test_arguments_a_tool_cannot_describe_are_the_models_error(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(
            text="Let me look.",
            calls=(
                Call("c1", "read_file", json.dumps({"path": "src/a\u0000.py"})),
                Call("c2", "search_files", args(pattern="a{4294967296}")),
            ),
        ),
        Reply(text="Sorry."),
    )
    turn = await agent.prompt(session, "look")
    assert turn.stop_reason == "end_turn"
    results = tool_results(server.requests[-1])
    assert results["c1"][0].startswith("Invalid arguments for read_file")
    assert results["c2"][0].startswith("Invalid arguments for search_files")
    kinds = [kind for kind, _ in stored(launch.home, session) if kind != "usage"]
    assert kinds[:2] == ["user", "assistant"]
