"""Confinement is more than a path: a file hard-linked into the project may be one outside it,
and an "always allow" given inside the project never lets a call outside it through."""

from __future__ import annotations

import os
from pathlib import Path

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Agent, Launcher, args, tool_results


def asked_for(agent: Agent) -> list[str]:
    return [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]


async def test_a_hard_link_into_the_project_is_not_read_without_asking(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE-CONTENT\n")
    os.link(outside / "secret.txt", project / "linked.txt")
    (project / "plain.txt").write_text("inside\n")
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("reject_once")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("plain", "read_file", args(path="plain.txt")),
                Call("linked", "read_file", args(path="linked.txt")),
                Call("grep", "search_files", args(pattern="SECRET")),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "read them")).stop_reason == "end_turn"

    assert asked_for(agent) == ["linked"]
    results = tool_results(server.requests[-1])
    assert results["plain"][0] == "inside\n"
    assert results["linked"][0].startswith("Denied by the user")
    assert "SECRET-OUTSIDE-CONTENT" not in results["grep"][0]
    assert "Skipped 1 file with other hard links" in results["grep"][0]


async def test_always_allow_inside_never_lets_a_call_outside_through(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    agent = await launch.start("anthropic")
    agent.editor.permissions.extend(["allow_always", "reject_once"])
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("in1", "write_file", args(path="a.txt", content="a")),)),
        Reply(text="written"),
        Reply(
            calls=(
                Call("in2", "write_file", args(path="b.txt", content="b")),
                Call("out", "write_file", args(path=str(outside / "c.txt"), content="c")),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "write a")).stop_reason == "end_turn"
    assert (await agent.prompt(session, "write b and c")).stop_reason == "end_turn"

    assert asked_for(agent) == ["in1", "out"]  # in2 remembered; out asked again, rejected
    assert (project / "b.txt").read_text() == "b"
    assert not (outside / "c.txt").exists()
