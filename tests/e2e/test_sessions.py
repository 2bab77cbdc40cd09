"""Session methods: errors for unknown sessions and relative paths, load with replay in a new
process (checked against what the first process sent live), resume, list, close, delete, and
recovery after `kill -9` mid-turn."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, Hang, HttpError, Reply, ScriptedProvider
from acp_fsm.transcript import LOST, NOT_STARTED
from tests.e2e.support import (
    CLIENT_FS,
    EDITOR,
    SETTLE_S,
    Agent,
    Launcher,
    args,
    assert_restored,
    chunk,
    history,
    message_chunks,
    stored,
    text_events,
    tool_results,
    unique_sleep,
    user_texts,
)
from tests.harness import TITLE_MODEL, live_processes, wait_until


async def restore(
    agent: Agent, method: str, session: str, cwd: Path, *, ids: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`session/load` or `session/resume`: the response and the updates sent before it (with
    their message ids when `ids`), after checking that nothing about the session follows it."""
    start = len(agent.messages)
    response = await agent.request(
        method, {"sessionId": session, "cwd": str(cwd), "mcpServers": []}
    )
    end = agent.position(response)
    replayed = agent.updates(session, start, end, ids=ids)
    await asyncio.sleep(SETTLE_S)
    assert agent.updates(session, end + 1) == []
    return response, replayed


