"""glob: matching files newest first, bounded, without what .gitignore leaves out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_fsm.tools import glob_files
from tests.tools.conftest import Env, call


def touch(path: Path, mtime: float, text: str = "x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


async def test_matching_files_come_newest_first(env: Env, project: Path) -> None:
    touch(project / "old.py", 1_000)
    touch(project / "src" / "new.py", 3_000)
    touch(project / "src" / "mid.py", 2_000)
    touch(project / "notes.md", 4_000)
    outcome = await call(env, "glob", pattern="*.py")
    assert not outcome.is_error
    assert outcome.output == "src/new.py\nsrc/mid.py\nold.py"


async def test_a_glob_with_a_slash_matches_whole_paths_below_path(env: Env, project: Path) -> None:
    touch(project / "src" / "a" / "x.ts", 1_000)
    touch(project / "src" / "y.tsx", 2_000)
    touch(project / "lib" / "z.ts", 3_000)
    outcome = await call(env, "glob", pattern="src/**/*.{ts,tsx}")
    assert outcome.output == "src/y.tsx\nsrc/a/x.ts"
    outcome = await call(env, "glob", pattern="*.ts", path="lib")
    assert outcome.output == "lib/z.ts"


async def test_gitignored_files_and_folders_are_left_out(env: Env, project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".git" / "info").mkdir()
    (project / ".git" / "info" / "exclude").write_text("secret.py\n")
    (project / ".gitignore").write_text("build/\n*.gen.py\n!keep.gen.py\n")
    (project / "pkg").mkdir()
    (project / "pkg" / ".gitignore").write_text("local_*.py\n")
    for name in ("a.py", "build/b.py", "c.gen.py", "keep.gen.py", "secret.py",
                 "pkg/local_d.py", "pkg/e.py", ".git/hooks/f.py"):  # fmt: skip
        touch(project / name, 1_000)
    outcome = await call(env, "glob", pattern="*.py")
    assert sorted(outcome.output.splitlines()) == ["a.py", "keep.gen.py", "pkg/e.py"]


async def test_a_parent_gitignore_of_the_repository_applies(env: Env, project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("sub/skip.txt\n")
    touch(project / "sub" / "skip.txt", 1_000)
    touch(project / "sub" / "keep.txt", 1_000)
    outcome = await call(env, "glob", pattern="*.txt", path="sub")
    assert outcome.output == "sub/keep.txt"


async def test_many_matches_are_cut_with_a_note(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glob_files, "MAX_GLOB_RESULTS", 2)
    for number in range(5):
        touch(project / f"f{number}.txt", 1_000 + number)
    outcome = await call(env, "glob", pattern="*.txt")
    assert outcome.output.splitlines() == [
        "f4.txt",
        "f3.txt",
        "[Showing the 2 newest of 5 matching files; narrow the pattern or the path to see the "
        "others.]",
    ]


async def test_no_match_and_bad_input_say_so(env: Env, project: Path) -> None:
    touch(project / "a.py", 1_000)
    assert (await call(env, "glob", pattern="*.rs")).output == "No file below . matches *.rs."
    missing = await call(env, "glob", pattern="*", path="nowhere")
    assert missing.is_error and "Directory not found: nowhere" in missing.output
    bad = await call(env, "glob", pattern="{a,b")
    assert bad.is_error and "Invalid glob" in bad.output


async def test_a_symlinked_folder_is_not_followed(env: Env, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    touch(outside / "leak.py", 1_000)
    (project / "link").symlink_to(outside)
    touch(project / "in.py", 1_000)
    assert (await call(env, "glob", pattern="*.py")).output == "in.py"
