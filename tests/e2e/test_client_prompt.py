"""The client's system prompt (ACP: `systemPrompt` on session setup, stable 2026-11-06):
advertised with override; `append` after the agent's instructions, `override` in place of its
guidance, the mode's note kept either way; where each wire format puts system text; stored,
so a load, a resume and a fork go on with it (or with the one they re-send); refused, naming
the block, when it cannot be applied, and nothing is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.config_options import MODE_NOTES
from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.instructions import BASE
from tests.e2e.support import Agent, Launcher, system_of

PERSONA = "You are the reviewer of Team Blue. Sign every answer with 'Blue'."
GUIDANCE = BASE.splitlines()[0].split("{cwd}")[0]  # the agent's opening line, before the path


def prompt_of(mode: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"mode": mode, "content": list(blocks) or [{"type": "text", "text": PERSONA}]}


async def new(agent: Agent, project: Path, prompt: dict[str, Any]) -> dict[str, Any]:
    return await agent.request(
        "session/new", {"cwd": str(project), "mcpServers": [], "systemPrompt": prompt}
    )


async def system_after(agent: Agent, server: ScriptedProvider, session: str) -> str:
    server.script(Reply(text="ok"))
    turn = await agent.prompt(session, "hi")
    assert turn.stop_reason == "end_turn"
    return system_of(server.requests[-1])


async def test_it_is_advertised_with_override(launch: Launcher) -> None:
    agent = await launch.start()
    [result] = [m["result"] for m in agent.messages if "agentCapabilities" in m.get("result", {})]
    assert result["agentCapabilities"]["sessionCapabilities"]["systemPrompt"] == {
        "mode": {"override": {}}
    }


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai-responses"])
async def test_append_follows_the_agents_instructions_in_each_wire_format(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    (project / "AGENTS.md").write_text("Use tabs.\n")
    api = "responses" if provider == "openai-responses" else None
    agent = await launch.start(provider.split("-")[0], ACP_FSM_OPENAI_API=api)
    response = await new(agent, project, prompt_of("append"))
    system = await system_after(agent, server, response["result"]["sessionId"])

    assert system.startswith(GUIDANCE)
    assert system.index("Use tabs.") < system.index(PERSONA) < system.index(MODE_NOTES["ask"])


async def test_override_replaces_the_guidance_and_keeps_the_rest(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "AGENTS.md").write_text("Use tabs.\n")
    agent = await launch.start("anthropic")
    response = await new(agent, project, prompt_of("override"))
    system = await system_after(agent, server, response["result"]["sessionId"])

    assert system.startswith(PERSONA)
    assert GUIDANCE not in system and "How to work:" not in system
    assert "Environment:" in system and "Use tabs." in system
    assert system.endswith(MODE_NOTES["ask"])
    assert server.requests[-1].body["tools"]  # the tools are the agent's, whatever the prompt


async def test_a_small_window_keeps_an_override(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A window too small for the agent's guidance gets its brief opening instead, but an
    override has taken the guidance's place: the brief one is not added."""
    agent = await launch.start("openai", ACP_FSM_CONTEXT_WINDOW="8192")
    response = await new(agent, project, prompt_of("override"))
    system = await system_after(agent, server, response["result"]["sessionId"])
    assert system.startswith(PERSONA)
    assert "You are acp-fsm" not in system


async def test_an_embedded_text_resource_is_applied_as_its_text(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    resource = {
        "type": "resource",
        "resource": {"uri": "file:///team/style.md", "text": "Prefer small functions."},
    }
    response = await new(
        agent, project, prompt_of("append", {"type": "text", "text": "A"}, resource)
    )
    system = await system_after(agent, server, response["result"]["sessionId"])
    assert system.endswith(
        f"A\n\nfile:///team/style.md:\n\nPrefer small functions.\n\n{MODE_NOTES['ask']}"
    )


@pytest.mark.parametrize(
    ("prompt", "named"),
    [
        (prompt_of("replace"), "systemPrompt.mode: unknown mode 'replace'"),
        ({"mode": "append", "content": []}, "systemPrompt.content: expected a non-empty"),
        (
            prompt_of(
                "append",
                {"type": "text", "text": "A"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ),
            "systemPrompt.content[1]: an image block",
        ),
        (
            prompt_of("append", {"type": "resource_link", "uri": "file:///a", "name": "a"}),
            "systemPrompt.content[0]: a resource link",
        ),
    ],
)
async def test_what_cannot_be_applied_is_refused_and_nothing_is_made(
    launch: Launcher, project: Path, prompt: dict[str, Any], named: str
) -> None:
    agent = await launch.start("openai")
    response = await new(agent, project, prompt)
    assert response["error"]["code"] == -32602
    assert named in response["error"]["message"]
    listed = await agent.result("session/list", {})
    assert listed["sessions"] == []


async def test_it_is_stored_and_a_load_resume_or_fork_goes_on_with_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    first = await launch.start("openai")
    session = (await new(first, project, prompt_of("append")))["result"]["sessionId"]
    assert PERSONA in await system_after(first, server, session)
    await launch.close(first)

    second = await launch.start("openai")
    params = {"sessionId": session, "cwd": str(project), "mcpServers": []}
    assert "result" in await second.request("session/load", params)  # not re-sent: kept
    assert PERSONA in await system_after(second, server, session)

    other = "You are Team Red's reviewer."
    resent = {**params, "systemPrompt": prompt_of("override", {"type": "text", "text": other})}
    assert "result" in await second.request("session/resume", resent)
    system = await system_after(second, server, session)
    assert system.startswith(other) and PERSONA not in system

    forked = await second.result("session/fork", params)
    assert (await system_after(second, server, forked["sessionId"])).startswith(other)
    await launch.close(second)

    third = await launch.start("openai")
    assert "result" in await third.request("session/load", params)
    assert (await system_after(third, server, session)).startswith(other)


async def test_without_it_the_agents_prompt_is_unchanged(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    system = await system_after(agent, server, session)
    assert system.startswith(GUIDANCE) and PERSONA not in system
