"""The turn states' tests wait on the work they drive: a wait that should end at once and
does not (a cancel that does not reach the work) fails the test instead of hanging the run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.timing import INTERRUPTED_S


@pytest.fixture(autouse=True)
async def bounded() -> AsyncIterator[None]:
    """Every task of the test's loop is cancelled once `INTERRUPTED_S` have passed."""
    loop = asyncio.get_running_loop()

    def stop() -> None:
        for task in asyncio.all_tasks(loop):
            task.cancel()

    watchdog = loop.call_later(INTERRUPTED_S * 2, stop)
    yield
    watchdog.cancel()
