"""A session's turn lease: another process may have the session open too (two editor windows,
avante's two agents), and only one of them runs a turn of it at a time (docs/sessions.md)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable

import structlog

from acp_fsm import leases
from acp_fsm.errors import SessionBusy
from acp_fsm.session.journal import deleted
from acp_fsm.store import Claim, SessionGone, Store, StoreError

log = structlog.get_logger("session")

# A prompt that finds a load (in another process) repairing a crashed turn waits this long
# for it, checking this often, before it is refused.
REPAIR_WAIT_S = 2.0
REPAIR_POLL_S = 0.05


class TurnLease:
    """The lease of session `session_id`'s turn, while this process holds it: claimed when a
    prompt starts, renewed while its turn runs, released with the turn's last entries."""

    def __init__(self, store: Store, session_id: str, on_gone: Callable[[], None]) -> None:
        self.store = store
        self.session_id = session_id
        self._on_gone = on_gone
        self._owner: str | None = None
        self._heartbeat: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"<TurnLease {self.session_id} held={self._owner is not None}>"

    @property
    def held(self) -> bool:
        """This process holds the lease now (its writes are the only ones)."""
        return self._owner is not None

    async def claim(self) -> Claim:
        """Take the lease and keep it renewed; what the store says of the session (how far it
        goes, whether a dead holder's lease was taken over). Refused while another live
        process runs a turn of it; a load repairing a crashed turn holds it for a moment:
        that is waited out."""
        owner = leases.new_owner()
        claim = await claim_or_not_found(self.store, self.session_id, owner, self._on_gone)
        deadline = time.monotonic() + REPAIR_WAIT_S
        while (
            claim.holder is not None
            and leases.purpose(claim.holder) == leases.REPAIR
            and time.monotonic() < deadline
        ):
            await asyncio.sleep(REPAIR_POLL_S)
            claim = await claim_or_not_found(self.store, self.session_id, owner, self._on_gone)
        if claim.holder is not None:
            raise SessionBusy(
                f"session {self.session_id} is running a prompt in {holder(claim.holder)}; "
                "wait for it to finish"
            )
        self._owner = owner
        self._heartbeat = asyncio.ensure_future(self._renew(owner))
        return claim

    async def _renew(self, owner: str) -> None:
        while True:
            await asyncio.sleep(leases.HEARTBEAT_S)
            try:
                if not await self.store.renew_turn(self.session_id, owner):
                    log.warning("lease_lost", session_id=self.session_id)  # taken over
            except StoreError as exc:  # seen dead (another host, or no /proc)
                log.warning("lease_not_renewed", error=str(exc))

    def release(self) -> None:
        """Let the lease go (queued behind the session's writes); a no-op when not held."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        owner, self._owner = self._owner, None
        if owner is not None:
            release_soon(self.store, self.session_id, owner)


async def claim_or_not_found(
    store: Store, session_id: str, owner: str, on_gone: Callable[[], None]
) -> Claim:
    try:
        return await store.claim_turn(session_id, owner)
    except SessionGone:
        on_gone()
        raise deleted(session_id) from None


def release_soon(store: Store, session_id: str, owner: str) -> None:
    """Queue the release of a lease; the answer does not wait for it (the store runs it before
    anything queued later, a next claim included). One that fails (the store was locked) is
    tried again a moment later, until the store is closed: a live process's lease never
    expires on its own."""

    def retry_if_failed(done: asyncio.Future[None]) -> None:
        if done.cancelled() or done.exception() is None:
            return
        log.warning("lease_not_released", error=str(done.exception()))
        asyncio.get_running_loop().call_later(
            leases.HEARTBEAT_S, release_soon, store, session_id, owner
        )

    with contextlib.suppress(StoreError):  # closed: the process exits, and its leases too
        store.release_turn_soon(session_id, owner).add_done_callback(retry_if_failed)


def holder(owner: str) -> str:
    """Who holds a lease, in words."""
    pid = leases.owner_pid(owner)
    if pid == os.getpid():
        return "this acp-fsm process (a previous prompt of it is still finishing)"
    return f"another acp-fsm process (pid {pid}), perhaps another editor window"
