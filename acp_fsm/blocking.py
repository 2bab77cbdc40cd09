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
from typing import Any, Generic, TypeVar

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


class Shared(Generic[T]):
    """Calls of one blocking function by `run_blocking`, shared by whoever asks at once: each
    caller gets the outcome of a call that started after it asked (never an older one, so a
    file is read as it is now), and those who ask while a call runs share the next one. A
    hundred sessions set up at once cost one or two reads of the same file, not a hundred
    threads."""

    def __init__(self, func: Callable[..., T]) -> None:
        self._func = func
        self._running: dict[tuple[Any, ...], asyncio.Future[T]] = {}
        self._next: dict[tuple[Any, ...], asyncio.Future[T]] = {}

    def __repr__(self) -> str:
        return f"<Shared {self._func.__qualname__} running={len(self._running)}>"

    async def __call__(self, token: CancellationToken | None, *args: Any) -> T:
        """`func(*args)`, raced against `token` (a cancel leaves the shared call running)."""
        loop = asyncio.get_running_loop()
        key = (loop, *args)
        future = self._next.get(key)
        if future is None:  # the first to ask since the running call (if any) started
            future = self._next[key] = loop.create_future()
            future.add_done_callback(_retrieved)  # every caller may have been cancelled
            if key not in self._running:
                loop.call_soon(self._begin, key)  # those asking in this pass share it too
        shielded = asyncio.shield(future)
        return await (token.race(shielded) if token is not None else shielded)

    def _begin(self, key: tuple[Any, ...]) -> None:
        future = self._running[key] = self._next.pop(key)
        call = asyncio.ensure_future(run_blocking(None, self._func, *key[1:]))
        call.add_done_callback(lambda done: self._ended(key, future, done))

    def _ended(
        self, key: tuple[Any, ...], future: asyncio.Future[T], call: asyncio.Future[T]
    ) -> None:
        del self._running[key]
        if not future.done():
            if call.cancelled():
                future.cancel()
            elif (error := call.exception()) is not None:
                future.set_exception(error)
            else:
                future.set_result(call.result())
        if key in self._next:  # those who asked while it ran
            self._begin(key)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # marks it retrieved: the callers that wait still get it
