"""The project's instructions and the environment reach the model in the system prompt of
both wire formats, read again at each turn."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_fsm.config_options import MODE_NOTES, MODES
from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.instructions import BASE
from tests.e2e.support import Launcher, of_kind, system_of


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_projects_instructions_reach_the_model_and_are_read_each_turn(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
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


@pytest.mark.parametrize("head", ["named pipe", "huge"])
async def test_a_head_that_is_no_ref_is_not_read_and_the_prompt_works(
    launch: Launcher, server: ScriptedProvider, project: Path, head: str
) -> None:
    """A FIFO as .git/HEAD froze the agent at the first prompt; a huge one went into every
    request's system prompt."""
    (project / ".git").mkdir()
    branch = "b" * (4 * 1024 * 1024)
    if head == "named pipe":
        os.mkfifo(project / ".git" / "HEAD")
    else:
        (project / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="ok"))

    assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    system = system_of(server.requests[-1])
    assert f"- Git: repository at {project}, its HEAD could not be read" in system
    assert branch[:100] not in system


# A target's name on disk, and as the user is told it (bytes that are not UTF-8 as `\\xNN`).
TARGETS = {
    "utf-8": ("notes.md", "notes.md"),
    "latin-1": (os.fsdecode(b"not\xe9s.md"), "not\\xe9s.md"),
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("repository", [True, False])
async def test_an_instruction_file_leading_outside_is_not_sent_and_said_once(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    tmp_path: Path,
    repository: bool,
    target: str,
) -> None:
    name, shown = TARGETS[target]
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir()
    outside.write_text("PRIVATE-NOTES-5d1e: not the project's")
    if repository:
        (project / ".git").mkdir()
        (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / "AGENTS.md").symlink_to(outside)
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="first"), Reply(text="second"))

    first = await agent.prompt(session, "hello")
    second = await agent.prompt(session, "again")

    assert all("PRIVATE-NOTES" not in request.raw.decode() for request in server.requests)
    told = [u["content"]["text"] for u in of_kind(first.updates, "agent_message_chunk")]
    where = "the repository" if repository else "the session's directories"
    assert told == [
        f"{project / 'AGENTS.md'} was not read: it leads to {outside.parent / shown}, outside "
        f"{where}, so its instructions are not followed.\n\n",
        "first",
    ]
    agent.assert_strict_json()
    assert [u["content"]["text"] for u in of_kind(second.updates, "agent_message_chunk")] == [
        "second"
    ]  # once a session, not each turn


@pytest.mark.parametrize("mode", list(MODES))
async def test_each_modes_prompt_says_what_the_mode_allows_and_stays_the_same(
    launch: Launcher, server: ScriptedProvider, tmp_path: Path, mode: str
) -> None:
    """The system prompt of a coding agent: how to explore, edit, verify, work with the user
    and answer; what the mode allows at its end; the same bytes from turn to turn."""
    project = tmp_path / "project"
    project.mkdir()
    server.fallback = Reply(text="ok")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": mode})
    await agent.prompt(session, "one")
    await agent.prompt(session, "two")
    first, second = (system_of(r) for r in server.requests)
    assert first == second
    assert first.endswith(MODE_NOTES[mode])
    assert [note for note in MODE_NOTES.values() if note in first] == [MODE_NOTES[mode]]
    for part in ("Explore before", "Verify:", "do not retry it", "Never say you changed"):
        assert part in first
    assert 1_000 < len(BASE) < 2_000  # as the README states its size
