"""`acp_fsm.warm`: aiohttp is imported on its own thread, never on the event loop's, and a
later event loop of the same process waits for it too (`acp-fsm login` runs one, the tests
many). Run in a fresh interpreter: this one has imported aiohttp long ago."""

from __future__ import annotations

import subprocess
import sys

from tests.harness import ROOT

SCRIPT = """
import asyncio, sys, threading

importers = []


class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "aiohttp":
            importers.append(threading.current_thread().name)
        return None


sys.meta_path.insert(0, Watch())
from acp_fsm import warm


async def first():
    await warm.aiohttp_imported()
    return "aiohttp" in sys.modules


async def later():
    await warm.aiohttp_imported()  # started by the first loop, closed since
    import aiohttp
    return aiohttp.ClientTimeout is not None


print(asyncio.run(first()), asyncio.run(later()), importers, threading.current_thread().name)
"""


def test_aiohttp_is_imported_on_its_own_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["True", "True", "['acp-fsm-import-aiohttp']", "MainThread"]
