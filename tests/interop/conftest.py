"""Fixtures of the interop suite: the scripted provider, the project directory, ACP_FSM_HOME."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import ScriptedProvider


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    async with ScriptedProvider() as provider:
        yield provider


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The session cwd (symlinks resolved, as the agent shows paths)."""
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """ACP_FSM_HOME, shared by every agent process of a test (so a second one can load)."""
    return tmp_path / "home"
