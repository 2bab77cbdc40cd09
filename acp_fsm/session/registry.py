"""The sessions of one connection (`Sessions`): created, restored from the store (load,
resume), listed, closed and deleted, one lifecycle step of a session at a time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import (
    checkpoints,
    child_sessions,
    client_prompt,
    credentials,
    leases,
    limits,
    redact,
    transcript,
    updates,
)
from acp_fsm.blocking import run_blocking
from acp_fsm.bulk import paused_collector
from acp_fsm.client_prompt import ENTRY, ClientPrompt
from acp_fsm.errors import BadRequest, SessionNotFound
from acp_fsm.fsm.session import SessionState
from acp_fsm.mcp.specs import server_specs
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.types import Message
from acp_fsm.session import foreground
from acp_fsm.session.core import Session
from acp_fsm.session.lease import claim_or_not_found, release_soon
from acp_fsm.session.record import check_session, new_record
from acp_fsm.session.replay import rebuild, replay_updates, settings_of
from acp_fsm.sessions_db import changes_path
from acp_fsm.store import Entry, SessionRecord, Store, StoreError
from acp_fsm.system import changes

if TYPE_CHECKING:
    import sqlite3

    from acp_fsm.early_session import FirstSession
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.holder import Server

log = structlog.get_logger("session")

# How long session/close or session/delete waits for a cancelled turn to drain.
CLOSE_GRACE_S = 2.0
# The same when the process is exiting: the editor waits on it (a cancelled turn needs
# milliseconds; a local command that ignores SIGTERM is killed after 0.2 s).
SHUTDOWN_GRACE_S = 1.0


def not_found(session_id: str) -> BadRequest | SessionNotFound:
    """Why no session `session_id` is here: it is a subagent's (`child_sessions.refusal`),
    or none of that id is open or stored."""
    return child_sessions.refusal(session_id) or SessionNotFound(limits.echo(session_id))


class Sessions:
    """The sessions of this connection, and the store behind them."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._open: dict[str, Session] = {}
        self._store: Store | None = None
        self._store_lock = asyncio.Lock()
        # Load, resume, close and delete of one session happen one at a time: two loads build
        # one Session, and a load racing a delete never leaves a live session behind.
        self._lifecycles: dict[str, tuple[asyncio.Lock, int]] = {}  # id → (lock, users)

    def __repr__(self) -> str:
        return f"<Sessions open={len(self._open)}>"

    async def store(self, connection: sqlite3.Connection | None = None) -> Store:
        """The store, opened at the first call (going on with `connection`, the startup
        path's, when given)."""
        async with self._store_lock:
            if self._store is None:
                # Before any session reads a file: the sets of file changes a killed process
                # left half made are rolled back (docs/edits.md).
                await _recover_changes()
                # `redact.scrub`: the secrets known at each write (a login adds keys)
                self._store = await Store.open(scrub=redact.scrub, conn=connection)
            return self._store

    @contextlib.asynccontextmanager
    async def _lifecycle(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's lifecycle lock; kept only while someone holds or awaits it."""
        lock, users = self._lifecycles.get(session_id, (asyncio.Lock(), 0))
        self._lifecycles[session_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._lifecycles[session_id]
            if users == 1:
                del self._lifecycles[session_id]
            else:
                self._lifecycles[session_id] = (lock, users - 1)

    def forget(self, session_id: str) -> None:
        """Drop a session that is no longer in the store (deleted by another process)."""
        self._open.pop(session_id, None)

    def get(self, session_id: str) -> Session:
        session = self._open.get(session_id)
        if session is None:
            raise not_found(session_id)
        return session

    def find(self, session_id: str) -> Session | None:
        return self._open.get(session_id)

    async def new(
        self,
        cwd: str,
        additional: list[str],
        mcp_servers: list[Any],
        provider: ProviderConfig | None,
        prompt: ClientPrompt | None = None,
    ) -> Session:
        """A new session, working with `provider` (the configuration in force, as read) and
        the editor's system `prompt`, if it sent one."""
        check_session(cwd, additional, mcp_servers)
        record = new_record(cwd, additional, mcp_servers)
        store = await self.store()
        await store.create_session(record)
        session = Session(self._server, store, record, [], partial(self.forget, record.id))
        if prompt is not None:
            await session.instruct(prompt)
        log.info("session_created", session_id=record.id, cwd=cwd)
        return await self._opened(session, provider, mcp_servers)

    async def adopt(self, first: FirstSession, answered_ms: float | None) -> Session:
        """The session the startup path created and answered (`acp_fsm.early_session`), open
        here, the store going on with the connection that created it."""
        record = first.record
        store = await self.store(first.connection)
        session = Session(self._server, store, record, [], partial(self.forget, record.id))
        session.options.told(first.result)
        log.info(
            "session_created",
            session_id=record.id,
            cwd=record.cwd,
            fast_path=True,
            answered_ms=answered_ms,
        )
        return await self._opened(session, first.config, [])

    async def fork(
        self,
        source_id: str,
        cwd: str,
        additional: list[str],
        mcp_servers: list[Any],
        provider: ProviderConfig | None,
        prompt: ClientPrompt | None = None,
    ) -> Session:
        """`session/fork`: a new session whose stored conversation is a copy of the source's
        up to its last completed turn (a turn running now is not copied), with its settings
        and the editor's system prompt (the one `prompt` re-sends, else the source's); the
        source, stored by this process or another, is unchanged."""
        check_session(cwd, additional, mcp_servers)
        store = await self.store()
        source = await store.get_session(source_id)
        if source is None:
            raise not_found(source_id)
        copied = completed(checkpoints.effective(await store.entries(source_id)))
        record = new_record(cwd, additional, mcp_servers, source.title)._replace(
            model_title=source.model_title
        )
        await store.create_session(record)
        await asyncio.gather(*(store.append_soon(record.id, e.kind, e.body) for e in copied))
        with paused_collector():
            entries = await store.entries(record.id)
            messages, last = await rebuild(store, record.id, entries)
        forget = partial(self.forget, record.id)
        session = Session(self._server, store, record, messages, forget, last, entries)
        if prompt is not None:
            await session.instruct(prompt)
        log.info("session_forked", session_id=record.id, source=source_id, entries=len(copied))
        return await self._opened(session, provider, mcp_servers)

    async def _opened(
        self, session: Session, provider: ProviderConfig | None, mcp_servers: list[Any]
    ) -> Session:
        """`session`, open here, with its MCP servers started."""
        session.options.provider = provider
        self._open[session.id] = session  # so that a shutdown meanwhile stops its servers
        try:
            await session.connect_mcp(mcp_servers)
        except BaseException:
            self._open.pop(session.id, None)
            await session.toolbox.close_mcp()
            raise
        return session

    async def restore(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: list[Any],
        replay: bool,
        prompt: ClientPrompt | None = None,
        additional: list[str] | None = None,
    ) -> Session:
        """`session/load` (replay=True) or `session/resume`: the session, re-bound if it is
        already open here (a cancel after the load still reaches its running turn), with the
        editor's system prompt `prompt` if it re-sent one (else the stored one stays), and its
        `additional` directories when the editor sent them again (ACP: in full; else those it
        was created with)."""
        check_session(cwd, additional or [], mcp_servers)
        store = await self.store()
        async with self._lifecycle(session_id):
            session = await self._restore(store, session_id, cwd, replay)
            if additional is not None:  # from its next turn: a turn keeps the roots it began with
                session.roots = (session.cwd, *(Path(d) for d in additional))
            if prompt is not None:
                await session.instruct(prompt)
            session.options.provider = (await credentials.read()).config
            if mcp_servers or session.mcp is not None:
                connected = session.mcp.specs if session.mcp is not None else []
                if connected != server_specs(mcp_servers):
                    await session.connect_mcp(mcp_servers)  # the servers this request passes
            session.send_update(foreground.snapshot(session))  # before the answer (v2)
            return session

    async def _restore(self, store: Store, session_id: str, cwd: str, replay: bool) -> Session:
        record = await store.get_session(session_id)
        if record is None:
            raise not_found(session_id)
        session = self._open.get(session_id)
        if session is None:
            with paused_collector():  # thousands of objects at once (acp_fsm.bulk)
                entries, messages, last = await self._read(store, session_id)
            # ACP gives the working directory again: the project may have moved since.
            forget = partial(self.forget, session_id)
            session = Session(
                self._server, store, record._replace(cwd=cwd), messages, forget, last, entries
            )
            self._open[session_id] = session
        else:
            entries = await store.entries(session_id)
            session.options.settings = settings_of(entries)  # another process may have chosen
            session.client_prompt = client_prompt.stored(entries)
        if replay:
            client = self._server.client
            subagents = client is not None and client.shows_subagents
            with paused_collector():
                replayed = replay_updates(session_id, entries, subagents=subagents)
            for on, update in replayed:
                session.send_update(update, on)
                if session.lifecycle.state == SessionState.IDLE:  # no turn's updates between
                    await session.keep_pace()
        return session

    async def _read(self, store: Store, session_id: str) -> tuple[list[Entry], list[Message], int]:
        """A session's entries and conversation, repaired where a crash left a tool call
        without its result: under the turn lease, so no live process's running turn is ever
        repaired and two loads never repair the same call twice. When another process holds
        the lease, nothing is repaired (its turn is still writing)."""
        entries = await store.entries(session_id)
        messages, last = await rebuild(store, session_id, entries, repair=False)
        if not transcript.needs_repair(messages):  # the usual case: no lease taken at all
            return entries, messages, last
        owner = leases.new_owner(leases.REPAIR)
        claim = await claim_or_not_found(store, session_id, owner, lambda: self.forget(session_id))
        if claim.holder is not None:  # its turn is still writing the results
            return entries, messages, last
        try:
            entries = await store.entries(session_id)
            messages, last = await rebuild(store, session_id, entries)
            if entries and last != entries[-1].seq:  # repaired: replay the repair too
                entries = await store.entries(session_id)
            return entries, messages, last
        finally:
            release_soon(store, session_id, owner)

    async def close(self, session_id: str) -> None:
        async with self._lifecycle(session_id):
            session = self.get(session_id)
            await session.close("session/close", CLOSE_GRACE_S)
            self._open.pop(session_id, None)

    async def delete(self, session_id: str) -> None:
        store = await self.store()
        async with self._lifecycle(session_id):
            session = self._open.pop(session_id, None)
            if session is not None:
                await session.close("session/delete", CLOSE_GRACE_S)
            if not await store.delete_session(session_id) and session is None:
                raise not_found(session_id)

    async def set_title(self, session_id: str, title: str) -> str:
        """`session/set_title`: the title the user chose, normalised (`titles.user_title`)
        and stored, for any stored session, open here or not; told to the editor where it is
        open. No title made later replaces it. The title as stored."""
        from acp_fsm.titles import TITLE_ENTRY, user_title

        kept = user_title(title)
        store = await self.store()
        stored = await store.set_user_title(session_id, kept)
        if stored is None:
            raise not_found(session_id)
        kept, updated_at = stored
        # An entry too: a process that has the session open learns it at its next prompt
        # (`prompting._claim` catches up with the store), and tells no title of its own.
        await store.append(session_id, TITLE_ENTRY, {"title": kept})
        session = self._open.get(session_id)
        if session is not None:
            session.title = kept
            session.naming.made = True  # a title call running now finds it taken
            session.send_update(updates.session_info(kept, updates.iso_time(updated_at)))
        log.info("title_set", session_id=session_id)
        return kept

    async def list(self, cwd: str | None, cursor: str | None) -> acp.ListSessionsResponse:
        store = await self.store()
        try:
            # A session nobody prompted has nothing to resume: editors' pickers would show
            # it as an untitled, empty line.
            records, next_cursor = await store.list_sessions(cwd, cursor, prompted=True)
        except StoreError as exc:
            raise BadRequest("cursor", exc.public) from None
        result: acp.ListSessionsResponse = {"sessions": [info(r) for r in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    def reconfigured(self, config: ProviderConfig | None) -> None:
        """The provider configuration changed (the editor's endpoint): every open session's
        model options follow it, its picker refreshed from the new endpoint's list; a model
        a session chose on another wire is not the new one's, so it takes the default."""
        for session in self._open.values():
            before = session.options.provider
            if config is None or before is None or before.provider != config.provider:
                session.options.forget_model()  # a model of another wire: the new default
            session.options.provider = config
        self.announce_options()
        if config is not None:
            from acp_fsm.model_catalog import CATALOG

            CATALOG.refresh_soon(config, self.announce_options)

    def announce_options(self) -> None:
        """Tell every open session's editor of options that changed (a new model list)."""
        for session in self._open.values():
            session.options.announce()

    def cancel_all(self, reason: str) -> None:
        """Fire the token of every running turn and cancel the queued prompts (the
        connection is closing)."""
        for session in self._open.values():
            session.cancel(reason)

    async def shutdown(self) -> None:
        """The connection closed: let every cancelled turn drain and persist (bounded by
        `SHUTDOWN_GRACE_S`, so the process exits in time), then close the store."""
        await asyncio.gather(*(s.close("shutdown", SHUTDOWN_GRACE_S) for s in self._open.values()))
        if self._store is not None:
            await self._store.close()


async def _recover_changes() -> None:
    """Roll back the sets of file changes a killed process left half made (before the
    process's first session: nothing reads the files before). The tools are not imported:
    a new session need not pay for them (they are warmed after its answer)."""
    try:
        await run_blocking(None, changes.recover, changes_path())  # it logs its work
    except OSError as exc:
        from acp_fsm.tools.common import describe_os_error

        log.warning("change_recovery_failed", error=describe_os_error(exc))


def completed(entries: list[Entry]) -> list[Entry]:
    """What a fork copies of a session's entries: those up to its last ended turn, and the
    settings chosen and the system prompts sent since (what follows that turn's end belongs to
    a turn still running, or one that never ended)."""
    ends = [i for i, entry in enumerate(entries) if entry.kind == "turn_end"]
    cut = ends[-1] + 1 if ends else 0
    return entries[:cut] + [e for e in entries[cut:] if e.kind in ("settings", ENTRY)]


def info(record: SessionRecord) -> acp.SessionInfo:
    info: acp.SessionInfo = {
        "sessionId": record.id,
        "cwd": record.cwd,
        "updatedAt": updates.iso_time(record.updated_at),
    }
    if record.title:
        info["title"] = record.title
    return info
