"""A subagent as a child session, on the turn's ports in memory (tests/turn/memory.py): what the
parent and the child are sent, a cancel of the child alone, and what is stored for a load."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from acp_fsm import child_sessions
from acp_fsm.session.replay import Replayed, replay_updates
from acp_fsm.store import Entry
from acp_fsm.tools.base import Tool
from acp_fsm.tools.task import Task
from tests.turn.memory import SESSION_ID, Editor, Gate, Reply, Setup, call


def delegating(tmp_path: Path, *, reports: bool = True) -> tuple[Setup, Gate]:
    """A turn whose model hands "find it" to a subagent that calls `reader` (held until the
    test opens it) and then reports, unless it never gets to, for an editor that shows child
    sessions."""
    reader = Gate("reader")
    tools: dict[str, Tool] = {"task": Task(), "reader": reader}
    setup = Setup(tmp_path, tools=tools, editor=Editor({"subagents": {}}))
    setup.model.script(
        Reply(calls=(call("t1", "task", description="look", prompt="find it"),)),
        Reply(calls=(call("s1", "reader"),)),  # the subagent's first call
        *((Reply("found it in a.py"),) if reports else ()),  # its report
        Reply("the answer"),
    )
    return setup, reader


def plain(replayed: list[Replayed]) -> list[tuple[str, dict[str, Any]]]:
    """A replay's updates as the editor reads them (JSON objects)."""
    return cast("list[tuple[str, dict[str, Any]]]", replayed)


def kinds(updates: list[Any]) -> list[str]:
    """The kinds of `updates` but the context window's use (`usage_update`: the child's
    own, after each of its model calls)."""
    return [u["sessionUpdate"] for u in updates if u["sessionUpdate"] != "usage_update"]


async def test_the_child_gets_its_own_traffic_and_the_parent_its_announcement(
    tmp_path: Path,
) -> None:
    setup, reader = delegating(tmp_path)
    reader.opened.set()
    assert await setup.turn().run() == "end_turn"

    [child] = setup.editor.children
    assert child_sessions.parent_of(child) == SESSION_ID
    own = setup.editor.children[child].plain()
    assert kinds(own) == [
        "session_message",  # its task, as it received it
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",  # its report, streamed to it
        "session_message",  # its report, as it sent it
    ]
    parent = setup.editor.plain()
    ours = [u for u in parent if u["sessionUpdate"] in ("subagent_update", "session_message")]
    assert [u.get("state") for u in ours if u["sessionUpdate"] == "subagent_update"] == [
        {"state": "running"},
        {"state": "idle", "stopReason": "end_turn"},
    ]
    assert [u["content"][0]["text"] for u in ours if u["sessionUpdate"] == "session_message"] == [
        "find it",
        "found it in a.py",
    ]
    assert not any(u.get("toolCallId") == "s1" for u in parent)
    assert setup.editor.text() == "the answer"  # the child's words are the child's
    [stored] = setup.memory.of("subagent")
    assert stored["sessionId"] == child and stored["report"] == "found it in a.py"
    assert stored["messageIds"]["prompt"] == [ours[1]["messageId"], own[0]["messageId"]]


async def test_a_cancel_of_the_child_stops_it_and_the_turn_goes_on(tmp_path: Path) -> None:
    setup, reader = delegating(tmp_path, reports=False)
    turn = setup.turn()
    running = asyncio.create_task(turn.run())
    await reader.running.wait()
    [child] = turn.context.children
    assert turn.context.children[child].cancel("session/cancel")

    assert await running == "end_turn"
    assert turn.context.children == {}
    [result] = setup.memory.of("tool_result")
    assert result["isError"] and result["content"].startswith("The user stopped this subagent")
    [stored] = setup.memory.of("subagent")
    assert stored["stopReason"] == "cancelled"
    states = [u["state"] for u in setup.editor.plain() if u["sessionUpdate"] == "subagent_update"]
    assert states == [{"state": "running"}, {"state": "idle", "stopReason": "cancelled"}]


async def test_a_stored_child_replays_as_it_ran_or_as_one_call(tmp_path: Path) -> None:
    setup, reader = delegating(tmp_path)
    reader.opened.set()
    assert await setup.turn().run() == "end_turn"
    entries = [Entry(seq, kind, body, 0.0) for seq, (kind, body) in enumerate(setup.memory.entries)]
    [child] = setup.editor.children

    shown = plain(replay_updates(SESSION_ID, entries, subagents=True))
    live = kinds(setup.editor.children[child].plain())
    live.remove("tool_call_update")  # its call's start: a load shows each call's end
    assert kinds([u for on, u in shown if on == child]) == live
    [announced] = [u for _, u in shown if u["sessionUpdate"] == "subagent_update"][:1]
    assert "capabilities" not in announced and "state" not in announced
    final = [u for _, u in shown if u.get("toolCallId") == "t1"][-1]
    assert final["content"][0] == {"type": "session", "sessionId": child}

    alone = plain(replay_updates(SESSION_ID, entries))
    assert {on for on, _ in alone} == {SESSION_ID}
    assert not {"subagent_update", "session_message"} & {u["sessionUpdate"] for _, u in alone}
    final = [u for _, u in alone if u.get("toolCallId") == "t1"][-1]
    assert [block["type"] for block in final["content"]] == ["content"]


def test_a_childs_id_names_its_parent_and_is_refused_but_for_a_cancel() -> None:
    child = child_sessions.child_id("sess_abc")
    assert child_sessions.parent_of(child) == "sess_abc"
    assert child_sessions.parent_of("sess_abc") is None
    assert child_sessions.parent_of("sess_abc_task_") is None
    refused = child_sessions.refusal(child)
    assert refused is not None and "a client may only cancel its work" in refused.message
    assert child_sessions.refusal("sess_abc") is None
    outgoing, incoming = child_sessions.views("a", "b", "hi", ("m1", "m2"))
    assert (outgoing["messageId"], outgoing["recipientMessageId"]) == ("m1", "m2")
    assert (incoming["messageId"], incoming["senderMessageId"]) == ("m2", "m1")
