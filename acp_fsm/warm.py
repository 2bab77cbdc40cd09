"""aiohttp, imported off the event loop (docs/architecture.md, "Startup").

aiohttp is what the model-list fetch and every model call need, and the heaviest import of
the agent: ~280 ms on a 2-core machine, a third of it building two SSL contexts from the
system's certificates (aiohttp does that at import). On the loop it held up whatever came
next: the answer to the first `session/new` (the list is fetched just after it) and the
first prompt. `start` imports it on a daemon thread, where the certificates load without
the GIL while the loop goes on; the loop's code awaits `aiohttp_imported` before its first
`import aiohttp`. The thread imports nothing of ours, so it never waits for a module the
loop is importing, nor the loop for one of ours it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading

# Name of the thread that imports aiohttp.
THREAD_NAME = "acp-fsm-import-aiohttp"

_finished = threading.Event()  # the thread's import ended, well or not
_started: asyncio.Future[None] | None = None  # on the loop that started it


def start() -> None:
    """Import aiohttp on a thread, once a process (from the event loop)."""
    global _started
    if _started is not None:
        return
    loop = asyncio.get_running_loop()
    _started = done = loop.create_future()

    def work() -> None:
        try:
            importlib.import_module("aiohttp")
        except BaseException:  # the loop's own `import` then says why it failed
            pass
        finally:
            _finished.set()
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, done)

    threading.Thread(target=work, name=THREAD_NAME, daemon=True).start()


def _resolve(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


async def aiohttp_imported() -> None:
    """Once aiohttp is imported (or its import failed: the caller's own `import` then
    raises), the import started now if it was not; a cancelled wait leaves it running."""
    start()
    if _finished.is_set():
        return
    assert _started is not None
    if _started.get_loop() is asyncio.get_running_loop():
        await asyncio.shield(_started)
    else:  # started by an earlier loop of this process (`acp-fsm login`, tests)
        from acp_fsm.blocking import run_blocking

        await run_blocking(None, _finished.wait)
