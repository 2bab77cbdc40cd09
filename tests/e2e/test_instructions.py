"""The project's instructions and the environment reach the model in the system prompt of
both wire formats, read again at each turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.providers.scripted import RecordedRequest, Reply, ScriptedProvider
from tests.e2e.support import Launcher


def system_of(request: RecordedRequest) -> str:
    body: dict[str, Any] = request.body or {}
    if "system" in body:  # Anthropic: a string, or text blocks
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_projects_instructions_reach_the_model_and_are_read_each_turn(
        launch: Launcher, server: ScriptedProvider, project: Path, provider: str) -> None:
    (project / "AGENTS.md").write_text("Answer in French.")
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    server.script(Reply(text="oui"), Reply(text="ja"))

    await agent.prompt(session, "hello")
    (project / "AGENTS.md").write_text("Answer in German.")
    await agent.prompt(session, "again")

    first, second = (system_of(request) for request in server.requests)
    assert "Answer in French." in first and "Answer in German." not in first
    assert "Answer in German." in second
    assert f"- Working directory: {project}" in first
    assert "- Git: the working directory is not in a git repository" in first
