"""The agent's plan: an `update_plan` call shows it as an ACP `plan` update, without asking,
and `session/load` shows it again, after the call that set it."""

from __future__ import annotations

from pathlib import Path

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Launcher, args, for_call, statuses, tool_results

PLAN = [
    {"content": "Read the code", "priority": "high", "status": "completed"},
    {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
]
LATER = [dict(PLAN[0]), dict(PLAN[1], status="completed")]


async def test_a_plan_is_shown_and_shown_again_by_load(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("p1", "update_plan", args(entries=PLAN)),)),
        Reply(calls=(Call("p2", "update_plan", args(entries=LATER)),)),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "plan it")

    assert [u["entries"] for u in turn.updates if u["sessionUpdate"] == "plan"] == [PLAN, LATER]
    assert agent.editor.of_method("session/request_permission") == []
    first = for_call(turn.updates, "p1")
    assert first[0]["kind"] == "think" and statuses(first)[-1] == "completed"
    assert tool_results(server.requests[-1])["p2"][0].startswith("Plan updated:\n[x] Read")
    await launch.close(agent)

    other = await launch.start("openai")
    await other.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    replayed = other.updates(session)
    kinds = [(u["sessionUpdate"], u.get("toolCallId"), u.get("status")) for u in replayed]
    plans = [u["entries"] for u in replayed if u["sessionUpdate"] == "plan"]
    assert plans == [PLAN, LATER]
    assert kinds.index(("tool_call_update", "p1", "completed")) < kinds.index(("plan", None, None))
