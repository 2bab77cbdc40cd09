"""Subagents as child sessions (ACP: protocol/v1/subagents) through the real agent, for an
editor that opts in with `clientCapabilities.subagents`: each `task` announced on its parent
before any of its traffic, its prompt and report as linked session messages, its own updates
on its own id, the parent's call linked with `session` content, its end as an idle state; a
cancel of the child stops it alone, a cancel of the parent stops all; its permission requests
name it; a load replays it in the same shape; a client that did not opt in sees none of it;
a child's id takes nothing but a cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.conformance.subagents import Children
from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from acp_fsm.devkit.provider.script import RecordedRequest, Scripted
from tests.e2e.support import BARE, Agent, Launcher, args, content_text, for_call, tool_results
from tests.e2e.test_sessions import restore
from tests.e2e.test_subagents import delegating, reader
from tests.harness import wait_until

SUBAGENTS = {**BARE, "subagents": {}}
Note = tuple[str, dict[str, Any]]  # the session an update is on, and the update


def notes(agent: Agent, start: int = 0, end: int | None = None) -> list[Note]:
    """Every `session/update` in `messages[start:end]`, with the session it is on."""
    return [
        (m["params"]["sessionId"], m["params"]["update"])
        for m in agent.messages[start:end]
        if m.get("method") == "session/update"
    ]


def followed(agent: Agent, parent: str, start: int = 0, end: int | None = None) -> Children:
    """The child sessions of `parent` as a client sees them; no rule broken."""
    seen = Children(parent).follow(
        [m for m in agent.messages[start:end] if m.get("method") == "session/update"]
    )
    assert seen.problems == []
    return seen


def shape(found: list[Note], parent: str) -> list[tuple[str, str, str]]:
    """What a conversation shows, parent's and children's alike: who each update is on, its
    kind and its call (streamed chunks of one message as one)."""
    out: list[tuple[str, str, str]] = []
    for on, update in found:
        kind = update["sessionUpdate"]
        if kind in ("usage_update", "session_info_update", "available_commands_update"):
            continue
        if update.get("status") == "in_progress":  # live only, a load shows each call's end
            continue
        step = ("parent" if on == parent else "child", kind, str(update.get("toolCallId", "")))
        if not (out and out[-1] == step and kind.endswith("_chunk")):
            out.append(step)
    return out


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_a_task_is_a_child_session_announced_before_its_traffic_and_replayed_alike(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    (project / "a.py").write_text("# this is a.py\n")
    server.fallback = delegating("a.py")
    agent = await launch.start(provider, capabilities=SUBAGENTS)
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "investigate")
    assert turn.stop_reason == "end_turn"
    report = tool_results(server.requests[-1])["t-a.py"][0]
    assert report == "a.py begins with: # this is a.py"

    live = notes(agent, turn.start, turn.end)
    seen = followed(agent, session, turn.start, turn.end)
    [child] = seen.fields
    assert child.startswith(session)
    first = next(u for on, u in live if u.get("sessionId") == child)
    assert first == {
        "sessionUpdate": "subagent_update",
        "sessionId": child,
        "title": "look at a.py",
        "description": "read a.py",
        "capabilities": {"cancel": {}},
        "state": {"state": "running"},
    }
    assert seen.states[child] == [
        {"state": "running"},
        {"state": "idle", "stopReason": "end_turn"},
    ]
    # the parent's call: the task's prompt, then linked to the child, then the report
    call = for_call([u for on, u in live if on == session], "t-a.py")
    assert call[0]["kind"] == "other" and content_text(call[0]) == "read a.py"
    assert [u["content"] for u in call[1:-1] if "content" in u] == [
        [{"type": "session", "sessionId": child}]
    ]
    assert call[-1]["status"] == "completed"
    assert call[-1]["content"][0] == {"type": "session", "sessionId": child}
    assert content_text(call[-1]) == report
    # the prompt from the parent and the report back, each seen from both sides, linked
    messages = [(on, u) for on, u in live if u["sessionUpdate"] == "session_message"]
    assert [(on == session, u["senderSessionId"] == session) for on, u in messages] == [
        (True, True),
        (False, True),
        (False, False),
        (True, False),
    ]
    (_, ask), (_, asked), (_, told), (_, heard) = messages
    assert ask["recipientMessageId"] == asked["messageId"] != ask["messageId"]
    assert asked["senderMessageId"] == ask["messageId"]
    assert (
        told["recipientMessageId"] == heard["messageId"]
        and heard["senderMessageId"] == (told["messageId"])
    )
    assert [m["content"][0]["text"] for _, m in messages] == ["read a.py"] * 2 + [report] * 2
    # the child's own work on its own id: its call and its words, none of it on the parent
    own = seen.updates[child]
    assert [u["toolCallId"] for u in own if u["sessionUpdate"] == "tool_call"] == ["read-a.py"]
    assert (
        "".join(u["content"]["text"] for u in own if u["sessionUpdate"] == "agent_message_chunk")
        == report
    )
    assert not any(u.get("toolCallId") == "read-a.py" for on, u in live if on == session)

    # a load shows it as it was, no longer at work: announced without capabilities or state
    await launch.close(agent)
    second = await launch.start(provider, capabilities=SUBAGENTS)
    start = len(second.messages)
    response, _ = await restore(second, "session/load", session, project)
    replayed = notes(second, start, second.position(response))
    again = followed(second, session, start)
    assert list(again.fields) == [child]
    assert again.fields[child] == {
        "sessionId": child,
        "title": "look at a.py",
        "description": "read a.py",
        "state": {"state": "idle", "stopReason": "end_turn"},
    }
    live_shape = [
        s
        for s in shape(live, session)
        if s != ("parent", "tool_call_update", "t-a.py") and s[1] != "subagent_update"
    ]
    replayed_shape = [
        s
        for s in shape(replayed, session)
        if s != ("parent", "tool_call_update", "t-a.py") and s[1] != "subagent_update"
    ]
    assert replayed_shape[0] == ("parent", "user_message_chunk", "")  # live: the prompt sent
    assert replayed_shape[1:] == live_shape, (replayed_shape, live_shape)
    ids = [u["messageId"] for _, u in replayed if u["sessionUpdate"] == "session_message"]
    assert ids == [u["messageId"] for _, u in messages]
    [final] = [
        u
        for _, u in replayed
        if u.get("toolCallId") == "t-a.py" and u["sessionUpdate"] == "tool_call_update"
    ]
    assert final["content"] == call[-1]["content"]

    # a client that did not opt in: the call and its report, nothing of a child
    third = await launch.start(provider)
    start = len(third.messages)
    response, plain = await restore(third, "session/load", session, project)
    kinds = {u["sessionUpdate"] for _, u in notes(third, start)}
    assert not kinds & {"subagent_update", "session_message"}
    assert {on for on, _ in notes(third, start)} == {session}
    final = for_call(plain, "t-a.py")[-1]
    assert final["content"] == [{"type": "content", "content": {"type": "text", "text": report}}]


def hanging(request: RecordedRequest) -> Scripted:
    """A subagent whose model streams its first words and then hangs, unless its file is
    a.py."""
    if "a.py" in str(request.body):
        return reader(request)
    return Reply(text=["I am looking", " and looking"], fault=Hang(after=4))


async def running_child(agent: Agent, session: str, start: int, title: str) -> str:
    """The child session of the task titled `title`, once its model has streamed words."""
    found: list[str] = []

    def ready() -> bool:
        seen = followed(agent, session, start)
        found[:] = [c for c, f in seen.fields.items() if f["title"] == title and said(seen, c)]
        return bool(found)

    await wait_until(ready, f"the child of {title!r} at work")
    return found[0]


def said(seen: Children, child: str) -> bool:
    """Whether `child`'s model has streamed words to it."""
    return any(u["sessionUpdate"] == "agent_message_chunk" for u in seen.updates.get(child, ()))


