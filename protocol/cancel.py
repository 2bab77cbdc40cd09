"""CancellationToken: what a cancel fires (docs/cancellation.md).

One token guards every wait of one turn. `cancel()` is synchronous and idempotent: it runs the
registered callbacks at once, so a waiter blocked on a peer response or a stream read is released
in the same event-loop iteration as the `session/cancel` that fired it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class Cancelled(Exception):
    """Work stopped because its cancellation token fired (not an asyncio task cancellation)."""

    def __init__(self, reason: str = "cancelled") -> None:
        self.reason = reason
        super().__init__(reason)


class CancellationToken:
    """A one-shot cancellation signal that callbacks and coroutines can observe."""

    __slots__ = ("_callbacks", "_reason", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._reason: str | None = None
        self._callbacks: list[Callable[[], object]] = []

    def __repr__(self) -> str:
        state = f"cancelled={self._reason!r}" if self.is_cancelled else "live"
        return f"<CancellationToken {self.name or hex(id(self))} {state}>"

    @property
    def is_cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "cancelled") -> bool:
        """Fire the token; returns False when it had already fired."""
        if self._reason is not None:
            return False
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, []
        failures = []
        for callback in callbacks:
            try:
                callback()
            except Exception as exc:  # every waiter must still be released
                failures.append(exc)
        if failures:
            raise failures[0]
        return True

    def raise_if_cancelled(self) -> None:
        if self._reason is not None:
            raise Cancelled(self._reason)

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run `callback` when the token fires (now, if it already has); what it returns is
        ignored. Returns a remover."""
        if self._reason is not None:
            callback()
            return _noop
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> str:
        """Wait until the token fires; returns the reason."""
        if self._reason is None:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def release() -> None:
                if not future.done():
                    future.set_result(None)

            remove = self.on_cancel(release)
            try:
                await future
            finally:
                remove()
        assert self._reason is not None
        return self._reason

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable` unless the token fires first, in which case it is cancelled and
        `Cancelled` is raised. Cancelling the caller still raises `asyncio.CancelledError`."""
        if self._reason is not None:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            elif asyncio.isfuture(awaitable):
                awaitable.cancel()
            raise Cancelled(self._reason)
        future = asyncio.ensure_future(awaitable)
        remove = self.on_cancel(future.cancel)
        try:
            return await future
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self._reason is not None and not (task and task.cancelling()):
                raise Cancelled(self._reason) from None
            raise
        finally:
            remove()


def _noop() -> None:
    return None
