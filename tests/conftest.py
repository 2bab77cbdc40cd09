from __future__ import annotations

import shutil
import signal
from collections.abc import AsyncIterator, Generator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.harness import PROTOCOL, AgentProcess, agent_env
from tests.homes import Guard, isolate
from tests.workers import (
    ALONE,
    MARKERS,
    RUN_FOLDER,
    Turns,
    bytecode_cache,
    distributes,
    is_worker,
    run_folder,
    slow_first,
    spreads,
    workers,
)

GUARD = pytest.StashKey[Guard]()
HOMES = pytest.StashKey[Path]()
TOUCHED = pytest.StashKey[list[str]]()
TURNS = pytest.StashKey[Turns]()


def _deaf(signum: int, frame: object) -> None:
    """SIGINT for a run started with it ignored: still ignored (see `pytest_configure`)."""


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    # A folder's tests on one worker a core and one more unless the command line says how
    # many, handed out a file at a time in the order collected (tests/workers.py); before
    # pytest-xdist reads the options.
    option = config.option
    if getattr(option, "numprocesses", 0) is None and spreads(config):
        option.numprocesses = workers()
    if getattr(option, "numprocesses", None) and option.dist == "no":
        option.dist = "loadfile"
        option.loadscopereorder = False
    return (yield)


# A scenario of what ACP v2 does not have (the client's fs/* and terminal/*, modes): skipped
# on the v2 run (tests/harness.py), saying why.
V1_ONLY = "v1_only(why): a scenario of ACP v1 alone, skipped when the run speaks v2"


def pytest_configure(config: pytest.Config) -> None:
    for marker in (*MARKERS, V1_ONLY):
        config.addinivalue_line("markers", marker)
    # A run started with SIGINT ignored (a script's background job, `pytest &`) would pass
    # that on to every process it starts, and the tests that press Ctrl-C on one would see it
    # ignored. A handler of ours keeps the run itself deaf to SIGINT, and its children start
    # with the default, as from a terminal (exec resets a caught signal, not an ignored one).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, _deaf)
    # Before anything is collected: the user's acp-fsm folders as they are (by the process
    # that reports the run), then the run's own homes for every test and every process it
    # starts (tests/homes.py), a worker's inside the run's folder.
    parent = run_folder(config)
    if parent is None:
        config.stash[GUARD] = Guard()
    config.stash[HOMES] = isolate(parent)
    if not distributes(config):
        bytecode_cache(parent or config.stash[HOMES])
    if parent is not None:
        config.stash[TURNS] = Turns(parent)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if is_worker(config):
        slow_first(items)
    if PROTOCOL == 2:
        for item in items:
            marker = item.get_closest_marker("v1_only")
            if marker is not None:
                item.add_marker(pytest.mark.skip(reason=f"ACP v1 only: {marker.args[0]}"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, before starting a worker: the run's folder for it."""
    node.workerinput[RUN_FOLDER] = str(node.config.stash[HOMES])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """A test's turn (tests/workers.py) from its set-up to its tear-down."""
    turns = item.config.stash.get(TURNS, None)
    if turns is None:
        return (yield)
    with turns.turn(alone=item.get_closest_marker(ALONE) is not None):
        return (yield)


def pytest_sessionfinish(session: pytest.Session) -> None:
    guard = session.config.stash.get(GUARD, None)
    if guard is None:  # a worker: the controller checks
        return
    touched = guard.touched()
    session.config.stash[TOUCHED] = touched
    if touched:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    touched = config.stash.get(TOUCHED, [])
    if touched:
        terminalreporter.write_sep("=", "the user's acp-fsm folders changed", red=True)
        terminalreporter.write_line(
            "A test wrote outside the run's temporary homes (tests/homes.py), or something "
            "else did meanwhile (an acp-fsm started by your editor):"
        )
        for line in touched:
            terminalreporter.write_line(f"  {line}")


def pytest_unconfigure(config: pytest.Config) -> None:
    turns = config.stash.get(TURNS, None)
    if turns is not None:
        turns.close()
    homes = config.stash.get(HOMES, None)
    if homes is not None:
        shutil.rmtree(homes, ignore_errors=True)


# Where each skip reason was first seen: later skips for the same reason (the conformance
# tests without the official schema, the interop tests without the SDK) are reported there, so
# pytest's summary folds them into one line with their count instead of a line per test.
_SKIP_SITES: dict[str, tuple[str, int]] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        path, line, reason = report.longrepr
        site = _SKIP_SITES.setdefault(reason, (str(path), line))
        report.longrepr = (*site, reason)
    return report


@cache
def official_checker() -> Any:
    """The conformance checker of the official ACP schema and ours; None when the official
    schema is not found (tests/conformance then says so, and how to get it)."""
    from acp_fsm.devkit.schema_check import Checker, OfficialSchema
    from tests.official_schema import locate_schema

    path = locate_schema()
    return None if path is None else Checker(OfficialSchema.load(path))


def assert_clean(agent: AgentProcess) -> None:
    """stdout held only JSON-RPC lines, no outbound message failed its schema, and every
    message the agent wrote is valid under the official ACP schema (and ours)."""
    assert agent.bad_lines == [], f"non JSON-RPC output on stdout: {agent.bad_lines[:3]!r}"
    violations = [e for e in agent.log_events() if e["event"] == "outbound_schema_violation"]
    assert violations == [], violations
    if agent.view is not None:  # ACP v2 (tests/harness.py): its schemas, not v1's
        from acp_fsm.devkit.schema_check.v2 import refused

        failures = refused(agent.records)
        assert failures == [], f"{len(failures)} messages fail ACP v2's schemas:\n" + (
            "\n".join(failures[:10])
        )
        return
    checker = official_checker()
    if checker is not None:
        from acp_fsm.devkit.schema_check import check_records

        report = check_records(checker, agent.records)
        assert report.ok, f"{len(report.failures)} messages fail the official schema:\n" + (
            "\n".join(report.failures[:10])
        )


@pytest.fixture
async def agent() -> AsyncIterator[AgentProcess]:
    """A fresh agent process (not initialized)."""
    process = await AgentProcess.start(agent_env())
    try:
        yield process
        code = await process.close()
        assert_clean(process)
        assert code == 0, process.stderr.decode(errors="replace")[-2000:]
    finally:
        await process.kill()


@pytest.fixture
async def ready(agent: AgentProcess) -> AgentProcess:
    """An agent after a successful `initialize`."""
    await agent.initialize()
    return agent