async def test_a_cancel_of_a_child_stops_that_subagent_alone(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("# this is a.py\n")
    server.fallback = delegating("a.py", "b.py", sub=hanging)
    agent = await launch.start("anthropic", capabilities=SUBAGENTS)
    session = await agent.new_session(project)
    pending = await agent.start_prompt(session, "investigate both")
    child = await running_child(agent, session, pending.start, "look at b.py")
    await agent.cancel(child)
    turn = await pending.result()

    assert turn.stop_reason == "end_turn"  # the parent went on, with both results
    results = tool_results(server.requests[-1])
    assert results["t-a.py"][0] == "a.py begins with: # this is a.py"
    stopped = results["t-b.py"][0]
    assert stopped.startswith("The user stopped this subagent before it finished.")
    seen = followed(agent, session, pending.start)
    assert seen.states[child][-1] == {"state": "idle", "stopReason": "cancelled"}
    [other] = set(seen.fields) - {child}
    assert seen.states[other][-1] == {"state": "idle", "stopReason": "end_turn"}
    assert for_call(turn.updates, "t-b.py")[-1]["status"] == "failed"
    await wait_until(lambda: server.disconnects, "the child's stream closed")
    # a cancel of a child that no longer works, or of one never known, changes nothing
    await agent.cancel(child)
    await agent.cancel(f"{session}_task_000000000000")
    assert (await agent.prompt(session, "again")).stop_reason == "end_turn"


async def test_a_cancel_of_the_parent_stops_its_children(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.fallback = delegating("b.py", sub=hanging)
    agent = await launch.start("openai", capabilities=SUBAGENTS)
    session = await agent.new_session(project)
    pending = await agent.start_prompt(session, "investigate")
    child = await running_child(agent, session, pending.start, "look at b.py")
    await agent.cancel(session)
    turn = await pending.result()

    assert turn.stop_reason == "cancelled"
    seen = followed(agent, session, pending.start)
    assert seen.states[child][-1] == {"state": "idle", "stopReason": "cancelled"}
    # nothing is reported from a cancelled child to its cancelled parent: its one message
    # is its task
    messages = [u for u in seen.updates[child] if u["sessionUpdate"] == "session_message"]
    assert [m["recipientSessionId"] for m in messages] == [child]


async def test_a_childs_permission_request_names_the_child(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """In Full access a subagent has every tool but task; a fetch of the user's own machine
    still asks, on the child's session, which waits for it as `requires_action`."""
    url = f"{server.url}/page"

    def fetcher(request: RecordedRequest) -> Scripted:
        if not tool_results(request):
            return Reply(calls=(Call("f1", "fetch_url", args(url=url)),))
        return Reply(text="fetched")

    server.fallback = delegating("b.py", sub=fetcher)
    agent = await launch.start("anthropic", capabilities=SUBAGENTS)
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": "full_access"})
    agent.editor.permissions.append("allow_once")
    turn = await agent.prompt(session, "investigate")

    assert turn.stop_reason == "end_turn"
    seen = followed(agent, session, turn.start, turn.end)
    [child] = seen.fields
    [asked] = agent.editor.of_method("session/request_permission")
    assert asked["params"]["sessionId"] == child
    assert asked["params"]["toolCall"]["toolCallId"] == "f1"
    assert [s["state"] for s in seen.states[child]] == [
        "running",
        "requires_action",
        "running",
        "idle",
    ]
    assert any(u.get("toolCallId") == "f1" for u in seen.updates[child])


async def test_a_childs_id_takes_nothing_but_a_cancel(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("# this is a.py\n")
    server.fallback = delegating("a.py")
    agent = await launch.start("openai", capabilities=SUBAGENTS)
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "investigate")
    [child] = followed(agent, session, turn.start, turn.end).fields

    for method, params in (
        ("session/prompt", {"sessionId": child, "prompt": [{"type": "text", "text": "hi"}]}),
        ("session/load", {"sessionId": child, "cwd": str(project), "mcpServers": []}),
        ("session/set_mode", {"sessionId": child, "modeId": "ask"}),
        ("session/close", {"sessionId": child}),
    ):
        response = await agent.request(method, params)
        assert response["error"]["code"] == -32602, method
        assert "the session of a subagent of" in response["error"]["message"], method
    listed = await agent.result("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [session]
