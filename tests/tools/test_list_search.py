"""list_directory, search_files and the glob filter."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_fsm.tools import list_directory, search_files
from acp_fsm.tools.globs import GlobFilter, compile_glob
from acp_fsm.tools.search_files import MAX_SEARCH_FILE_BYTES, MAX_SEARCH_MATCHES, search_tree
from protocol.cancel import Cancelled
from tests.tools.conftest import Env, call


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


# ---------------------------------------------------------------------- list_directory


async def test_list_sorted_with_directories_marked(env: Env, project: Path) -> None:
    _tree(project, {"b.txt": "", "a.py": "", "src/x.py": "", ".hidden": ""})
    outcome = await call(env, "list_directory", path=".")
    assert outcome.output.splitlines() == [".hidden", "a.py", "b.txt", "src/"]
    assert not outcome.is_error


async def test_list_cap(env: Env, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(list_directory, "MAX_LIST_ENTRIES", 5)
    _tree(project, {f"f{n:02}.txt": "" for n in range(12)})
    outcome = await call(env, "list_directory", path=".")
    lines = outcome.output.splitlines()
    assert lines[:5] == [f"f{n:02}.txt" for n in range(5)]
    assert "first 5 of 12 entries" in lines[5]


async def test_list_errors_and_empty(env: Env, project: Path) -> None:
    (project / "empty").mkdir()
    (project / "f.txt").write_text("")
    assert (await call(env, "list_directory", path="empty")).output == "(empty is empty)"
    missing = await call(env, "list_directory", path="nope")
    assert missing.is_error and "not found" in missing.output
    not_dir = await call(env, "list_directory", path="f.txt")
    assert not_dir.is_error and "read_file" in not_dir.output


# ------------------------------------------------------------------------ search_files


async def test_search_reports_relative_paths_and_lines(env: Env, project: Path) -> None:
    _tree(project, {
        "src/app.py": "import os\n# TODO: fix\nx = 1  # TODO later\n",
        "README.md": "nothing\nTODO: docs\n",
        ".git/config": "TODO in git\n",
        "node_modules/m/index.js": "TODO in deps\n",
        ".venv/lib.py": "TODO\n",
        "__pycache__/a.pyc": "TODO\n",
        "image.png": b"\x89PNG\x00TODO",
        "big.log": "TODO\n" + "x" * MAX_SEARCH_FILE_BYTES,
    })
    outcome = await call(env, "search_files", pattern=r"TODO\b")
    assert outcome.output.splitlines() == [
        "README.md:2: TODO: docs",
        "src/app.py:2: # TODO: fix",
        "src/app.py:3: x = 1  # TODO later",
        "[Skipped 1 file larger than 1024 KiB.]",
    ]


async def test_search_follows_no_links(env: Env, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside, {"secret.txt": "hit\n"})
    _tree(project, {"a.txt": "hit\n"})
    (project / "file-link.txt").symlink_to(outside / "secret.txt")
    (project / "dir-link").symlink_to(outside)
    outcome = await call(env, "search_files", pattern="hit")
    assert outcome.output == "a.txt:1: hit"


async def test_search_below_a_subdirectory(env: Env, project: Path) -> None:
    _tree(project, {"src/a.py": "hit\n", "other/b.py": "hit\n"})
    outcome = await call(env, "search_files", pattern="hit", path="src")
    assert outcome.output == "src/a.py:1: hit"


async def test_search_a_single_file(env: Env, project: Path) -> None:
    _tree(project, {"src/a.py": "one\ntwo\n"})
    outcome = await call(env, "search_files", pattern="^t", path="src/a.py")
    assert outcome.output == "src/a.py:2: two"


async def test_search_with_globs(env: Env, project: Path) -> None:
    _tree(project, {
        "a.py": "hit\n", "src/b.py": "hit\n", "src/c.ts": "hit\n", "src/deep/d.ts": "hit\n",
        "src/e.tsx": "hit\n", "lib/f.ts": "hit\n",
    })
    by_name = await call(env, "search_files", pattern="hit", glob="*.py")
    assert [line.split(":")[0] for line in by_name.output.splitlines()] == ["a.py", "src/b.py"]
    by_path = await call(env, "search_files", pattern="hit", glob="src/**/*.ts")
    assert [line.split(":")[0] for line in by_path.output.splitlines()] == [
        "src/c.ts", "src/deep/d.ts"]
    braces = await call(env, "search_files", pattern="hit", path="src", glob="*.{ts,tsx}")
    assert [line.split(":")[0] for line in braces.output.splitlines()] == [
        "src/c.ts", "src/e.tsx", "src/deep/d.ts"]


async def test_search_no_match_and_caps(env: Env, project: Path) -> None:
    _tree(project, {"a.txt": "match\n" * (MAX_SEARCH_MATCHES + 50), "b.txt": "x\n"})
    none = await call(env, "search_files", pattern="absent", glob="*.txt")
    assert not none.is_error and none.output.startswith("No matches for /absent/")
    many = await call(env, "search_files", pattern="match")
    lines = many.output.splitlines()
    assert len(lines) == MAX_SEARCH_MATCHES + 1
    assert f"stopped at {MAX_SEARCH_MATCHES} matches" in lines[-1]


async def test_search_output_byte_cap(env: Env, project: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_files, "MAX_SEARCH_OUTPUT_BYTES", 1024)
    _tree(project, {"a.txt": ("hit " + "y" * 200 + "\n") * 20})
    outcome = await call(env, "search_files", pattern="hit")
    assert "stopped at 1 KiB of results" in outcome.output
    assert len(outcome.output.splitlines()) < 10


async def test_search_invalid_arguments(env: Env) -> None:
    bad_regex = await call(env, "search_files", pattern="(unclosed")
    assert bad_regex.is_error and "Invalid regular expression" in bad_regex.output
    bad_glob = await call(env, "search_files", pattern="x", glob="*.{py")
    assert bad_glob.is_error and "Invalid glob" in bad_glob.output
    missing = await call(env, "search_files", pattern="x", path="nowhere")
    assert missing.is_error and "not found" in missing.output


async def test_search_cancelled_before_start(env: Env, project: Path) -> None:
    _tree(project, {"a.txt": "hit\n"})
    env.token.cancel()
    with pytest.raises(Cancelled):
        await call(env, "search_files", pattern="hit")


def test_search_thread_stops_when_told(project: Path) -> None:
    _tree(project, {f"d{n}/f.txt": "hit\n" for n in range(50)})
    stop = threading.Event()
    stop.set()
    report = search_tree(project, ".", re.compile("hit"), None, stop)
    assert report.lines == []


async def test_search_cancel_mid_run_raises(env: Env, project: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The token fires while the thread is walking: the call raises at once, the walk ends."""
    _tree(project, {f"d{n:03}/f.txt": "hit\n" for n in range(200)})
    started = threading.Event()
    finished = threading.Event()
    original = search_files.walk_files

    def slow_walk(root: Path) -> Iterator[tuple[Path, str]]:
        for item in original(root):
            started.set()
            threading.Event().wait(0.01)
            yield item
        finished.set()

    monkeypatch.setattr(search_files, "walk_files", slow_walk)
    asyncio.get_running_loop().call_later(0.1, env.token.cancel)
    with pytest.raises(Cancelled):
        await call(env, "search_files", pattern="hit")
    assert started.is_set() and not finished.is_set()


# ------------------------------------------------------------------------------ globs


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("*.py", "a.py", True),
    ("*.py", "a.pyc", False),
    ("src/*.py", "src/a.py", True),
    ("src/*.py", "src/sub/a.py", False),
    ("src/**/*.py", "src/a.py", True),
    ("src/**/*.py", "src/x/y/a.py", True),
    ("src/**", "src/x/y/a.py", True),
    ("**/test_*.py", "tests/unit/test_a.py", True),
    ("test_?.py", "test_a.py", True),
    ("test_?.py", "test_ab.py", False),
    ("[ab]*.c", "b1.c", True),
    ("[!ab]*.c", "b1.c", False),
    ("*.{ts,tsx}", "x.tsx", True),
    ("./src/*.ts", "src/a.ts", True),
    ("a+b(1).txt", "a+b(1).txt", True),
])
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert GlobFilter(pattern).matches(path) is expected


def test_unbalanced_brace_is_rejected() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        compile_glob("*.{a,b")
