"""Commit, then tell: a `kill -9` at the instant the editor sees a tool call completed, a
message streamed to its end, or a prompt answered loses none of it. Each test kills the agent
the moment the client reads that message, then loads the session in a new process. And a
patch killed halfway is rolled back by the next process: its files are all old again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from tests.e2e.support import (
    Agent,
    Launcher,
    args,
    content_text,
    for_call,
    stored,
    text_events,
    tool_results,
)
from tests.harness import wait_until


def is_update(message: dict[str, Any], **fields: Any) -> bool:
    update = (message.get("params") or {}).get("update") or {}
    return message.get("method") == "session/update" and all(
        update.get(k) == v for k, v in fields.items()
    )


async def killed_when(
    launch: Launcher, agent: Agent, session: str, prompt: str, kill_on: Any
) -> None:
    """Prompt, and kill -9 the agent the instant `kill_on` matches what it wrote."""
    agent.proc.kill_on = kill_on
    await agent.start_prompt(session, prompt)
    proc = agent.proc.proc
    assert proc is not None
    await wait_until(lambda: proc.returncode is not None, "the kill")
    await launch.kill(agent)


async def reloaded(launch: Launcher, session: str, project: Path) -> list[dict[str, Any]]:
    """The updates a new process replays for `session`."""
    agent = await launch.start("openai")
    start = len(agent.messages)
    response = await agent.request(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    assert "result" in response, response
    return agent.updates(session, start)


@pytest.mark.parametrize("round_", range(3))
async def test_a_call_seen_completed_survives_a_kill(
    launch: Launcher, server: ScriptedProvider, project: Path, round_: int
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(Call("w1", "write_file", args(path="a.txt", content="x\n")),),
        ),
        Reply(text="done", fault=Hang(0)),
    )

    await killed_when(
        launch,
        agent,
        session,
        "write it",
        lambda m: is_update(m, toolCallId="w1", status="completed"),
    )

    assert (project / "a.txt").read_text() == "x\n"
    [final] = [
        u
        for u in for_call(await reloaded(launch, session, project), "w1")
        if u["sessionUpdate"] == "tool_call_update"
    ]
    assert final["status"] == "completed"
    assert [kind for kind, _ in stored(launch.home, session)].count("tool_result") == 1


@pytest.mark.parametrize("round_", range(3))
async def test_a_message_streamed_to_its_end_survives_a_kill(
    launch: Launcher, server: ScriptedProvider, project: Path, round_: int
) -> None:
    """The end of a message shows as the next thing: here its tool call's announcement."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(text=("all ", "of it"), calls=(Call("r1", "read_file", args(path="missing.txt")),))
    )

    await killed_when(
        launch,
        agent,
        session,
        "read it",
        lambda m: is_update(m, sessionUpdate="tool_call", toolCallId="r1"),
    )

    replayed = await reloaded(launch, session, project)
    assert {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "all of it"},
    } in replayed
    assert [u["sessionUpdate"] for u in for_call(replayed, "r1")] == [
        "tool_call",
        "tool_call_update",
    ]


