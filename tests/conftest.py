from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from functools import cache
from typing import Any

import pytest

from tests.harness import AgentProcess, agent_env

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
