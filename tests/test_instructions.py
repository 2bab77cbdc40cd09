"""The system prompt: the environment, and the project's instruction files (nested, missing,
oversized, CLAUDE.md where no AGENTS.md exists, links leading out of the project), and a HEAD
that is not what it should be."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from acp_fsm.instructions import (
    MAX_GIT_FILE_BYTES,
    MAX_INSTRUCTION_BYTES,
    head_state,
    project_instructions,
    system_prompt,
)


def repo(tmp_path: Path, branch: str = "main") -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    return root


def test_files_from_the_repository_root_down_to_the_working_directory(tmp_path: Path) -> None:
    root = repo(tmp_path)
    cwd = root / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("outside the repository: not read")
    (root / "AGENTS.md").write_text("root rules")
    (root / "pkg" / "CLAUDE.md").write_text("pkg rules (no AGENTS.md here)")
    (cwd / "AGENTS.md").write_text("sub rules")
    (cwd / "CLAUDE.md").write_text("not read: AGENTS.md wins")

    found = project_instructions(cwd).found

    assert found == [
        (root / "AGENTS.md", "root rules"),
        (root / "pkg" / "CLAUDE.md", "pkg rules (no AGENTS.md here)"),
        (cwd / "AGENTS.md", "sub rules"),
    ]


def test_outside_a_repository_only_the_working_directory_counts(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    (tmp_path / "AGENTS.md").write_text("a parent's: not read")
    assert project_instructions(cwd).found == []
    (cwd / "AGENTS.md").write_text("mine")
    assert project_instructions(cwd).found == [(cwd / "AGENTS.md", "mine")]


def test_an_oversized_file_is_cut_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("é" * MAX_INSTRUCTION_BYTES)  # 2 bytes a character
    [(_, text)] = project_instructions(tmp_path).found
    body, note = text.split("\n\n")
    assert body == "é" * (MAX_INSTRUCTION_BYTES // 2)
    assert note == (
        f"[AGENTS.md is {2 * MAX_INSTRUCTION_BYTES:,} bytes; only the first "
        f"{MAX_INSTRUCTION_BYTES:,} are shown.]"
    )


def test_what_is_not_a_regular_file_is_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")  # reading it would block
    (tmp_path / "CLAUDE.md").mkdir()
    assert project_instructions(tmp_path) == ([], [])


def test_the_branch_of_a_repository_or_a_worktree(tmp_path: Path) -> None:
    root = repo(tmp_path, "feature/x")
    assert head_state(root) == "on branch feature/x"
    (root / ".git" / "HEAD").write_text("0123456789abcdef0123456789abcdef01234567\n")
    assert head_state(root) == "detached HEAD"
    worktree = tmp_path / "wt"
    (worktree).mkdir()
    gitdir = tmp_path / "gitdirs" / "wt"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/fix\n")
    (worktree / ".git").write_text(f"gitdir: {gitdir}\n")
    assert head_state(worktree) == "on branch fix"


def test_the_prompt_names_the_environment_and_quotes_the_files(tmp_path: Path) -> None:
    root = repo(tmp_path, "dev")
    (root / "AGENTS.md").write_text("Run `make test` before you finish.")
    extra = tmp_path / "extra"

    prompt = system_prompt(root, (extra,)).text

    assert f"on the project at {root}." in prompt
    assert f"- Working directory: {root}" in prompt
    assert f"- Additional directories: {extra}" in prompt
    assert f"- Today's date: {datetime.date.today().isoformat()}" in prompt
    assert f"- Git: repository at {root}, on branch dev" in prompt
    assert prompt.endswith(
        f"Instructions from {root / 'AGENTS.md'}:\n\nRun `make test` before you finish."
    )
    assert system_prompt(root, (extra,)).text == prompt  # byte-stable: provider caches match


def test_a_head_that_is_not_one_short_line_of_a_regular_file_is_not_read(tmp_path: Path) -> None:
    root = repo(tmp_path)
    head = root / ".git" / "HEAD"
    for unreadable in (
        "ref: refs/heads/" + "x" * MAX_GIT_FILE_BYTES,
        "ref: refs/heads/a\nb\n",
        "\x1b[31mred\n",
    ):
        head.write_text(unreadable)
        assert head_state(root) == "its HEAD could not be read", unreadable
    head.unlink()
    os.mkfifo(head)  # reading it would block
    assert head_state(root) == "its HEAD could not be read"
    head.unlink()
    head.symlink_to("/dev/zero")  # reading it would never end
    assert head_state(root) == "its HEAD could not be read"


def test_an_instruction_file_leading_outside_the_project_is_skipped(tmp_path: Path) -> None:
    root = repo(tmp_path)
    (tmp_path / "private.md").write_text("not the project's")
    (root / "shared.md").write_text("the project's own")
    sub = root / "sub"
    sub.mkdir()
    (root / "AGENTS.md").symlink_to(tmp_path / "private.md")
    (root / "CLAUDE.md").write_text("not read: the folder's AGENTS.md is the one")
    (sub / "AGENTS.md").symlink_to(root / "shared.md")  # inside the repository: read

    found = project_instructions(sub)

    assert found.found == [(sub / "AGENTS.md", "the project's own")]
    assert found.skipped == [
        f"{root / 'AGENTS.md'} was not read: it leads to "
        f"{tmp_path / 'private.md'}, outside the repository, so its "
        "instructions are not followed."
    ]
    (root / "AGENTS.md").unlink()
    (root / "AGENTS.md").symlink_to(tmp_path / "missing.md")  # leads nowhere: as if absent
    assert project_instructions(sub).skipped == []


def test_outside_a_repository_a_link_into_the_sessions_directories_is_read(tmp_path: Path) -> None:
    cwd, extra = tmp_path / "work", tmp_path / "extra"
    cwd.mkdir()
    extra.mkdir()
    (extra / "rules.md").write_text("shared rules")
    (cwd / "AGENTS.md").symlink_to(extra / "rules.md")
    assert project_instructions(cwd).found == []  # not one of the session's directories
    assert project_instructions(cwd, (extra,)).found == [(cwd / "AGENTS.md", "shared rules")]
