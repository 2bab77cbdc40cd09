"""The test suite as a contributor runs it: whatever a test forgets, the run keeps to homes of
its own and fails if the user's acp-fsm folders changed (tests/homes.py); started from a
script's background job (SIGINT ignored), its Ctrl-C tests still pass (tests/conftest.py).

Each check is a pytest run of its own, in a child process, with a home made for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fsm.devkit.schema_check import cache_path
from tests.harness import ROOT

pytestmark = pytest.mark.slow  # each test is a pytest run

RUN_S = 300.0
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
# Left out of the environment of a run as a user whose home is made for it: where acp-fsm
# keeps its folders, so that they are the ones in that home.
LEFT_OUT = ("ACP_FSM_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")

# A test that forgets its home: an agent with the harness's environment, and a session.
FORGETFUL = """
from tests.harness import AgentProcess, agent_env


async def test_a_session(tmp_path):
    agent = await AgentProcess.start(agent_env(OPENAI_API_KEY="sk-forgetful-test"))
    try:
        await agent.initialize()
        answer = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert "result" in answer, answer
        assert await agent.close() == 0
    finally:
        await agent.kill()
"""
# Tests that reach past the run's homes on purpose, by the user's own paths.
WRITES = """
from pathlib import Path


def test_writes():
    folder = Path.home() / ".local" / "share" / "acp-fsm"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
"""
READS = """
from acp_fsm.devkit.schema_check import cache_path


def test_reads():
    assert cache_path().read_text() == "{}"
"""
# Tests that say when they ran, on which worker, with which home: one that must be alone and
# some that need not.
TURNS = """
import os
import time
from pathlib import Path

import pytest


def spend(name):
    started = time.monotonic()
    time.sleep(0.3)
    with (Path(__file__).parent / "log").open("a") as log:
        worker, home = os.environ["PYTEST_XDIST_WORKER"], os.environ["ACP_FSM_HOME"]
        log.write(f"{name} {started} {time.monotonic()} {worker} {home}\\n")


@pytest.mark.alone
def test_alone():
    spend("alone")


@pytest.mark.parametrize("n", range(5))
def test_shared(n):
    spend(f"shared{n}")
"""
# The tests that press Ctrl-C on a process they started: the demo, `acp-fsm login` at a
# terminal, the scripted provider run as a program.
CTRL_C_TESTS = [
    "tests/test_demo.py::test_an_interrupted_demo_stops_its_agent_and_removes_its_files",
    "tests/test_login.py::test_ctrl_c_stores_nothing",
    "tests/providers/test_scripted.py::test_runnable_demo_serves_both_formats",
]


def run_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}


def pytest_run(
    tmp_path: Path, test: str, home: Path, *options: str
) -> subprocess.CompletedProcess[str]:
    """pytest on the file `test` holds, with this suite's conftest and settings and `options`,
    as a user whose home is `home` (and who sets no XDG folders)."""
    probe = tmp_path / "probe" / "test_probe.py"
    probe.parent.mkdir()
    probe.write_text(test)
    env = {key: value for key, value in run_env().items() if key not in LEFT_OUT}
    config = ["-p", "tests.conftest", "-c", str(ROOT / "pyproject.toml"), *options]
    return subprocess.run(
        [*PYTEST, *config, str(probe)],
        cwd=ROOT,
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=RUN_S,
        check=False,
    )


def files_below(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.mark.parametrize("workers", ["0", "2"])
def test_an_agent_a_test_starts_keeps_out_of_the_users_home(tmp_path: Path, workers: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = pytest_run(tmp_path, FORGETFUL, home, "-n", workers)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert files_below(home) == []


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_test_that_writes_to_the_users_acp_fsm_folder_fails_the_run(
    tmp_path: Path, workers: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = pytest_run(tmp_path, WRITES, home, "-n", workers)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout[-3000:]
    assert "1 passed" in done.stdout  # the test itself passed: the run failed after it
    assert "the user's acp-fsm folders changed" in done.stdout
    notes = home / ".local" / "share" / "acp-fsm" / "notes.txt"
    assert f"  added: {notes}" in done.stdout.splitlines()


def test_reading_the_cached_schema_is_no_change(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cached = home / ".cache" / cache_path().relative_to(cache_path().parents[2])
    cached.parent.mkdir(parents=True)
    cached.write_text("{}")
    done = pytest_run(tmp_path, READS, home)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_ctrl_c_reaches_the_processes_a_background_run_starts() -> None:
    """A shell runs a background job with SIGINT ignored (POSIX, without job control), and
    the processes it starts inherit that: the run hands them the default."""
    done = subprocess.run(
        ["sh", "-c", '"$@" & wait $!', "sh", *PYTEST, *CTRL_C_TESTS],
        cwd=ROOT,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=RUN_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(CTRL_C_TESTS)} passed" in done.stdout


def test_workers_keep_homes_of_their_own_and_an_alone_test_runs_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = pytest_run(tmp_path, TURNS, home, "-n", "2", "--dist", "load")  # a test at a time
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = [line.split() for line in (tmp_path / "probe" / "log").read_text().splitlines()]
    homes = {worker: home for _, _, _, worker, home in runs}
    assert len(homes) == 2 and len(set(homes.values())) == 2, runs  # two workers, two homes
    [(alone_start, alone_end)] = [
        (float(s), float(e)) for name, s, e, *_ in runs if name == "alone"
    ]
    others = [(float(s), float(e)) for name, s, e, *_ in runs if name != "alone"]
    assert len(others) == 5
    assert all(end <= alone_start or start >= alone_end for start, end in others), runs
