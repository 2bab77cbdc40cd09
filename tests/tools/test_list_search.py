"""list_directory, search_files and the glob filter."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools import TOOLS, list_directory, ripgrep, search_files
from acp_fsm.tools.globs import GlobFilter, compile_glob
from acp_fsm.tools.search_files import MAX_SEARCH_FILE_BYTES, MAX_SEARCH_MATCHES, WORKER_COMMAND
from acp_fsm.tools.search_tree import SearchRequest, answer
from tests.harness import live_processes, wait_until
from tests.timing import INTERRUPTED_S
from tests.tools.conftest import Env, assert_strict_json, call


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
    _tree(
        project,
        {
            "src/app.py": "import os\n# TODO: fix\nx = 1  # TODO later\n",
            "README.md": "nothing\nTODO: docs\n",
            ".git/config": "TODO in git\n",
            "node_modules/m/index.js": "TODO in deps\n",
            ".venv/lib.py": "TODO\n",
            "__pycache__/a.pyc": "TODO\n",
            "image.png": b"\x89PNG\x00TODO",
            "big.log": "TODO\n" + "x" * MAX_SEARCH_FILE_BYTES,
        },
    )
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
    _tree(
        project,
        {
            "a.py": "hit\n",
            "src/b.py": "hit\n",
            "src/c.ts": "hit\n",
            "src/deep/d.ts": "hit\n",
            "src/e.tsx": "hit\n",
            "lib/f.ts": "hit\n",
        },
    )
    by_name = await call(env, "search_files", pattern="hit", glob="*.py")
    assert [line.split(":")[0] for line in by_name.output.splitlines()] == ["a.py", "src/b.py"]
    by_path = await call(env, "search_files", pattern="hit", glob="src/**/*.ts")
    assert [line.split(":")[0] for line in by_path.output.splitlines()] == [
        "src/c.ts",
        "src/deep/d.ts",
    ]
    braces = await call(env, "search_files", pattern="hit", path="src", glob="*.{ts,tsx}")
    assert [line.split(":")[0] for line in braces.output.splitlines()] == [
        "src/c.ts",
        "src/e.tsx",
        "src/deep/d.ts",
    ]


async def test_search_no_match_and_caps(env: Env, project: Path) -> None:
    _tree(project, {"a.txt": "match\n" * (MAX_SEARCH_MATCHES + 50), "b.txt": "x\n"})
    none = await call(env, "search_files", pattern="absent", glob="*.txt")
    assert not none.is_error and none.output.startswith("No matches for /absent/")
    many = await call(env, "search_files", pattern="match")
    lines = many.output.splitlines()
    assert len(lines) == MAX_SEARCH_MATCHES + 1
    assert f"stopped at {MAX_SEARCH_MATCHES} matches" in lines[-1]


async def test_search_output_byte_cap(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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


def test_the_worker_answers_one_json_object(project: Path) -> None:
    """The child's contract: the request as JSON on stdin (secrets never in a command line),
    the answer as JSON on stdout; a secret is scrubbed before a long line is cut."""
    key = "sk-worker-0123456789"
    _tree(project, {"a.txt": f"hit\nmiss\n{'x' * 70}hit {key} and more\n"})
    request = SearchRequest(
        root=str(project),
        shown_root=".",
        pattern="hit",
        glob=None,
        where=".",
        max_matches=MAX_SEARCH_MATCHES,
        max_output_bytes=1024,
        max_file_bytes=1024,
        max_files=10,
        max_line_chars=80,
        secrets=(key,),
    )
    done = subprocess.run(
        WORKER_COMMAND, capture_output=True, check=True, input=request.to_json().encode()
    )
    assert json.loads(done.stdout) == {
        "output": f"a.txt:1: hit\na.txt:3: {'x' * 70}hit [redac"
    }  # cut: no piece of the key
    oracle = SearchRequest(**{**asdict(request), "pattern": "sk-worker-0"})
    done = subprocess.run(
        WORKER_COMMAND, capture_output=True, check=True, input=oracle.to_json().encode()
    )  # a key is not searchable
    assert json.loads(done.stdout) == {"output": "No matches for /sk-worker-0/ in .."}
    assert done.stderr == b""
    missing = SearchRequest(
        **{**asdict(request), "root": str(project / "nope"), "shown_root": "nope"}
    )
    assert answer(missing) == {"error": "Path not found: nope"}


# Backtracks exponentially on a run of `a`s that ends in something else: at 27 `a`s one
# line takes tens of seconds, holding the GIL all along.
CATASTROPHIC = r"(a+)+$"
EVIL_LINE = "a" * 27 + "!\n"


def _workers(project: Path) -> list[int]:
    """Live search workers of this process (their request, with the project's path, comes on
    stdin; this process runs one search at a time)."""
    return live_processes("acp_fsm.tools.search_worker", parent=os.getpid())


@pytest.fixture
def without_ripgrep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python reads every file (ripgrep would rule the catastrophic line out at once)."""
    monkeypatch.setattr(ripgrep, "binary", lambda: None)


