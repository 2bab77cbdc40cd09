"""Blocking file-system work, off the event loop: a read of a file or a directory can take as
long as the file system likes (a hung network mount), and the loop must go on meanwhile
(cancels, other sessions, the editor's requests).

Each call gets a new daemon thread: not one of the default executor's, which `asyncio.run`
joins at shutdown (a thread stuck in the kernel would keep the agent from exiting), and
cheaper to start than that executor is to create (`session/new` reads the credentials this
way; bench/startup.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from acp_fsm.protocol.cancel import CancellationToken

T = TypeVar("T")
# Name of the threads `run_blocking` starts (a cancel may leave one behind, still blocked).
BLOCKING_THREAD_NAME = "acp-fsm-blocking-io"


async def run_blocking(token: CancellationToken | None, func: Callable[..., T], *args: Any) -> T:
    """`func(*args)` in a new daemon thread, raced against `token` (`Cancelled` at once).

    A call stuck in the kernel (a FIFO, a hung network mount) cannot be interrupted: on cancel
    its thread is abandoned, and nobody waits for its answer.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(set_outcome: Callable[[Any], None], value: Any) -> None:
        if not future.done():  # after a cancel nobody waits for the answer
            set_outcome(value)

    def work() -> None:
        try:
            outcome: tuple[Callable[[Any], None], Any] = (future.set_result, func(*args))
        except BaseException as exc:  # handed to the waiting coroutine
            outcome = (future.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the agent is exiting
            loop.call_soon_threadsafe(deliver, *outcome)

    threading.Thread(target=work, name=BLOCKING_THREAD_NAME, daemon=True).start()
    return await (token.race(future) if token is not None else future)
