"""The user's commands and skills read from files (`acp_fsm.library`, `acp_fsm.front_matter`):
front matter, argument substitution, names, limits and what is skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_fsm import commands
from acp_fsm.front_matter import FrontMatterError, split, text_field
from acp_fsm.library import MAX_FILE_BYTES, UserCommand, scan, skills_prompt
from acp_fsm.providers.types import TextPart
from acp_fsm.schemas import acp_types as acp


def command(body: str) -> UserCommand:
    return UserCommand("c", "d", None, body, Path("c.md"))


def test_front_matter_and_body() -> None:
    assert split("---\ndescription: Hi\n---\nBody\n")[:2] == ({"description": "Hi"}, "Body\n")
    assert split("\ufeff---\n---\nBody")[:2] == ({}, "Body")
    assert split("No fence\n---\n")[:2] == ({}, "No fence\n---\n")
    with pytest.raises(FrontMatterError, match="no closing"):
        split("---\ndescription: x\n")
    with pytest.raises(FrontMatterError, match=r"not valid YAML \(line \d\)"):
        split("---\n[x\n---\n")
    with pytest.raises(FrontMatterError, match="not a set of"):
        split("---\n- a\n---\n")
    deep = "[" * 3000 + "]" * 3000  # the parser's recursion: never an error of the agent's
    assert text_field(split(f"---\ndescription: {deep}\n---\nx\n"), "description", 9) == "[[[[[[[[…"
    try:  # read or refused as unreadable, whatever the stack's depth: never another error
        split(f"---\n{deep}\n---\nx\n")
    except FrontMatterError as refused:
        assert "cannot be read" in str(refused) or "not a set of" in str(refused)


@pytest.mark.parametrize(
    ("line", "key", "expected"),
    [  # as Claude Code's own examples write them
        ("argument-hint: [message]", "argument-hint", "[message]"),
        (
            "argument-hint: [issue-number] [optional-priority]",
            "argument-hint",
            "[issue-number] [optional-priority]",
        ),
        ("description: Tag: add or remove", "description", "Tag: add or remove"),
        ("description: 2024-01-01", "description", "2024-01-01"),
    ],
)
def test_front_matter_is_read_as_the_agents_that_wrote_it_meant(
    line: str, key: str, expected: str
) -> None:
    document = split(f"---\n{line}\nother: [x\n---\nBody\n")
    assert text_field(document, key, 200) == expected
    assert document.body == "Body\n"


@pytest.mark.parametrize(
    ("body", "argument", "expected"),
    [
        ("Fix $ARGUMENTS.", "the bug", "Fix the bug."),
        ("$2 then $1, not $10", "a 'b c'", "b c then a, not $10"),
        ("Only $1 and $3", "x", "Only x and"),
        ("No place.", "extra words", "No place.\n\nARGUMENTS: extra words"),
        ("No place.", "", "No place."),
        ("$1", "'unclosed quote", "'unclosed"),
        ("Say $ARGUMENTS", "$1 literally", "Say $1 literally"),  # never expanded twice
    ],
)
def test_arguments_fill_the_body(body: str, argument: str, expected: str) -> None:
    assert command(body).expand(argument) == expected


def test_a_scan_names_what_it_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "ok.md").write_text("---\ndescription: 7\n---\nGo.\n")
    (folder / "empty.md").write_text("---\ndescription: nothing\n---\n\n")
    (folder / "latin1.md").write_bytes(b"caf\xe9\n")
    (folder / "huge.md").write_text("x" * (MAX_FILE_BYTES + 1))
    (folder / "two words.md").write_text("x\n")
    (folder / "list.md").write_text("---\ndescription: {a: b}\n---\nx\n")
    (folder / "é.md").write_text("x\n")
    os.mkfifo(folder / "fifo.md")  # never opened to wait on
    outside = tmp_path.parent / f"{tmp_path.name}-secret"
    outside.write_text("secret\n")
    (folder / "link.md").symlink_to(outside)
    (folder / "inside.md").symlink_to(folder / "ok.md")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "h.md").write_text("hidden\n")
    found = scan(tmp_path, frozenset({"compact"}))
    assert list(found.commands) == ["inside", "list", "ok"]
    assert found.commands["ok"].description == "7"
    assert found.commands["list"].description == "{a: b}"  # as written
    problems = "\n".join(found.problems)
    for name, why in [
        ("empty.md", "it has no prompt"),
        ("latin1.md", "it is not UTF-8 text"),
        ("huge.md", "it is larger than 256 KB"),
        ("two words.md", "a command's name is made of letters, digits"),
        ("é.md", "a command's name is made of letters, digits"),
        ("fifo.md", "it is not a regular file"),
        ("link.md", "it links out of the project"),
    ]:
        assert f"{folder / name} is skipped: {why}" in problems
    assert "hidden" not in problems


def test_skills_in_the_system_prompt_are_sorted_and_bounded(tmp_path: Path) -> None:
    for i in range(200):
        skill = tmp_path / ".agents" / "skills" / f"s{i:03}" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: s{i:03}\ndescription: {'d' * 300}\n---\nbody\n")
    found = scan(tmp_path)
    text = skills_prompt(found.skills)
    assert len(text) <= 8000 + 100
    lines = text.splitlines()
    assert lines[1].startswith("- s000: ") and lines[1].endswith("…")
    assert lines[-1].startswith("- … and ") and lines[-1].endswith(
        " more (the skill tool lists them)"
    )
    assert skills_prompt({}) == ""
    assert text == skills_prompt(scan(tmp_path).skills)  # byte-stable


def test_a_prompt_runs_a_command_only_from_its_first_text_block(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / ".claude" / "commands" / "go.md").write_text("Go $1.\n")
    library = scan(tmp_path)
    parts = (TextPart("/go home"), TextPart("more"))
    typed: list[acp.ContentBlock] = [
        {"type": "text", "text": "/go home"},
        {"type": "text", "text": "more"},
    ]
    assert commands.expanded(typed, parts, library) == (TextPart("Go home."), TextPart("more"))
    assert commands.expanded([{"type": "text", "text": "go home"}], parts, library) is None
    assert commands.expanded([{"type": "text", "text": "/ go"}], parts, library) is None
    assert commands.parse(typed) is None  # not a built-in