@pytest.mark.usefixtures("without_ripgrep")
async def test_a_catastrophic_pattern_leaves_the_loop_running_and_is_cancellable(
    env: Env, project: Path
) -> None:
    _tree(project, {"evil.txt": EVIL_LINE})
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    search = asyncio.create_task(call(env, "search_files", pattern=CATASTROPHIC))
    try:
        await wait_until(lambda: _workers(project), "the search worker to start")
        before = ticks
        await asyncio.sleep(0.5)  # the worker is deep in the match now
        assert ticks - before >= 20  # the event loop kept running meanwhile
        fired = time.monotonic()
        env.token.cancel()
        with pytest.raises(Cancelled):
            await search
        assert time.monotonic() - fired < INTERRUPTED_S  # else the match runs on
        assert _workers(project) == []  # killed (and no longer running) before the answer
    finally:
        ticking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticking


@pytest.mark.usefixtures("without_ripgrep")
async def test_a_search_over_the_time_limit_is_an_error(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_files, "SEARCH_TIME_LIMIT_SECONDS", 0.5)
    _tree(project, {"evil.txt": EVIL_LINE})
    started = time.monotonic()
    outcome = await call(env, "search_files", pattern=CATASTROPHIC)
    assert time.monotonic() - started < 3
    assert outcome.is_error
    assert outcome.output.startswith("The search took longer than 0.5 s and was stopped.")
    assert "backtrack catastrophically" in outcome.output
    assert _workers(project) == []


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("a{4294967296}", "the repetition number is too large"),
        ("(" * 5000 + ")" * 5000, "it is nested too deeply"),
    ],
)
async def test_patterns_re_cannot_compile_are_invalid(env: Env, pattern: str, reason: str) -> None:
    problem = search_files.SearchFiles().validate({"pattern": pattern})
    assert problem == f"Invalid regular expression {pattern!r}: {reason}"
    outcome = await call(env, "search_files", pattern=pattern)
    assert outcome.is_error and outcome.output.endswith(reason)


def test_a_glob_nested_too_deeply_is_invalid() -> None:
    glob = "{" * 5000 + "}" * 5000
    problem = search_files.SearchFiles().validate({"pattern": "x", "glob": glob})
    assert problem == f"Invalid glob {glob!r}: it is nested too deeply"


async def test_special_files_in_the_tree_are_skipped(env: Env, project: Path) -> None:
    _tree(project, {"a.txt": "hit\n"})
    os.mkfifo(project / "b-pipe")
    outcome = await asyncio.wait_for(call(env, "search_files", pattern="hit"), 5)
    assert outcome.output == "a.txt:1: hit"
    single = await asyncio.wait_for(call(env, "search_files", pattern="hit", path="b-pipe"), 5)
    assert single.output == "No matches for /hit/ in b-pipe."


# ------------------------------------------------------------- names that are not UTF-8

# `café` in Latin-1, as Python shows such a name (surrogateescape) and as the model sees it.
LATIN1_NAME = os.fsdecode(b"caf\xe9")
SHOWN_NAME = "caf\\xe9"


async def test_names_that_are_not_utf8_are_listed_as_valid_utf8(env: Env, project: Path) -> None:
    _tree(project, {f"{LATIN1_NAME}.txt": "", f"{LATIN1_NAME}/x": ""})
    outcome = await call(env, "list_directory", path=".")
    assert outcome.output.splitlines() == [f"{SHOWN_NAME}.txt", f"{SHOWN_NAME}/"]
    assert_strict_json([outcome.output, outcome.content])


async def test_names_that_are_not_utf8_are_searched_as_valid_utf8(env: Env, project: Path) -> None:
    _tree(project, {f"{LATIN1_NAME}/{LATIN1_NAME}.txt": "hit\n"})
    outcome = await call(env, "search_files", pattern="hit")
    assert outcome.output == f"{SHOWN_NAME}/{SHOWN_NAME}.txt:1: hit"
    (project / "link").symlink_to(project / LATIN1_NAME)  # the root itself is not UTF-8
    below = await call(env, "search_files", pattern="hit", path="link")
    assert below.output == f"{SHOWN_NAME}/{SHOWN_NAME}.txt:1: hit"
    assert_strict_json([outcome.output, outcome.content, below.output])


async def test_a_title_through_a_link_to_a_latin1_name_is_valid_utf8(
    env: Env, project: Path
) -> None:
    _tree(project, {f"{LATIN1_NAME}.txt": "text\n"})
    (project / "link.txt").symlink_to(project / f"{LATIN1_NAME}.txt")
    view = TOOLS["read_file"].view({"path": "link.txt"}, env)
    assert view.title == f"Read {SHOWN_NAME}.txt"
    assert view.locations == ({"path": f"{env.cwd}/{SHOWN_NAME}.txt", "line": 1},)
    outcome = await call(env, "read_file", path="link.txt")
    assert outcome.output == "text\n"
    assert_strict_json([view.title, view.locations, outcome.locations])


# ------------------------------------------------------------------------------ globs


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
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
    ],
)
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert GlobFilter(pattern).matches(path) is expected


def test_unbalanced_brace_is_rejected() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        compile_glob("*.{a,b")


async def test_ripgrep_spares_python_a_catastrophic_pattern(env: Env, project: Path) -> None:
    """With ripgrep the line that would backtrack for ages is never matched by Python: no file
    can match, so none is read, and the answer is "no matches" rather than the time limit's
    error (without ripgrep, `test_a_search_over_the_time_limit_is_an_error`)."""
    if ripgrep.binary() is None:
        pytest.skip("no rg binary (the `ripgrep` wheel comes with the test extra)")
    _tree(project, {"evil.txt": EVIL_LINE})
    outcome = await call(env, "search_files", pattern=CATASTROPHIC)
    assert not outcome.is_error
    assert outcome.output == f"No matches for /{CATASTROPHIC}/ in .."
