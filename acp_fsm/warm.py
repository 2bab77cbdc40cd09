"""What a prompt needs, loaded in the idle time after a session's answer (docs/architecture.md,
"Startup"): aiohttp and the prices on threads of their own, our modules on the event loop.

aiohttp is what the model-list fetch and every model call need, and the heaviest import of
the agent: ~280 ms on a 2-core machine, a third of it building two SSL contexts from the
system's certificates (aiohttp does that at import). On the loop it held up whatever came
next: the answer to the first `session/new` (the list is fetched just after it) and the
first prompt. `start` imports it on a daemon thread, where the certificates load without
the GIL while the loop goes on; the loop's code awaits `aiohttp_imported` before its first
`import aiohttp`. The thread imports nothing of ours, so it never waits for a module the
loop is importing, nor the loop for one of ours it holds.

`prompt_path_soon` imports what a prompt imports and a session's set-up does not (the turn,
the tools, the providers' wires) and builds the validators a prompt uses, on the loop, one
step a loop iteration: a message read meanwhile waits for one step (a package at most, some
15 ms), not for all of them, and a prompt typed a second after `session/new` or
`session/load` pays none of it (tests/e2e/test_ready.py). On the loop, not on a thread: a
thread importing our modules could hold a module's lock the loop then waits on, and holds
the GIL as long while it runs their code. Then what it loaded is hidden from the cyclic
collector (`bulk.freeze_long_lived`), whose full collections would otherwise walk it all.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import threading
import time
from collections.abc import Callable
from functools import partial

import structlog

from acp_fsm import bulk, pricing, schemas

log = structlog.get_logger("acp")

# Name of the thread that imports aiohttp.
THREAD_NAME = "acp-fsm-import-aiohttp"

# What a prompt imports that a session's set-up does not, an entry a step: a package's
# `__init__` imports its modules, so a package is one step (what a step imports first is
# imported by the step before it where that makes steps smaller).
PROMPT_MODULES = (
    "acp_fsm.providers.errors",
    "acp_fsm.providers.stream",
    "acp_fsm.providers.openai",
    "acp_fsm.providers.anthropic",
    "acp_fsm.providers.responses",
    "acp_fsm.tools",
    "acp_fsm.tools.lean",
    "acp_fsm.fsm.turn",
    "acp_fsm.fsm.tool_call",
    "acp_fsm.turn",
    "acp_fsm.instructions",
    "acp_fsm.client",
    "acp_fsm.questions",
    "acp_fsm.results",
    "encodings.ascii",  # the codec of a turn lease's look at /proc (`acp_fsm.leases`)
)
# The validators every connection needs at once (envelopes, the `initialize` answer, the first
# session): checked in plain Python until they are built, after the first session's answer
# (`schemas.plain_first`), which jsonschema-rs's import and their building would delay.
FIRST_SCHEMAS = (
    "jsonrpc.Request",
    "jsonrpc.Notification",
    "jsonrpc.SuccessResponse",
    "jsonrpc.ErrorResponse",
    "acp.InitializeResponse",
    "acp.NewSessionRequest",
    "acp.NewSessionResponse",
)
# The validators of a prompt's request, its updates and its answer.
PROMPT_SCHEMAS = ("acp.PromptRequest", "acp.SessionNotification", "acp.PromptResponse")

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


_warming: asyncio.Task[None] | None = None  # `prompt_path_soon`'s, once a process


def prompt_path_soon() -> None:
    """Load what a prompt needs, once a process (from the event loop, after a session's
    answer is written): aiohttp and the prices on their threads, our modules and the
    validators on the loop, a step a loop iteration; then the prices' table."""
    global _warming
    start()
    pricing.start()
    if _warming is None:
        # In a context of its own: none of the request's log fields on its lines.
        _warming = asyncio.get_running_loop().create_task(
            _prompt_path(), context=contextvars.Context()
        )


async def _prompt_path() -> None:
    started = time.perf_counter()
    steps: list[Callable[[], object]] = [
        partial(importlib.import_module, m) for m in PROMPT_MODULES
    ]
    steps += [partial(schemas.warm, FIRST_SCHEMAS), partial(schemas.warm, PROMPT_SCHEMAS)]
    try:
        for work in steps:
            work()
            await asyncio.sleep(0)  # the loop goes on between steps
        await aiohttp_imported()
        await pricing.table()
    except Exception as exc:  # the prompt's own import then says why
        log.warning("warm_up_failed", error=repr(exc))
        return
    bulk.freeze_long_lived()  # what was just loaded lives as long as the process
    log.debug("prompt_path_warmed", ms=round((time.perf_counter() - started) * 1000, 1))