@pytest.mark.parametrize("stop", ["end_turn", "cancelled"])
async def test_an_answered_prompt_survives_a_kill(
    launch: Launcher, server: ScriptedProvider, project: Path, stop: str
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    if stop == "end_turn":
        server.script(Reply(text=("the ", "answer")))
        await killed_when(
            launch,
            agent,
            session,
            "ask",
            lambda m: "result" in m and m["result"].get("stopReason") == stop,
        )
    else:
        server.script(Reply(text=("the ", "answer"), fault=Hang(text_events(2))))
        agent.proc.kill_on = lambda m: "result" in m and m["result"].get("stopReason") == stop
        pending = await agent.start_prompt(session, "ask")
        await wait_until(lambda: len(agent.updates(session, pending.start)) == 2, "the chunks")
        await agent.cancel(session)
        proc = agent.proc.proc
        assert proc is not None
        await wait_until(lambda: proc.returncode is not None, "the kill")
        await launch.kill(agent)

    replayed = await reloaded(launch, session, project)
    assert replayed[0] == {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "ask"},
    }
    assert (
        content_text({"content": [{"type": "content", "content": replayed[1]["content"]}]})
        == "the answer"
    )
    assert stored(launch.home, session)[-1] == ("turn_end", {"stopReason": stop})


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
async def test_a_kill_at_any_instant_loses_nothing_the_editor_saw_done(
    launch: Launcher, server: ScriptedProvider, project: Path, seed: int
) -> None:
    """Kill -9 after a random number of the agent's messages in a turn of three writes; every
    call the editor saw completed is stored completed, and an answered prompt is complete."""
    import random

    rng = random.Random(seed)
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_always")
    session = await agent.new_session(project)
    calls = tuple(
        Call(f"w{i}", "write_file", args(path=f"f{i}.txt", content=f"{i}\n")) for i in range(3)
    )
    server.script(Reply(text=("writing ", "three"), calls=calls), Reply(text=("done",)))
    seen: list[dict[str, Any]] = []
    limit = rng.randrange(1, 16)  # a full turn writes about fifteen messages

    def observe(message: dict[str, Any]) -> bool:
        seen.append(message)
        return len(seen) >= limit

    await killed_when(launch, agent, session, "write three", observe)

    entries = stored(launch.home, session)
    results = {body["callId"]: body for kind, body in entries if kind == "tool_result"}
    for message in seen:
        update = (message.get("params") or {}).get("update") or {}
        if update.get("status") == "completed":
            assert results[update["toolCallId"]]["isError"] is False, (limit, update)
        if "result" in message and "stopReason" in message["result"]:
            assert entries[-1] == ("turn_end", {"stopReason": "end_turn"})
    replayed = await reloaded(launch, session, project)  # and it loads, repaired or not
    assert replayed[0]["sessionUpdate"] == "user_message_chunk"


async def test_a_patch_killed_halfway_is_rolled_back_by_the_next_process(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    old = {"a.py": "a = 1\n", "b.py": "b = 1\n", "gone.txt": "obsolete\n"}
    for name, text in old.items():
        (project / name).write_text(text)
    # The set of disk changes waits for good once its second file is changed.
    agent = await launch.start("openai", ACP_FSM_DEBUG_HOLD_CHANGES="2")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    patch = "\n".join(
        (
            "*** Begin Patch",
            *("*** Update File: a.py", "@@", "-a = 1", "+a = 2"),
            *("*** Update File: b.py", "@@", "-b = 1", "+b = 2"),
            *("*** Add File: new/c.py", "+c = 1"),
            "*** Delete File: gone.txt",
            "*** End Patch",
        )
    )
    server.script(Reply(calls=(Call("p1", "apply_patch", args(patch=patch)),)))
    await agent.start_prompt(session, "patch them")
    await wait_until(lambda: agent.log("change_set_held"), "the patch held halfway")

    assert (project / "a.py").read_text() == "a = 2\n"
    assert (project / "b.py").read_text() == "b = 2\n"
    assert (project / "gone.txt").read_text() == "obsolete\n"
    assert [n for n in os.listdir(project / "new") if n.endswith(".new")]  # c.py, staged
    await launch.kill(agent)

    second = await launch.start("openai")
    await second.new_session(project)  # a process's first session comes after the recovery

    assert sorted(os.listdir(project)) == sorted(old)  # no temporary file, no new folder
    assert {name: (project / name).read_text() for name in old} == old
    assert os.listdir(launch.home / "changes") == []
    [rolled] = second.log("change_set_rolled_back")
    assert sorted(rolled["restored"]) == [str(project / name) for name in ("a.py", "b.py")]


async def test_a_journal_that_cannot_be_written_fails_the_patch_clearly_and_changes_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("a = 1\n")
    launch.home.mkdir(parents=True, exist_ok=True)
    (launch.home / "changes").write_text("not a folder")  # where the journals would go
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-a = 1\n+a = 2\n*** End Patch"
    server.script(Reply(calls=(Call("p1", "apply_patch", args(patch=patch)),)), Reply(text="no"))
    await agent.prompt(session, "patch it")

    assert (project / "a.py").read_text() == "a = 1\n"
    assert sorted(os.listdir(project)) == ["a.py"]
    text, _ = tool_results(server.requests[-1])["p1"]
    assert "the journal of changes cannot be written" in text, text
