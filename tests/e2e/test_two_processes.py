"""One session open in two agent processes (avante starts two agents that load the same
session; two editor windows on one project do it too). The process running a turn holds the
session's lease: the other loads it without repairing what the turn is still writing, is
refused a prompt while that process lives, and catches up, or takes over after a crash."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    Agent,
    Launcher,
    args,
    history,
    stored,
    tool_results,
)
from tests.harness import wait_until

TRIES = 30  # prompts raced against a delete (before the fix, 14 of 58 answered -32603)
pytestmark = pytest.mark.slow  # two agents on one store, each test


async def load(agent: Agent, session: str, project: Path) -> dict[str, Any]:
    return await agent.request(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )


def results_of(home: Path, session: str, call_id: str) -> list[dict[str, Any]]:
    return [
        body
        for kind, body in stored(home, session)
        if kind == "tool_result" and body["callId"] == call_id
    ]


async def test_a_turn_running_in_one_process_is_left_alone_by_another(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("openai")
    first.editor.permissions.append(HOLD)
    session = await first.new_session(project)
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="a")),)),
        Reply(text="written"),
    )
    running = await first.start_prompt(session, "write a")
    asked = await first.wait_request("session/request_permission")

    second = await launch.start("openai")
    assert "result" in await load(second, session, project)
    assert results_of(launch.home, session, "w1") == []  # nothing repaired under the turn
    refused = await second.prompt(session, "me too")
    assert refused.error["code"] == -32600
    assert "another acp-fsm process" in refused.error["message"]

    await first.answer_held(asked, {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    assert (await running.result()).stop_reason == "end_turn"
    [result] = results_of(launch.home, session, "w1")
    assert result["isError"] is False

    server.script(Reply(text="now me"))
    assert (await second.prompt(session, "my turn")).stop_reason == "end_turn"
    assert tool_results(server.requests[-1]) == {"w1": ("Created a.txt (1 line).", None)}
    assert [m["content"] for m in history(server.requests[-1]) if m["role"] == "assistant"][
        -1
    ] == "written"  # the other process's whole turn, caught up


async def test_a_turn_whose_process_died_is_repaired_and_taken_over(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("openai")
    first.editor.permissions.append(HOLD)
    session = await first.new_session(project)
    server.script(Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="a")),)))
    await first.start_prompt(session, "write a")
    await first.wait_request("session/request_permission")
    await launch.kill(first)

    second = await launch.start("openai")
    assert "result" in await load(second, session, project)
    [repaired] = results_of(launch.home, session, "w1")
    assert repaired["isError"] is True
    server.script(Reply(text="taking over"))
    assert (await second.prompt(session, "go on")).stop_reason == "end_turn"
    assert len(results_of(launch.home, session, "w1")) == 1


async def test_a_session_deleted_by_another_process_is_not_found(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("openai")
    session = await first.new_session(project)
    server.script(Reply(text="hi"))
    assert (await first.prompt(session, "hello")).stop_reason == "end_turn"
    second = await launch.start("openai")
    assert await second.result("session/delete", {"sessionId": session}) == {}

    gone = await first.prompt(session, "still there?")

    assert gone.error["code"] == -32002 and "deleted" in gone.error["message"]
    again = await first.prompt(session, "and now?")  # forgotten here too
    assert again.error["code"] == -32002
    assert stored(launch.home, session) == []


async def test_two_loads_of_a_crashed_turn_repair_it_once(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """avante loads a session in two processes at once: the dead turn is repaired by one."""
    for round_ in range(4):
        first = await launch.start("openai")
        first.editor.permissions.append(HOLD)
        session = await first.new_session(project)
        call_id = f"w{round_}"
        server.script(Reply(calls=(Call(call_id, "write_file", args(path="a.txt", content="a")),)))
        await first.start_prompt(session, "write a")
        await first.wait_request("session/request_permission")
        await launch.kill(first)
        second, third = await launch.start("openai"), await launch.start("openai")

        loaded = await asyncio.gather(load(second, session, project), load(third, session, project))

        assert all("result" in answer for answer in loaded), loaded
        assert len(results_of(launch.home, session, call_id)) == 1
        for agent in (second, third):
            await launch.close(agent)


async def test_a_load_elsewhere_never_refuses_a_prompt_here(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """avante's two agents: one loads the session while the user prompts in the other. A load
    with nothing to repair takes no lease, so the prompt never sees one."""
    first = await launch.start("openai")
    session = await first.new_session(project)
    server.fallback = Reply(text="ok")
    for _ in range(5):
        second = await launch.start("openai")
        prompted, loaded = await asyncio.gather(
            first.prompt(session, "go"), load(second, session, project)
        )
        assert prompted.stop_reason == "end_turn", prompted.response
        assert "result" in loaded
        await launch.close(second)


@pytest.mark.slow
async def test_a_prompt_racing_a_delete_from_another_process_is_answered_or_not_found(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Wherever the delete lands in the turn (before its claim, between the claim and the
    prompt's entry, while the answer streams), the prompt answers or says the session is gone,
    never an internal error. Every other try deletes once the answer has begun to show (the
    rest of its stream takes 0.2 s)."""
    server.fallback = Reply(text=("hel", "lo"), delay_s=0.05)
    first, second = await launch.start("openai"), await launch.start("openai")
    answers = []
    for attempt in range(TRIES):
        session = await first.new_session(project)
        prompt = await first.start_prompt(session, "hello")
        if attempt % 2:
            await wait_until(partial(first.updates, session), "the answer to begin")
        assert "result" in await second.request("session/delete", {"sessionId": session})
        answers.append((await prompt.result()).response)

    failures = [a["error"] for a in answers if "error" in a]
    assert [f for f in failures if f["code"] != -32002 or "deleted" not in f["message"]] == []
    assert first.log("turn_work_failed") == first.log("handler_failed") == []
