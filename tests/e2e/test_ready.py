"""A session is ready to prompt soon after its answer is written: what a prompt needs is
imported in the idle time after `session/new` or `session/load` (`acp_fsm.warm`), so a prompt
typed a second later imports nothing. The debug method `_acp_fsm/modules` lists what the
process has imported. (On a quiet machine the warm-up takes well under the second; the tests
wait for its end, so that a busy machine does not fail them: `bench/sessions.py` times it.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from tests.e2e.support import Agent, Launcher
from tests.harness import wait_until

# As a person types: the time between a session's answer and its first prompt.
TYPING_S = 1.0
# How long the warm-up may take on a busy machine (a quiet one needs a fraction of a second).
WARM_UP_S = 30.0


async def modules(agent: Agent) -> set[str]:
    return set((await agent.result("_acp_fsm/modules", {}))["modules"])


async def imported_by_a_prompt(agent: Agent, session: str) -> set[str]:
    """What the process imports while a prompt typed a second after `session` is answered."""
    await asyncio.sleep(TYPING_S)
    await wait_until(lambda: agent.log("prompt_path_warmed"), "the warm-up", WARM_UP_S)
    before = await modules(agent)
    turn = await agent.prompt(session, "hello")
    assert turn.stop_reason == "end_turn"
    return await modules(agent) - before


@pytest.mark.parametrize("method", ["session/new", "session/load"])
async def test_a_prompt_a_second_after_a_session_s_answer_imports_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path, method: str
) -> None:
    """After `session/new` in a fresh process, or `session/load` of a session another process
    stored (and prompted: a load replays it) in a fresh one."""
    agent = await launch.start()
    server.script(Reply(text="hi"))
    session = await agent.new_session(project)
    if method == "session/load":
        assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
        await launch.close(agent)
        agent = await launch.start()
        params = {"sessionId": session, "cwd": str(project), "mcpServers": []}
        assert "result" in await agent.request(method, params)
        server.script(Reply(text="hi again"))
    assert await imported_by_a_prompt(agent, session) == set()
