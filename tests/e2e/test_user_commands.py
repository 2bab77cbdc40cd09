"""The user's own commands and skills through the real agent: found in each place, the project
first on a clash, announced; `/name args` expanded for the model while the user sees what they
typed; a file changed between prompts; broken files named once; skills listed in the system
prompt, loaded through the tool and through `/name`, their files read without asking."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_fsm.commands import COMMANDS
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    Agent,
    Launcher,
    args,
    offered_tools,
    system_of,
    tool_results,
    user_texts,
)
from tests.e2e.test_sessions import restore
from tests.harness import wait_until

BUILT_IN = list(COMMANDS)


@pytest.fixture
def places(tmp_path: Path, project: Path) -> dict[str, Path]:
    """The four places commands are read from (and skills, with `skills` for `commands`)."""
    home = tmp_path / "user"
    return {
        "claude": project / ".claude",
        "agents": project / ".agents",
        "config": home / "config" / "acp-fsm",
        "home": home / ".claude",
    }


async def start(launch: Launcher, provider: str, places: dict[str, Path]) -> Agent:
    """An agent whose user folders are those of `places`."""
    home, config = str(places["home"].parent), str(places["config"].parent)
    return await launch.start(provider, HOME=home, XDG_CONFIG_HOME=config)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def announced(agent: Agent, session: str, count: int = 2) -> list[dict[str, Any]]:
    """The commands of the `count`-th `available_commands_update` of the session."""

    def lists() -> list[list[dict[str, Any]]]:
        return [
            u["availableCommands"]
            for u in agent.updates(session, metadata=True)
            if u["sessionUpdate"] == "available_commands_update"
        ]

    await wait_until(lambda: len(lists()) >= count, f"announcement #{count}")
    return lists()[count - 1]


def said(updates: list[dict[str, Any]]) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_commands_are_found_in_each_place_the_project_first(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    write(
        places["claude"] / "commands" / "hello.md",
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1.\n",
    )
    write(places["agents"] / "commands" / "hello.md", "the agents' hello (hidden)\n")
    write(places["agents"] / "commands" / "tidy.md", "# Tidy the imports\nSort them.\n")
    write(places["claude"] / "commands" / "git" / "commit.md", "Commit: $ARGUMENTS\n")
    write(places["config"] / "commands" / "mine.md", "---\ndescription: Mine\n---\nMine.\n")
    write(places["home"] / "commands" / "hello.md", "the home hello (hidden)\n")
    write(places["home"] / "commands" / "elsewhere.md", "From home.\n")
    agent = await start(launch, "anthropic", places)
    session = await agent.new_session(project)

    first = await announced(agent, session, 1)
    assert [c["name"] for c in first] == BUILT_IN  # at once, before any file is read
    commands = {c["name"]: c for c in await announced(agent, session)}
    assert list(commands) == [*BUILT_IN, "hello", "git:commit", "tidy", "mine", "elsewhere"]
    assert commands["hello"] == {
        "name": "hello",
        "description": "Greet someone",
        "input": {"hint": "<name>"},
    }
    assert commands["tidy"] == {"name": "tidy", "description": "Tidy the imports"}


async def test_a_command_is_expanded_for_the_model_and_shown_as_typed(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    write(
        places["claude"] / "commands" / "check.md",
        "Review $1 for $2 problems.\nScope: $ARGUMENTS\n",
    )
    write(places["claude"] / "commands" / "plain.md", "Explain the code.\n")
    server.fallback = Reply(text="ok")
    agent = await start(launch, "anthropic", places)
    session = await agent.new_session(project)
    await announced(agent, session)

    typed = '/check src/app.py "thread safety"'
    turn = await agent.prompt(session, typed)
    assert turn.stop_reason == "end_turn"
    expected = 'Review src/app.py for thread safety problems.\nScope: src/app.py "thread safety"'
    assert user_texts(server.requests[-1]) == [expected]
    await agent.prompt(session, "/plain the parser")
    assert user_texts(server.requests[-1])[-1] == "Explain the code.\n\nARGUMENTS: the parser"
    await agent.prompt(session, "/unknown stays a prompt")
    assert user_texts(server.requests[-1])[-1] == "/unknown stays a prompt"

    await launch.close(agent)
    other = await start(launch, "anthropic", places)
    _, replayed = await restore(other, "session/load", session, project)
    shown = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert shown == [typed, "/plain the parser", "/unknown stays a prompt"]


async def test_a_changed_file_is_announced_and_used_at_the_next_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    command = write(places["claude"] / "commands" / "go.md", "First version.\n")
    server.fallback = Reply(text="ok")
    agent = await start(launch, "anthropic", places)
    session = await agent.new_session(project)
    await announced(agent, session)
    await agent.prompt(session, "/go")
    assert user_texts(server.requests[-1]) == ["First version."]

    command.write_text("---\ndescription: Go now\n---\nSecond version.\n")
    write(places["agents"] / "commands" / "new.md", "Brand new.\n")
    turn = await agent.prompt(session, "/go")
    assert user_texts(server.requests[-1])[-1] == "Second version."
    names = {c["name"]: c["description"] for c in await announced(agent, session, 3)}
    assert list(names) == [*BUILT_IN, "go", "new"]
    assert (names["go"], names["new"]) == ("Go now", "Brand new.")
    assert turn.stop_reason == "end_turn"
    await agent.prompt(session, "/go")  # nothing changed: nothing announced
    counts = [
        u
        for u in agent.updates(session, metadata=True)
        if u["sessionUpdate"] == "available_commands_update"
    ]
    assert len(counts) == 3


async def test_a_broken_file_is_named_once_and_skipped(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    broken = write(places["claude"] / "commands" / "bad.md", "---\n[unclosed\n---\nx\n")
    write(places["claude"] / "commands" / "good.md", "Fine.\n")
    write(places["claude"] / "commands" / "compact.md", "Shadowing the built-in.\n")
    server.fallback = Reply(text="ok")
    agent = await start(launch, "anthropic", places)
    session = await agent.new_session(project)
    commands = [c["name"] for c in await announced(agent, session)]
    assert commands == [*BUILT_IN, "good"]

    first = await agent.prompt(session, "hi")
    second = await agent.prompt(session, "again")
    assert f"The command file {broken} is skipped: its front matter is not valid YAML" in said(
        first.updates
    )
    assert "/compact is built in" in said(first.updates)
    assert "skipped" not in said(second.updates)
    assert first.stop_reason == second.stop_reason == "end_turn"


SKILL = """---
name: release-notes
description: Write release notes from the git log, in the project's style.
---
Read template.md in this skill's folder, then write the notes.
"""


async def test_skills_are_listed_loaded_by_the_tool_and_their_files_read_unasked(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    folder = places["home"] / "skills" / "release-notes"
    write(folder / "SKILL.md", SKILL)
    template = write(folder / "template.md", "## Changes\n")
    write(places["claude"] / "skills" / "nameless" / "SKILL.md", "---\ndescription: x\n---\nx\n")
    write(
        places["claude"] / "skills" / "Bad_Name" / "SKILL.md",
        "---\nname: Bad_Name\ndescription: x\n---\nx\n",
    )
    server.script(
        Reply(calls=(Call("s1", "skill", args(name="release-notes")),)),
        Reply(calls=(Call("r1", "read_file", args(path=str(template))),)),
        Reply(text="notes written"),
    )
    agent = await start(launch, "openai", places)
    session = await agent.new_session(project)
    commands = {c["name"]: c for c in await announced(agent, session)}
    assert commands["release-notes"]["description"].startswith("Skill: Write release notes")
    turn = await agent.prompt(session, "write the release notes")

    assert turn.stop_reason == "end_turn"
    system = system_of(server.requests[0])
    assert "- release-notes: Write release notes from the git log" in system
    assert "skill" in offered_tools(server.requests[0])
    loaded = tool_results(server.requests[-1])["s1"][0]
    assert "Read template.md in this skill's folder" in loaded
    assert f"The skill's folder is {folder}" in loaded and "template.md" in loaded
    assert "## Changes" in tool_results(server.requests[-1])["r1"][0]
    assert agent.editor.of_method("session/request_permission") == []  # outside the project
    text = said(turn.updates)
    assert "nameless/SKILL.md is skipped: its front matter gives no name" in text
    assert "Bad_Name/SKILL.md is skipped: its name 'Bad_Name' is not made of" in text


async def test_a_skill_is_run_by_its_name_and_absent_skills_cost_no_tool(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    server.fallback = Reply(text="ok")
    agent = await start(launch, "anthropic", places)
    session = await agent.new_session(project)
    await agent.prompt(session, "hi")
    assert "skill" not in {t["name"] for t in server.requests[-1].body["tools"]}
    assert "Skills:" not in system_of(server.requests[-1])

    write(places["agents"] / "skills" / "release-notes" / "SKILL.md", SKILL)
    await agent.prompt(session, "/release-notes for 2.0")
    sent = user_texts(server.requests[-1])[-1]
    assert sent.startswith("Use the skill release-notes for this request.")
    assert "Read template.md in this skill's folder" in sent and sent.endswith("for 2.0")
    assert "skill" in {t["name"] for t in server.requests[-1].body["tools"]}


async def test_names_that_are_not_utf8_reach_the_editor_the_model_and_the_store_as_utf8(
    launch: Launcher, server: ScriptedProvider, project: Path, places: dict[str, Path]
) -> None:
    """Bytes of a file name that are not UTF-8 (Latin-1 here) are shown as `\\xNN`: a skill
    whose folder (and a file in it) is so named runs, by its name and by the tool, and the
    note about a command file so named is a line a strict JSON parser reads."""
    skills = places["agents"] / "skills"
    folder = skills / os.fsdecode(b"release-notes\xe9")
    write(folder / "SKILL.md", SKILL)
    write(folder / os.fsdecode(b"mod\xe8le.md"), "## Changes\n")
    write(places["claude"] / "commands" / os.fsdecode(b"caf\xe9.md"), "Coffee.\n")
    server.script(
        Reply(text="ok"),
        Reply(calls=(Call("s1", "skill", args(name="release-notes")),)),
        Reply(text="done"),
    )
    agent = await start(launch, "anthropic", places)
    session = await agent.new_session(project)
    await announced(agent, session)

    by_name = await agent.prompt(session, "/release-notes for 2.0")
    by_tool = await agent.prompt(session, "write the notes")

    assert by_name.stop_reason == by_tool.stop_reason == "end_turn"
    where = f"The skill's folder is {skills}/release-notes\\xe9; its other files"
    sent = user_texts(server.requests[0])[-1]
    loaded = tool_results(server.requests[-1])["s1"][0]
    assert where in sent and "mod\\xe8le.md" in sent
    assert where in loaded and "mod\\xe8le.md" in loaded
    command = places["claude"] / "commands"
    assert f"The command file {command}/caf\\xe9.md is skipped" in said(by_name.updates)
    agent.assert_strict_json()

    await launch.close(agent)
    with contextlib.closing(sqlite3.connect(launch.home / "sessions.db")) as db:
        bodies = [body for (body,) in db.execute("SELECT body FROM entries")]
    assert [orjson.loads(body) for body in bodies]  # every entry strict JSON
    other = await start(launch, "anthropic", places)
    _, replayed = await restore(other, "session/load", session, project)
    assert "mod\\\\xe8le.md" in orjson.dumps(replayed).decode()  # the skill's tool call
    other.assert_strict_json()
