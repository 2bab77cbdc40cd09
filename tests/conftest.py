from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.harness import AgentProcess, agent_env


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the whole-run conformance check last: it checks every message the other tests
    recorded."""
    items.sort(key=lambda item: item.module.__name__ == "tests.conformance.test_whole_run")


def assert_clean(agent: AgentProcess) -> None:
    """stdout held only JSON-RPC lines and no outbound message failed its schema."""
    assert agent.bad_lines == [], f"non JSON-RPC output on stdout: {agent.bad_lines[:3]!r}"
    violations = [e for e in agent.log_events() if e["event"] == "outbound_schema_violation"]
    assert violations == [], violations


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
