"""A session's writes to the store, in order: queued as they come, committed before the editor
is told of what they hold (commit, then tell), and settled before a prompt is answered."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from acp_fsm import limits
from acp_fsm.errors import NotStored, SessionNotFound
from acp_fsm.store import SessionGone, Store, StoreError

log = structlog.get_logger("session")


class Journal:
    """The write queue of session `session_id`. `synced_seq` is the store's last entry of it
    that this process's conversation reflects; `on_gone` drops the session once the store
    says another process deleted it."""

    def __init__(
        self, store: Store, session_id: str, synced_seq: int, on_gone: Callable[[], None]
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.synced_seq = synced_seq
        self._on_gone = on_gone
        # The last write queued; the store commits in order, so once it is done every
        # earlier one is too.
        self._tail: asyncio.Future[Any] | None = None

    def __repr__(self) -> str:
        return f"<Journal {self.session_id} synced={self.synced_seq}>"

    async def write(
        self, kind: str, body: dict[str, Any], wait: bool, *, synced: bool = True
    ) -> None:
        """Store an entry: committed before returning with `wait` (something the client is
        about to be told is done), else queued in order; `settle` waits for those."""
        written = self.queue(kind, body, required=wait, synced=synced)
        if wait:
            await self.commit(kind, written)

    def queue(
        self, kind: str, body: dict[str, Any], *, required: bool = False, synced: bool = True
    ) -> asyncio.Future[int] | None:
        """Queue an entry; its write's future. When the store refuses it (closed at shutdown,
        or the body cannot be stored), that is logged, and raised (`refused`) when the entry
        is `required`: nothing is told done that is not stored. A `synced` write (under the
        turn lease) moves `synced_seq` to it."""
        try:
            written = self.store.append_soon(self.session_id, kind, body)
        except StoreError as exc:
            log.error("store_write_failed", kind=kind, error=str(exc))
            if required:
                raise self.refused(kind, exc) from None
            return None
        log.debug("entry_queued", kind=kind)
        written.add_done_callback(log_failed_write)
        if synced:
            written.add_done_callback(self._synced)
        self._tail = written
        return written

    def rewrite(self, seq: int, body: dict[str, Any]) -> None:
        """Queue a new body for the stored entry `seq` (a message cut by a cancel)."""
        try:
            self._tail = self.store.rewrite_soon(self.session_id, seq, body)
        except StoreError as exc:
            log.error("store_write_failed", error=str(exc))
            return
        self._tail.add_done_callback(log_failed_write)

    def _synced(self, written: asyncio.Future[int]) -> None:
        if not written.cancelled() and written.exception() is None:
            self.synced_seq = max(self.synced_seq, written.result())

    async def commit(self, kind: str, written: asyncio.Future[int] | None) -> None:
        """Wait until a queued write is committed; a cancel does not cut the wait short (a
        write takes a millisecond, and what the client is told next must survive a crash).
        A failed commit of a completed message fails the turn (`refused`)."""
        if written is None:
            return
        self.store.hurry()
        try:
            await asyncio.shield(written)
        except StoreError as exc:  # logged where it failed (`log_failed_write`)
            raise self.refused(kind, exc) from None

    def refused(self, kind: str, exc: StoreError) -> SessionNotFound | NotStored:
        """What the editor is told of a write of `kind` the store refused: the session is not
        found when another process deleted it (as at the next prompt), else that it was not
        stored, naming the cause but not the store's file (the log has it)."""
        if isinstance(exc, SessionGone):
            self._on_gone()
            return deleted(self.session_id)
        return NotStored(f"the {kind} entry could not be stored: {exc.public}")

    async def settle(self) -> None:
        """Wait until everything queued is committed (failures are logged where they
        happen)."""
        tail = self._tail
        if tail is None or tail.done():
            return
        self.store.hurry()  # committed here when that is quicker than by the store's thread
        if not tail.done():
            await asyncio.wait([tail])

    def set_title_soon(self, title: str) -> None:
        task = asyncio.ensure_future(self.store.set_title(self.session_id, title))
        task.add_done_callback(log_failed_write)


def deleted(session_id: str) -> SessionNotFound:
    """A session that was in the store and is no more (another process deleted it)."""
    return SessionNotFound(f"{limits.echo(session_id)} (it was deleted)")


def log_failed_write(future: asyncio.Future[Any]) -> None:
    if future.cancelled() or (error := future.exception()) is None:
        return
    if isinstance(error, SessionGone):  # deleted by another process: nothing left to write to
        log.info("store_write_dropped", reason=str(error))
    else:
        log.error("store_write_failed", error=str(error))
