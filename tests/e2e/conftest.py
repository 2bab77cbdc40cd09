"""Fixtures: one scripted provider per test, and a launcher of agents pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import ScriptedProvider
from tests.e2e.support import RESPONSES, Launcher


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    """Run on the Responses API (see tests/e2e/support.py), it answers as a reasoning model."""
    async with ScriptedProvider(reasons=RESPONSES) as provider:
        yield provider


@pytest.fixture
async def launch(server: ScriptedProvider, tmp_path: Path) -> AsyncIterator[Launcher]:
    launcher = Launcher(server, tmp_path / "home")
    try:
        yield launcher
    finally:
        await launcher.close_all()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The session cwd (symlinks resolved, as the agent shows paths)."""
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()
