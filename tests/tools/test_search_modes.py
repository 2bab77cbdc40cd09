"""search_files' output modes, context lines, case and .gitignore (through the worker)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.tools import ripgrep
from acp_fsm.tools.search_tree import SearchRequest, render_report, search_tree
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


# -- with ripgrep and without: the same answers ------------------------------------------------

RG = ripgrep.binary()


@pytest.fixture
def wide(project: Path) -> Path:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("ignored/\n")
    files = {
        "a.py": "import os\nTODO: one\nvalue = 'sk-secret-value-123'\n",
        "b/c.txt": "nothing\nmore nothing\n",
        "b/d.md": "Todo: mixed case\n[redacted] already\n",
        "ignored/e.py": "TODO hidden\n",
        "f.bin": "TODO\0binary",
    }
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


@pytest.mark.skipif(
    RG is None, reason="no rg binary (the `ripgrep` wheel comes with the test extra)"
)
@pytest.mark.parametrize(
    ("pattern", "extra"),
    [
        ("TODO", {}),
        ("todo", {"case_sensitive": False}),
        ("sk-secret", {}),  # only in a secret: found by neither
        ("redacted", {}),  # what the scrubbed secret reads as, and a literal one
        (r"(?<=TO)DO", {}),  # Python-only syntax: every file is read
        ("no such text", {}),
        ("o", {"output_mode": "count"}),
        ("o", {"output_mode": "files", "glob": "*.md"}),
        ("one", {"context": 1}),
    ],
)
def test_ripgrep_narrows_the_files_without_changing_the_answer(
    wide: Path, pattern: str, extra: dict[str, Any]
) -> None:
    base = SearchRequest(
        root=str(wide), shown_root=".", pattern=pattern, glob=None, where=".",
        max_matches=100, max_output_bytes=65536, max_file_bytes=1 << 20, max_files=1000,
        max_line_chars=300, secrets=("sk-secret-value-123",),
    )  # fmt: skip
    plain = replace(base, **extra)
    without = render_report(search_tree(plain), plain)
    with_rg = replace(plain, ripgrep=RG)
    assert render_report(search_tree(with_rg), with_rg) == without
    assert "hidden" not in without and "sk-secret-value" not in without


@pytest.mark.skipif(RG is None, reason="no rg binary")
def test_ripgrep_reads_only_the_files_that_may_match(wide: Path) -> None:
    files = sorted(wide.rglob("*.*"))
    found = ripgrep.candidates(str(RG), "TODO", True, files, ("sk-secret-value-123",))
    assert found is not None
    assert {path.name for path in found} == {"a.py", "e.py", "f.bin"}
    assert ripgrep.candidates(str(RG), "(?=x)", True, files, ()) is None  # Python-only syntax
    assert ripgrep.candidates(str(RG), "(unclosed", True, files, ()) is None  # rg refuses it