def as_replayed(*turns: tuple[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """What a load must replay for a conversation of (prompt, updates sent live) turns: each
    prompt, each message's text and thinking in one chunk, each call's announcement and its
    final state (progress updates are not history)."""
    expected: list[dict[str, Any]] = []
    for prompt, live in turns:
        expected.append(chunk("user_message_chunk", prompt))
        expected += _merged(live)
    return expected


def _merged(live: list[dict[str, Any]]) -> list[dict[str, Any]]:
    expected: list[dict[str, Any]] = []
    for update in live:
        kind = update["sessionUpdate"]
        if kind == "tool_call_update" and update.get("status") in (None, "in_progress"):
            continue  # progress, and the change shown before asking, are not history
        last: dict[str, Any] = expected[-1] if expected else {"sessionUpdate": None}
        if kind in ("agent_message_chunk", "agent_thought_chunk") and (
            last["sessionUpdate"] == kind
        ):
            expected[-1] = chunk(kind, last["content"]["text"] + update["content"]["text"])
            continue
        expected.append(update)
    return expected


def assert_same(replayed: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Message by message, then the count."""
    for index, (got, want) in enumerate(zip(replayed, expected, strict=False)):
        assert got == want, f"replayed update #{index} differs"
    assert len(replayed) == len(expected), (replayed, expected)


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "method",
    ["session/prompt", "session/load", "session/resume", "session/close", "session/delete"],
)
async def test_unknown_session_is_resource_not_found(
    launch: Launcher, project: Path, method: str
) -> None:
    agent = await launch.start()
    await agent.proc.notify("session/cancel", {"sessionId": "sess_nope"})  # silently ignored
    params: dict[str, Any] = {
        "sessionId": "sess_nope",
        "cwd": str(project),
        "mcpServers": [],
        "prompt": [{"type": "text", "text": "hi"}],
    }
    spec_fields = {
        "session/prompt": ("sessionId", "prompt"),
        "session/close": ("sessionId",),
        "session/delete": ("sessionId",),
    }
    fields = spec_fields.get(method, ("sessionId", "cwd", "mcpServers"))
    response = await agent.request(method, {k: params[k] for k in fields})
    assert response["error"]["code"] == -32002
    assert "sess_nope" in response["error"]["message"]


@pytest.mark.parametrize(
    "params",
    [
        {"cwd": "project", "mcpServers": []},
        {"cwd": "/abs", "mcpServers": [], "additionalDirectories": ["rel/dir"]},
    ],
    ids=["cwd", "additionalDirectories"],
)
async def test_relative_paths_are_invalid_params(launch: Launcher, params: dict[str, Any]) -> None:
    agent = await launch.start()
    response = await agent.request("session/new", params)
    assert response["error"]["code"] == -32602
    assert "absolute" in response["error"]["message"]


async def test_load_with_a_relative_cwd_is_invalid_params(launch: Launcher, project: Path) -> None:
    agent = await launch.start()
    session = await agent.new_session(project)
    response = await agent.request(
        "session/load", {"sessionId": session, "cwd": "project", "mcpServers": []}
    )
    assert response["error"]["code"] == -32602


# ------------------------------------------------------------------------ load and resume


@pytest.mark.slow
async def test_load_in_a_new_process_replays_what_was_shown_live(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "code.py").write_text("x = 1\n")
    first = await launch.start("anthropic")
    first.editor.permissions.extend(["allow_once", "reject_once"])
    session = await first.new_session(project)
    server.script(
        Reply(
            thinking=("Reading ", "first."),
            signature="sig-load",
            text=("I will ", "look."),
            calls=(Call("r1", "read_file", args(path="code.py")),),
        ),
        Reply(
            text="Editing.",
            calls=(
                Call("e1", "edit_file", args(path="code.py", old_text="x = 1", new_text="x = 2")),
            ),
        ),
        Reply(calls=(Call("w1", "write_file", args(path="other.py", content="")),)),
        Reply(text=("Done", "!")),
    )
    live = await first.prompt(session, "Fix the bug")
    assert live.stop_reason == "end_turn"
    before = history(server.requests[-1])
    await launch.close(first)

    second = await launch.start("anthropic")
    response, replayed = await restore(second, "session/load", session, project)

    assert_restored(response["result"])
    assert_same(replayed, as_replayed(("Fix the bug", live.updates)))
    named = [u["name"] for u in replayed if u["sessionUpdate"] == "tool_call"]
    assert named == ["read_file", "edit_file", "write_file"]  # the tools', as the model called
    assert [u["sessionUpdate"] for u in replayed] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]

    server.script(Reply(text="You're welcome"))
    turn = await second.prompt(session, "Thanks")
    assert turn.stop_reason == "end_turn"
    assert history(server.requests[-1]) == [
        *before,
        {"role": "assistant", "content": [{"type": "text", "text": "Done!"}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]


@pytest.mark.slow
async def test_a_prompt_of_several_text_blocks_replays_them_apart(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Clients join a message's chunks as they come: a text block followed by another ends
    with a blank line (unless a line break is there already); the model read them apart."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="ok"))
    prompt = [
        {"type": "text", "text": "Fix this function:"},
        {"type": "text", "text": "def f(): return 1"},
        {"type": "resource_link", "uri": "file:///x/y.py", "name": "y.py"},
        {"type": "text", "text": "and this line\n"},
        {"type": "text", "text": "thanks"},
    ]
    response = await agent.request("session/prompt", {"sessionId": session, "prompt": prompt})
    assert response["result"]["stopReason"] == "end_turn"
    await launch.close(agent)

    other = await launch.start("openai")
    _, replayed = await restore(other, "session/load", session, project)

    shown = [u["content"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert shown == [
        {"type": "text", "text": "Fix this function:\n\n"},
        {"type": "text", "text": "def f(): return 1"},
        prompt[2],
        prompt[3],
        prompt[4],
    ]


@CLIENT_FS
async def test_a_conversation_cancelled_midway_loads_and_continues(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    first = await launch.start("anthropic", capabilities=EDITOR)
    first.editor.buffers[str(project / "a.txt")] = "alpha (unsaved)\n"
    first.editor.permissions.extend(["allow_once", HOLD])
    first.editor.terminal_exit = HOLD
    session = await first.new_session(project)
    server.script(
        Reply(text="Reading.", calls=(Call("r1", "read_file", args(path="a.txt")),)),
        Reply(text="Read it."),
        Reply(
            text="Running.",
            calls=(
                Call("x1", "run_command", args(command="make")),
                Call("x2", "run_command", args(command="ls")),
            ),
        ),
    )
    one = await first.prompt(session, "read a.txt")
    running = await first.start_prompt(session, "now build")
    await first.wait_request("session/request_permission", 2)  # x1 allowed, x2 asked
    await first.cancel(session)
    two = await running.result()
    assert two.stop_reason == "cancelled"
    before = history(server.requests[-1])
    await launch.close(first)

    second = await launch.start("anthropic")
    _, replayed = await restore(second, "session/load", session, project)

    assert_same(replayed, as_replayed(("read a.txt", one.updates), ("now build", two.updates)))
    server.script(Reply(text="Continuing."))
    turn = await second.prompt(session, "go on")
    assert turn.stop_reason == "end_turn", turn.response
    sent = history(server.requests[-1])
    assert sent[: len(before)] == before
    assert tool_results(server.requests[-1]) == {
        "r1": ("alpha (unsaved)\n", False),
        "x1": (NOT_STARTED, True),
        "x2": (NOT_STARTED, True),
    }
    assert user_texts(server.requests[-1]) == ["read a.txt", "now build", "go on"]


async def test_load_of_an_open_session_rebinds_its_running_turn(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=("still ", "going"), fault=Hang(text_events(2))))
    running = await agent.start_prompt(session, "long")
    await wait_until(lambda: len(agent.updates(session, running.start)) == 2, "two chunks")

    response, _ = await restore(agent, "session/load", session, project)

    assert_restored(response["result"])
    await agent.cancel(session)
    turn = await running.result(timeout=3)
    assert turn.stop_reason == "cancelled"
    server.script(Reply(text="back"))
    assert (await agent.prompt(session, "again")).stop_reason == "end_turn"


async def test_resume_restores_without_replay(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("openai")
    session = await first.new_session(project)
    server.script(Reply(text="Remember 42."))
    assert (await first.prompt(session, "Remember a number")).stop_reason == "end_turn"
    await launch.close(first)

    second = await launch.start("openai")
    response, replayed = await restore(second, "session/resume", session, project)

    assert_restored(response["result"])
    assert replayed == []
    server.script(Reply(text="42"))
    assert (await second.prompt(session, "Which number?")).stop_reason == "end_turn"
    assert history(server.requests[-1]) == [
        {"role": "user", "content": "Remember a number"},
        {"role": "assistant", "content": "Remember 42."},
        {"role": "user", "content": "Which number?"},
    ]


# ------------------------------------------------------------------------- list, close, delete


async def test_list_filters_by_cwd_newest_first_with_titles(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server.lanes[TITLE_MODEL] = HttpError(503, "no titles today")  # the first prompts' words
    agent = await launch.start("openai")
    alpha = await agent.new_session(project)
    idle = await agent.new_session(elsewhere)
    gamma = await agent.new_session(project)
    server.fallback = Reply(text="ok")
    for session, prompt in [
        (alpha, "Alpha   task\nwith details"),
        (gamma, "Gamma"),
        (alpha, "a later prompt keeps the title"),
    ]:
        assert (await agent.prompt(session, prompt)).stop_reason == "end_turn"

    listed = (await agent.result("session/list", {}))["sessions"]

    # the session nobody prompted has nothing to resume: editors would show an empty line
    assert [s["sessionId"] for s in listed] == [alpha, gamma]
    assert [s.get("title") for s in listed] == ["Alpha task", "Gamma"]  # the first line
    assert [s["cwd"] for s in listed] == [str(project), str(project)]
    assert all(s["updatedAt"].endswith("Z") for s in listed)
    assert listed[0]["updatedAt"] >= listed[1]["updatedAt"]
    assert (await agent.result("session/list", {"cwd": str(elsewhere)}))["sessions"] == []
    mine = await agent.result("session/list", {"cwd": str(project)})
    assert [s["sessionId"] for s in mine["sessions"]] == [alpha, gamma]
    assert "nextCursor" not in mine
    server.script(Reply(text="now it has a prompt"))
    assert (await agent.prompt(idle, "hello")).stop_reason == "end_turn"
    listed = (await agent.result("session/list", {}))["sessions"]
    assert [s["sessionId"] for s in listed] == [idle, alpha, gamma]
    await launch.close(agent)
    again = await launch.start("openai")  # the list is the store's, not the process's
    assert (await again.result("session/list", {}))["sessions"] == listed


async def test_list_pages_with_a_cursor(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start()
    server.fallback = Reply(text="ok")
    created = [await agent.new_session(project) for _ in range(53)]
    for session in created:
        assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"

    first = await agent.result("session/list", {"cwd": str(project)})
    second = await agent.result(
        "session/list", {"cwd": str(project), "cursor": first["nextCursor"]}
    )

    assert len(first["sessions"]) == 50 and "nextCursor" not in second
    walked = [s["sessionId"] for s in first["sessions"] + second["sessions"]]
    assert walked == created[::-1]
    bad = await agent.request("session/list", {"cursor": "not-a-cursor"})
    assert bad["error"]["code"] == -32602


async def test_close_cancels_the_running_turn(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(Reply(text="thinking aloud", fault=Hang(4)))
    running = await agent.start_prompt(session, "long task")
    await wait_until(lambda: agent.updates(session, running.start), "the first chunk")

    assert await agent.result("session/close", {"sessionId": session}) == {}

    turn = await running.result(timeout=3)
    assert turn.stop_reason == "cancelled"
    await wait_until(lambda: server.disconnects, "the provider to see the disconnect", 2.0)
    refused = await agent.prompt(session, "still there?")
    assert refused.error["code"] == -32002
    _, replayed = await restore(agent, "session/load", session, project)  # it is still stored
    assert replayed == [chunk("user_message_chunk", "long task"), *message_chunks("thinking aloud")]


async def test_delete_forgets_the_session(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    kept, doomed = await agent.new_session(project), await agent.new_session(project)
    server.script(Reply(text="hi"), Reply(text="bye"))
    assert (await agent.prompt(kept, "hello")).stop_reason == "end_turn"
    assert (await agent.prompt(doomed, "hello")).stop_reason == "end_turn"

    assert await agent.result("session/delete", {"sessionId": doomed}) == {}

    listed = await agent.result("session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [kept]
    assert (await agent.prompt(doomed, "hi")).error["code"] == -32002
    load = await agent.request(
        "session/load", {"sessionId": doomed, "cwd": str(project), "mcpServers": []}
    )
    assert load["error"]["code"] == -32002
    assert stored(launch.home, doomed) == []


async def test_closing_stdin_mid_turn_cancels_persists_and_exits_0(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("openai")
    session = await first.new_session(project)
    server.script(Reply(text=("interrupted ", "by exit"), fault=Hang(text_events(2))))
    running = await first.start_prompt(session, "long")
    await wait_until(lambda: len(first.updates(session, running.start)) == 2, "two chunks")

    await launch.close(first)  # exit code 0, clean output

    assert (await running.result(timeout=1)).stop_reason == "cancelled"
    second = await launch.start("openai")
    _, replayed = await restore(second, "session/load", session, project)
    assert replayed == [chunk("user_message_chunk", "long"), *message_chunks("interrupted by exit")]


# ------------------------------------------------------------------------------- kill -9


@pytest.mark.slow
async def test_kill_during_a_tool_run_then_load_repairs(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    command = unique_sleep()
    first = await launch.start("openai")
    first.editor.permissions.append("allow_once")
    session = await first.new_session(project)
    server.script(
        Reply(text="Running.", calls=(Call("run-1", "run_command", args(command=command)),))
    )
    await first.start_prompt(session, "run it")
    try:
        await wait_until(lambda: live_processes(command), "the command to start")
        await launch.kill(first)
    finally:
        for pid in live_processes(command):  # its own process group outlives a SIGKILLed agent
            # unless its keeper, seeing the agent gone, ended it since it was listed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    second = await launch.start("openai")
    _, replayed = await restore(second, "session/load", session, project)

    assert [(u["sessionUpdate"], u.get("status")) for u in replayed] == [
        ("user_message_chunk", None),
        ("agent_message_chunk", None),
        ("tool_call", "pending"),
        ("tool_call_update", "failed"),
    ]
    assert replayed[-1]["content"] == [
        {"type": "content", "content": {"type": "text", "text": LOST}}
    ]
    assert second.log("transcript_repaired_on_load")
    assert [
        (kind, body["callId"])
        for kind, body in stored(launch.home, session)
        if kind == "tool_result"
    ] == [("tool_result", "run-1")]
    server.script(Reply(text="recovered"))
    assert (await second.prompt(session, "what happened?")).stop_reason == "end_turn"
    assert tool_results(server.requests[-1]) == {"run-1": (LOST, None)}


@pytest.mark.slow
async def test_kill_while_streaming_then_load_and_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("anthropic")
    session = await first.new_session(project)
    server.script(Reply(text=("half ", "way"), fault=Hang(4)))
    running = await first.start_prompt(session, "first")
    await wait_until(lambda: first.updates(session, running.start), "the first chunk")
    await launch.kill(first)

    second = await launch.start("anthropic")
    _, replayed = await restore(second, "session/load", session, project)

    assert replayed == [chunk("user_message_chunk", "first")]  # the cut message is lost
    server.script(Reply(text="fresh start"))
    turn = await second.prompt(session, "second")
    assert turn.stop_reason == "end_turn", turn.response
    assert user_texts(server.requests[-1]) == ["first", "second"]


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
@pytest.mark.parametrize("delete_first", [False, True])
async def test_a_restore_racing_a_delete_leaves_no_zombie(
    launch: Launcher, server: ScriptedProvider, project: Path, method: str, delete_first: bool
) -> None:
    """Both in one write: they take effect one after the other, and whichever order that is,
    the session is gone afterwards and a prompt for it is -32002, not an internal error."""
    first = await launch.start("openai")
    session = await first.new_session(project)
    server.script(Reply(text="hi"))
    assert (await first.prompt(session, "hello")).stop_reason == "end_turn"
    await launch.close(first)
    agent = await launch.start("openai")
    restore = {
        "jsonrpc": "2.0",
        "id": "restore",
        "method": method,
        "params": {"sessionId": session, "cwd": str(project), "mcpServers": []},
    }
    delete = {
        "jsonrpc": "2.0",
        "id": "delete",
        "method": "session/delete",
        "params": {"sessionId": session},
    }
    answers = [agent.proc.expect("restore", method), agent.proc.expect("delete")]
    pair = [delete, restore] if delete_first else [restore, delete]
    await agent.proc.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in pair))
    restored, deleted = [await asyncio.wait_for(a, 10) for a in answers]

    assert deleted.get("result") == {}, deleted
    if delete_first:
        assert restored["error"]["code"] == -32002
    else:
        assert_restored(restored["result"])
    prompt = await agent.prompt(session, "still there?")
    assert prompt.error["code"] == -32002
    assert (await agent.result("session/list", {}))["sessions"] == []
    assert stored(launch.home, session) == []
