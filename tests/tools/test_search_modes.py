"""search_files' output modes, context lines, case and .gitignore (through the worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.conftest import Env, call


@pytest.fixture
def tree(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("one\nTODO first\nthree\nfour\nfive\ntodo second\n")
    (project / "src" / "b.py").write_text("nothing here\n")
    (project / "notes.md").write_text("TODO notes\n")
    return project


async def test_files_mode_lists_each_matching_file_once(env: Env, tree: Path) -> None:
    outcome = await call(env, "search_files", pattern="TODO", output_mode="files")
    assert outcome.output == "notes.md\nsrc/a.py"


async def test_count_mode_counts_per_file_and_in_all(env: Env, tree: Path) -> None:
    outcome = await call(
        env, "search_files", pattern="todo", output_mode="count", case_sensitive=False
    )
    assert outcome.output == "notes.md:1\nsrc/a.py:2\n[3 matching lines in 2 files.]"


async def test_case_is_respected_unless_asked_otherwise(env: Env, tree: Path) -> None:
    sensitive = await call(env, "search_files", pattern="todo", path="src")
    assert sensitive.output == "src/a.py:6: todo second"
    loose = await call(env, "search_files", pattern="todo", path="src", case_sensitive=False)
    assert loose.output == "src/a.py:2: TODO first\nsrc/a.py:6: todo second"


async def test_context_lines_surround_each_match_and_merge(env: Env, tree: Path) -> None:
    outcome = await call(env, "search_files", pattern="(?i)todo", path="src/a.py", context=1)
    assert outcome.output.splitlines() == [
        "src/a.py-1- one",
        "src/a.py:2: TODO first",
        "src/a.py-3- three",
        "--",
        "src/a.py-5- five",
        "src/a.py:6: todo second",
    ]
    wide = await call(env, "search_files", pattern="(?i)todo", path="src/a.py", context=3)
    assert "--" not in wide.output.splitlines()  # the two windows touch: one group


async def test_gitignored_files_are_not_searched(env: Env, tree: Path) -> None:
    (tree / ".git").mkdir()
    (tree / ".gitignore").write_text("notes.md\n")
    outcome = await call(env, "search_files", pattern="TODO", output_mode="files")
    assert outcome.output == "src/a.py"


async def test_a_bad_mode_or_context_is_refused(env: Env, tree: Path) -> None:
    mode = await call(env, "search_files", pattern="x", output_mode="lines")
    assert mode.is_error and "output_mode" in mode.output
    context = await call(env, "search_files", pattern="x", context=500)
    assert context.is_error and "context" in context.output
