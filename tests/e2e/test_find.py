"""glob through the real agent: read-only (no prompt inside the project, one outside it),
newest first, what .gitignore leaves out left out."""

from __future__ import annotations

import os
from pathlib import Path

from acp_fsm.devkit.provider import Call, ScriptedProvider
from tests.e2e.support import Launcher, args, for_call, statuses
from tests.e2e.test_tools import no_error, one_call, result_of


async def test_glob_finds_files_without_asking(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("dist/\n")
    for name, mtime in (("a.py", 1_000), ("src/b.py", 2_000), ("dist/c.py", 3_000)):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("x\n")
        os.utime(project / name, (mtime, mtime))
    agent = await launch.start("openai")
    session = await agent.new_session(project)

    updates = await one_call(agent, server, session, Call("g1", "glob", args(pattern="*.py")))

    assert statuses(for_call(updates, "g1")) == ["pending", "in_progress", "completed"]
    assert for_call(updates, "g1")[0]["title"] == "Find *.py in ."
    assert agent.editor.of_method("session/request_permission") == []
    assert result_of(server, "g1") == ("src/b.py\na.py", no_error("openai"))


async def test_glob_outside_the_project_asks_first(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_text("x\n")
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    await one_call(agent, server, session, Call("g1", "glob", args(pattern="*", path=str(outside))))

    assert len(agent.editor.of_method("session/request_permission")) == 1
    assert result_of(server, "g1") == (str(outside / "x.txt"), no_error("anthropic"))


async def test_search_files_answers_in_the_mode_asked_without_asking(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("TODO one\nTODO two\n")
    (project / "b.py").write_text("todo three\n")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    calls = (
        Call("s1", "search_files", args(pattern="todo", case_sensitive=False, output_mode="count")),
        Call("s2", "search_files", args(pattern="two", context=1)),
    )

    await one_call(agent, server, session, *calls)

    assert agent.editor.of_method("session/request_permission") == []
    assert result_of(server, "s1") == (
        "a.py:2\nb.py:1\n[3 matching lines in 2 files.]",
        no_error("anthropic"),
    )
    assert result_of(server, "s2") == ("a.py-1- TODO one\na.py:2: TODO two", no_error("anthropic"))


async def test_names_that_are_not_utf8_are_listed_found_and_searched_as_utf8(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A file name's bytes that are not UTF-8 (Latin-1 here) reach the model and the editor
    as `\\xNN`, on lines a strict JSON parser reads."""
    (project / os.fsdecode(b"caf\xe9.py")).write_text("TODO brew\n")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    calls = (
        Call("l1", "list_directory", args(path=".")),
        Call("g1", "glob", args(pattern="*.py")),
        Call("s1", "search_files", args(pattern="TODO")),
    )

    await one_call(agent, server, session, *calls)

    assert result_of(server, "l1")[0] == "caf\\xe9.py"
    assert result_of(server, "g1")[0] == "caf\\xe9.py"
    assert result_of(server, "s1")[0] == "caf\\xe9.py:1: TODO brew"
    agent.assert_strict_json()
