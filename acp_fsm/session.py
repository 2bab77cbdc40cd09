"""Sessions: their conversation, their token, their turn, and their persistence.

Token lifecycle (docs/cancellation.md): a session gets a fresh CancellationToken when it is
created, loaded or resumed; a turn takes it when its prompt arrives, before any await;
`session/cancel` fires it (only while a turn runs: a cancel while idle is a no-op); when the
turn ends, whatever the reason, a fresh token replaces it, so a cancel never reaches a later
turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from acp_fsm import (
    credentials,
    leases,
    limits,
    redact,
    settings,
    transcript,
    updates,
)
from acp_fsm.bulk import paused_collector
from acp_fsm.conversation import Conversation
from acp_fsm.prompt import title_of, to_parts
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    ResourceNotFound,
    RpcError,
)
from acp_fsm.providers.endpoint import ProviderConfig
from acp_fsm.providers.types import (
    AssistantMessage,
    Message,
    ToolResultPart,
    ToolResultsMessage,
    UserMessage,
    UserPart,
)
from acp_fsm.settings import Settings
from acp_fsm.store import Claim, Entry, SessionGone, SessionRecord, Store, StoreError

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.mcp.servers import McpServers
    from acp_fsm.protocol.connection import Connection
    from acp_fsm.tools.base import Tool
    from acp_fsm.turn import Turn

    # For the checker only: the session/new path does not import the client module.
    class Server(ClientChannel, Protocol):
        """What sessions need of the server that holds them (`server.AcpServer` is one): the
        editor their turns call, the connection their updates go out on, and the other sessions
        (a lease is checked against them)."""

        @property
        def conn(self) -> Connection:
            """The connection to the editor."""

        @property
        def sessions(self) -> Sessions:
            """The sessions of this connection."""


log = structlog.get_logger("session")

# How long session/close or session/delete waits for a cancelled turn to drain.
CLOSE_GRACE_S = 2.0
# The same when the process is exiting: the editor waits on it (a cancelled turn needs
# milliseconds; a local command that ignores SIGTERM is killed after 0.2 s).
SHUTDOWN_GRACE_S = 1.0
# A prompt that finds a load (in another process) repairing a crashed turn waits this long
# for it, checking this often, before it is refused.
REPAIR_WAIT_S = 2.0
REPAIR_POLL_S = 0.05


class Session:
    """One conversation, open in this process."""

    def __init__(self, server: Server, store: Store, record: SessionRecord,
                 messages: list[Message], synced_seq: int = 0,
                 chosen: Settings | None = None) -> None:
        self.server = server
        self.store = store
        self.id = record.id
        self.cwd = Path(record.cwd)
        self.roots = (self.cwd, *(Path(d) for d in record.additional_directories))
        self.title = record.title
        self.conversation = Conversation(messages)
        self.token = CancellationToken(f"session {record.id}")
        self.turn: Turn | None = None
        self.always: dict[str, bool] = {}  # tool name → remembered "always" answer
        self.mcp: McpServers | None = None  # the editor's MCP servers, when it passed any
        self._notices: list[str] = []  # for the user, with the next model call's answer
        self._told: set[str] = set()  # notices of `tell_once` given so far
        self.settings = chosen or Settings()  # model, mode and thought level (acp_fsm.settings)
        # The provider configuration as last read (session/new, load, resume, each prompt);
        # None when it is not usable.
        self.provider: ProviderConfig | None = None
        # Tokens the provider counted beyond the estimate of the last request (see
        # `acp_fsm.compaction.estimate`), added to the next estimate.
        self.context_drift = 0
        # The provider's context window, once it refused a request as longer than it.
        self.context_window: int | None = None
        self.window_guessed = False  # context_window is only a bound an empty stream gave
        self._options_told: list[dict[str, Any]] | None = None  # configOptions last sent
        # This turn's last stored assistant message: (its pending or done write, its body).
        self._last_assistant: tuple[asyncio.Future[int], dict[str, Any]] | None = None
        # The last write queued for this session; the store commits in order, so once it is
        # done every earlier one is too.
        self._tail: asyncio.Future[Any] | None = None
        # The store's last entry of this session that `messages` reflects: another process
        # with the session open may have written more since (see `_claim`).
        self.synced_seq = synced_seq
        self._owner: str | None = None  # of the turn lease, while this process holds it
        self._heartbeat: asyncio.Future[None] | None = None
        self._text_senders: dict[str, Callable[[str], object]] = {}  # see `text_sender`

    def __repr__(self) -> str:
        turn = self.turn.state if self.turn is not None else "idle"
        return f"<Session {self.id} {turn} messages={len(self.messages)} cwd={self.cwd}>"

    # ------------------------------------------------------------------- turns

    def start_turn(self, prompt: list[dict[str, Any]]) -> Coroutine[Any, Any, dict[str, Any]]:
        """Synchronously refuse a second prompt, check and convert this one, and take the
        token (a cancel read right after the prompt reaches this turn); then the coroutine that
        runs the turn and gives the prompt's answer."""
        if self.turn is not None:
            raise InvalidRequest(
                f"Invalid Request: session {self.id} is already running a prompt; wait for its "
                "response or send session/cancel")
        limits.check_nesting("prompt", prompt)  # refused now, never answered unstored
        parts = to_parts(prompt)
        body = {"prompt": prompt, "parts": [transcript.part_to_json(p) for p in parts]}
        limits.check_stored("prompt", body)
        # Imported at the first prompt: the turn brings the tools and the providers, which
        # `initialize` and `session/new` do not need (startup budget, see bench/startup.py).
        from acp_fsm import commands
        from acp_fsm.turn import Turn

        self._last_assistant = None  # only this turn's own message may be marked cancelled
        if self.mcp is not None:
            self.mcp.retry()  # a server that failed or was lost: its next use tries again
        self.turn = Turn(self, self.token, commands.parse(prompt))
        return self._run_turn(self.turn, body, parts)

    async def _run_turn(self, turn: Turn, body: dict[str, Any],
                        parts: tuple[UserPart, ...]) -> dict[str, Any]:
        try:
            turn.provider = found = await credentials.read()
            self.provider = found.config
            if found.needs_login:  # refused before anything of the prompt is stored
                raise found.refusal(self.server.client)
            await self._claim()
            try:
                if turn.command is not None:  # shown again by a load, never sent to a model
                    await self._write("command", {"prompt": body["prompt"]}, wait=True)
                    return await self._finish(turn)
                return await self._converse(turn, body, parts)
            finally:
                self._release()
        finally:
            self.turn = None
            self.token = CancellationToken(f"session {self.id}")  # never reused by a later turn
            if not turn.done.done():
                turn.done.set_result(None)

    async def _converse(self, turn: Turn, body: dict[str, Any],
                        parts: tuple[UserPart, ...]) -> dict[str, Any]:
        await self._write("user", body, wait=True)  # not stored: not in the conversation
        self.conversation.append(UserMessage(parts))
        if self.title is None and (title := title_of(
                body["prompt"], clean=redact.configured().scrub_text)):
            self.title = title
            self._set_title_soon(title)
            self.send_update(updates.session_info(title, _iso(time.time())))
        return await self._finish(turn)

    async def _finish(self, turn: Turn) -> dict[str, Any]:
        """Run the turn; its answer once all it wrote is stored."""
        try:
            stop_reason = await turn.run()
        finally:
            # The lease goes with the turn's last entries (queued behind them, so in the same
            # commit or after it). Commit, then tell: the answer goes out once all the turn
            # wrote is durable.
            self._release()
            await self.settle()
        # _meta (ACP extensibility): how the turn machine got there, for tools and demos.
        return {"stopReason": stop_reason,
                "_meta": {"acpFsm": {"statePath": turn.path, "modelCalls": turn.requests}}}

    async def _claim(self) -> None:
        """Take the session's turn lease (another process may have the session open too).
        Refuse while another live process runs a turn of it; catch up with what another
        process wrote since this one last looked; repair what a dead holder left. A load
        repairing a crashed turn holds the lease for a moment: that is waited out."""
        owner = leases.new_owner()
        claim = await _claim_or_not_found(self.server.sessions, self.store, self.id, owner)
        deadline = time.monotonic() + REPAIR_WAIT_S
        while (claim.holder is not None and leases.purpose(claim.holder) == leases.REPAIR
               and time.monotonic() < deadline):
            await asyncio.sleep(REPAIR_POLL_S)
            claim = await _claim_or_not_found(self.server.sessions, self.store, self.id, owner)
        if claim.holder is not None:
            raise InvalidRequest(f"Invalid Request: session {self.id} is running a prompt in "
                                 f"{_holder(claim.holder)}; wait for it to finish")
        self._owner = owner
        try:
            if claim.last_seq != self.synced_seq or claim.taken_over:
                entries = await self.store.entries(self.id)
                messages, self.synced_seq = await _rebuild(self.store, self.id, entries)
                self.conversation.replace(messages)
                self._adopt(_settings_of(entries))
                log.info("session_caught_up", session_id=self.id, taken_over=claim.taken_over)
        except BaseException:
            self._release()
            raise
        self._heartbeat = asyncio.ensure_future(self._renew(owner))

    async def _renew(self, owner: str) -> None:
        while True:
            await asyncio.sleep(leases.HEARTBEAT_S)
            try:
                if not await self.store.renew_turn(self.id, owner):
                    log.warning("lease_lost", session_id=self.id)  # taken over: we were
            except StoreError as exc:  # seen dead (another host, or no /proc)
                log.warning("lease_not_renewed", error=str(exc))

    def _release(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None
        owner, self._owner = self._owner, None
        if owner is not None:
            _release(self.store, self.id, owner)

    def cancel(self, reason: str = "session/cancel") -> bool:
        """Fire the running turn's token; False (and nothing fired) when idle."""
        if self.turn is None:
            return False
        self.token.cancel(reason)
        return True

    # ------------------------------------------------------ tools and MCP servers

    async def tools(self) -> dict[str, Tool]:
        """The built-in tools, then those of the session's MCP servers running now."""
        from acp_fsm.tools import TOOLS

        offered = {} if self.mcp is None else await self.mcp.offered()
        if not offered:
            return TOOLS
        from acp_fsm.tools.mcp import McpTool  # a server runs: the SDK is loaded

        return {**TOOLS, **{name: McpTool(server, tool, name)
                            for name, (server, tool) in offered.items()}}

    def take_notices(self) -> list[str]:
        """What the user is still to be told: what `tell_once` was given, and news of the
        session's MCP servers."""
        notices, self._notices = self._notices, []
        return notices + (self.mcp.take_notices() if self.mcp is not None else [])

    def tell_once(self, notice: str) -> None:
        """Tell the user `notice` with the next ones, once a session (an instruction file
        that is not read: every turn finds it again)."""
        if notice not in self._told:
            self._told.add(notice)
            self._notices.append(notice)

    async def connect_mcp(self, entries: list[dict[str, Any]] | tuple[dict[str, Any], ...]
                          ) -> None:
        """Start the editor's MCP servers (after stopping those of an earlier connect). A
        session without servers imports nothing of MCP."""
        await self.close_mcp()
        if entries:
            from acp_fsm.mcp.servers import McpServers

            self.mcp = McpServers.of(entries, str(self.cwd))  # closed by a shutdown meanwhile
            await self.mcp.start()

    async def close_mcp(self) -> None:
        mcp, self.mcp = self.mcp, None
        if mcp is not None:
            await mcp.close()

    # -------------------------------------------------------------- settings

    def model(self, config: ProviderConfig) -> str:
        """The model the next model call uses: the one chosen, else the default."""
        if self.settings.model:
            return self.settings.model
        from acp_fsm.models import CATALOG

        return CATALOG.default_model(config)

    def config_options(self) -> list[dict[str, Any]]:
        """The session's ACP `configOptions` now, remembered as what the editor was told.
        Without a usable provider configuration only the mode is offered (the first prompt
        names the configuration error)."""
        config = self.provider
        if config is None:
            options = settings.config_options(self.settings, "", "", [])
        else:
            from acp_fsm.models import CATALOG

            options = settings.config_options(self.settings, config.provider,
                                              self.model(config), CATALOG.models(config))
        self._options_told = options
        return options

    def setup_result(self) -> dict[str, Any]:
        """What `session/new`, `load` and `resume` answer besides the id: the options, and
        the mode the older way."""
        return {"configOptions": self.config_options(), "modes": settings.modes(self.settings)}

    def announce_options(self) -> None:
        """Send `config_option_update` if the options changed since the editor was told
        (the provider's model list arrived)."""
        told = self._options_told
        if told is not None and self.config_options() != told:
            self.send_update({"sessionUpdate": "config_option_update",
                              "configOptions": self._options_told})

    async def set_option(self, config_id: str, value: object) -> list[dict[str, Any]]:
        """`session/set_config_option`: stored, then in effect from the next model call."""
        current = settings.check_choice(self.config_options(), config_id, value)
        assert isinstance(value, str)  # a value of the option
        if value != current:
            await self._choose(config_id, value)
            if config_id == settings.MODE:  # clients of the older API follow the mode too
                self.send_update({"sessionUpdate": "current_mode_update",
                                  "currentModeId": value})
        return self.config_options()

    async def set_mode(self, mode_id: str) -> None:
        """`session/set_mode`, the older way to choose the mode."""
        if mode_id not in settings.MODES:
            raise InvalidParams(f"Invalid params: modeId: unknown mode {limits.echo(mode_id)}; "
                                f"expected one of {', '.join(settings.MODES)}")
        if mode_id != self.settings.mode:
            await self._choose(settings.MODE, mode_id)
            self.send_update({"sessionUpdate": "config_option_update",
                              "configOptions": self.config_options()})

    async def _choose(self, config_id: str, value: str) -> None:
        """Store one choice, then apply it to the settings as they are then (two choices
        made at once each keep theirs). Not under the turn lease: it does not count as
        catching up with the store (`synced=False`), so another process's turn written
        meanwhile is still read at the next prompt."""
        await self._write("settings", settings.entry_body(config_id, value), wait=True,
                          synced=False)
        self.settings = self.settings.chosen(config_id, value)
        log.info("settings_changed", session_id=self.id, option=config_id, value=value)

    def _adopt(self, chosen: Settings) -> None:
        """Settings read from the store (another process chose): announced if they differ."""
        if chosen == self.settings:
            return
        mode_changed = chosen.mode != self.settings.mode
        self.settings = chosen
        if self._options_told is not None:
            self.send_update({"sessionUpdate": "config_option_update",
                              "configOptions": self.config_options()})
        if mode_changed:
            self.send_update({"sessionUpdate": "current_mode_update",
                              "currentModeId": chosen.mode})

    # -------------------------------------------------------------- transcript

    @property
    def messages(self) -> list[Message]:
        """The conversation as stored."""
        return self.conversation.messages

    def messages_for_model(self) -> tuple[Message, ...]:
        """The conversation, checked (and repaired) before every provider call: an orphaned
        tool call is an HTTP 400 from both providers."""
        messages, added = self.conversation.for_model()
        if added:
            log.warning("transcript_repaired", session_id=self.id,
                        calls=[r.call_id for r in added])
        return messages

    async def compact_to(self, messages: list[Message], body: dict[str, Any]) -> None:
        """Replace the conversation by its compacted form, once that is stored."""
        await self._write("compaction", body, wait=True)
        self.conversation.replace(messages)
        self.context_drift = 0

    async def add_notice(self, text: str) -> None:
        """Store a message to the user that is not part of the conversation (a command's
        answer): a load shows it again."""
        await self._write("notice", {"text": text}, wait=True)

    async def add_assistant(self, message: AssistantMessage, stop_reason: str,
                            views: dict[str, dict[str, Any]], *, wait: bool = True) -> None:
        body = transcript.assistant_body(message, stop_reason, views)
        written = self._queue("assistant", body, required=wait)
        self.conversation.append(message)  # once queued: the store and the conversation agree
        # Known before the wait, so a cancel during the write can still mark the message.
        self._last_assistant = (written, body) if written is not None else None
        if wait:
            await self._commit("assistant", written)

    def mark_cancelled(self) -> None:
        """The turn was cancelled after its last assistant message was stored complete: that
        stored message now carries stopReason cancelled. Queued behind the
        message's own write if that is still under way."""
        if self._last_assistant is None:
            return
        written, body = self._last_assistant
        self._last_assistant = None
        if body.get("stopReason") == transcript.CANCELLED:
            return
        if not written.done() or written.cancelled() or written.exception() is not None:
            return  # committed before anything went on (see `_commit`): not stored at all
        marked = {**body, "stopReason": transcript.CANCELLED}
        try:
            self._tail = self.store.rewrite_soon(self.id, written.result(), marked)
        except StoreError as exc:
            log.error("store_write_failed", error=str(exc))
            return
        self._tail.add_done_callback(_log_failed_write)

    async def add_result(self, result: ToolResultPart, view: dict[str, Any], *,
                         wait: bool = True) -> None:
        written = self._queue("tool_result", transcript.result_body(result, view),
                              required=wait)
        self.conversation.add_result(result)  # once queued, as above
        if wait:
            await self._commit("tool_result", written)

    async def record_turn_end(self, stop_reason: str) -> None:
        await self._write("turn_end", {"stopReason": stop_reason}, wait=False)

    async def _write(self, kind: str, body: dict[str, Any], wait: bool, *,
                     synced: bool = True) -> None:
        """Store an entry: committed before returning with `wait` (something the client is
        about to be told is done), else queued in order; `settle` waits for those."""
        written = self._queue(kind, body, required=wait, synced=synced)
        if wait:
            await self._commit(kind, written)

    def _queue(self, kind: str, body: dict[str, Any], *, required: bool = False,
               synced: bool = True) -> asyncio.Future[int] | None:
        """Queue an entry; its write's future. When the store refuses it (closed at
        shutdown, or the body cannot be stored), that is logged, and raised (`_refused`)
        when the entry is `required`: nothing is told done that is not stored. A `synced`
        write (under the turn lease) moves `synced_seq` to it."""
        try:
            written = self.store.append_soon(self.id, kind, body)
        except StoreError as exc:
            log.error("store_write_failed", kind=kind, error=str(exc))
            if required:
                raise self._refused(kind, exc) from None
            return None
        log.debug("entry_queued", kind=kind)
        written.add_done_callback(_log_failed_write)
        if synced:
            written.add_done_callback(self._synced)
        self._tail = written
        return written

    def _synced(self, written: asyncio.Future[int]) -> None:
        if not written.cancelled() and written.exception() is None:
            self.synced_seq = max(self.synced_seq, written.result())

    async def _commit(self, kind: str, written: asyncio.Future[int] | None) -> None:
        """Wait until a queued write is committed; a cancel does not cut the wait short (a
        write takes a millisecond, and what the client is told next must survive a crash).
        A failed commit of a completed message fails the turn (`_refused`)."""
        if written is None:
            return
        self.store.hurry()
        try:
            await asyncio.shield(written)
        except StoreError as exc:  # logged where it failed (`_log_failed_write`)
            raise self._refused(kind, exc) from None

    def _refused(self, kind: str, exc: StoreError) -> RpcError:
        """What the editor is told of a write of `kind` the store refused: the session is not
        found when another process deleted it (as at the next prompt), else an internal
        error naming the cause but not the store's file (the log has it)."""
        if isinstance(exc, SessionGone):
            self.server.sessions.forget(self.id)
            return _deleted(self.id)
        return InternalError(f"Internal error: the {kind} entry could not be stored: "
                             f"{exc.public}")

    async def settle(self) -> None:
        """Wait until everything queued for this session is committed (failures are logged
        where they happen)."""
        tail = self._tail
        if tail is None or tail.done():
            return
        self.store.hurry()  # committed here when that is quicker than by the store's thread
        if not tail.done():
            await asyncio.wait([tail])

    def _set_title_soon(self, title: str) -> None:
        task = asyncio.ensure_future(self.store.set_title(self.id, title))
        task.add_done_callback(_log_failed_write)

    def after_answer(self, callback: Callable[[], None]) -> None:
        conn = self.server.conn
        if conn.handling_request():
            conn.after_response(callback)
        else:
            callback()

    def send_update(self, update: dict[str, Any]) -> None:
        self.server.conn.notify("session/update", {"sessionId": self.id, "update": update})

    def text_sender(self, kind: str) -> Callable[[str], object]:
        """The sender of this session's `kind` chunks of text (`updates.chunk`): a streamed
        answer's, one per delta, validated as a template (`Connection.notifier`)."""
        sender = self._text_senders.get(kind)
        if sender is None:
            sender = self._text_senders[kind] = self.server.conn.notifier(
                "session/update", lambda text: {
                    "sessionId": self.id,
                    "update": updates.chunk(kind, updates.text_content(text))})
        return sender

    @property
    def behind(self) -> bool:
        """The editor reads slower than updates are written: `keep_pace` would wait."""
        return self.server.conn.congested

    async def keep_pace(self, token: CancellationToken | None = None) -> None:
        """Wait while the editor reads slower than updates are written (back-pressure: a
        stalled editor must not make the agent buffer without limit). The reader goes on
        meanwhile, so a cancel fires `token` and ends the wait at once."""
        conn = self.server.conn
        if conn.congested:
            await (token.race(conn.drain()) if token is not None else conn.drain())


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

    async def store(self) -> Store:
        async with self._store_lock:
            if self._store is None:
                self._store = await Store.open(scrub=redact.scrub)  # a login adds keys
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
            raise ResourceNotFound(f"Session not found: {limits.echo(session_id)}")
        return session

    def find(self, session_id: str) -> Session | None:
        return self._open.get(session_id)

    async def new(self, cwd: str, additional: list[str], mcp_servers: list[dict[str, Any]],
                  provider: ProviderConfig | None) -> Session:
        """A new session, working with `provider` (the configuration in force, as read)."""
        _check_session(cwd, additional, mcp_servers)
        now = time.time()
        stored = tuple(redact.without_pair_values(entry) for entry in mcp_servers)  # no secrets
        record = SessionRecord(id=f"sess_{uuid.uuid4().hex}", cwd=cwd,
                               additional_directories=tuple(additional),
                               mcp_servers=stored, created_at=now, updated_at=now)
        store = await self.store()
        await store.create_session(record)
        session = Session(self._server, store, record, [])
        session.provider = provider
        self._open[record.id] = session  # so that a shutdown meanwhile stops its servers
        try:
            await session.connect_mcp(mcp_servers)
        except BaseException:
            self._open.pop(record.id, None)
            await session.close_mcp()
            raise
        log.info("session_created", session_id=record.id, cwd=cwd)
        return session

    async def restore(self, session_id: str, cwd: str, mcp_servers: list[Any],
                      replay: bool) -> Session:
        """`session/load` (replay=True) or `session/resume`: the session, re-bound if it is
        already open here (a cancel after the load still reaches its running turn)."""
        _check_session(cwd, [], mcp_servers)
        store = await self.store()
        async with self._lifecycle(session_id):
            session = await self._restore(store, session_id, cwd, replay)
            session.provider = (await credentials.read()).config
            if mcp_servers or session.mcp is not None:
                from acp_fsm.mcp.specs import server_specs

                connected = session.mcp.specs if session.mcp is not None else []
                if connected != server_specs(mcp_servers):
                    await session.connect_mcp(mcp_servers)  # the servers this request passes
            return session

    async def _restore(self, store: Store, session_id: str, cwd: str, replay: bool) -> Session:
        record = await store.get_session(session_id)
        if record is None:
            raise ResourceNotFound(f"Session not found: {limits.echo(session_id)}")
        session = self._open.get(session_id)
        if session is None:
            with paused_collector():  # thousands of objects at once (acp_fsm.bulk)
                entries, messages, last = await self._read(store, session_id)
            # ACP gives the working directory again: the project may have moved since.
            session = Session(self._server, store, replace(record, cwd=cwd), messages, last,
                              _settings_of(entries))
            self._open[session_id] = session
        else:
            entries = await store.entries(session_id)
            session.settings = _settings_of(entries)  # another process may have chosen since
        if replay:
            with paused_collector():
                replayed = replay_updates(entries)
            for update in replayed:
                session.send_update(update)
                if session.turn is None:  # never let a running turn's updates in between
                    await session.keep_pace()
        return session

    async def _read(self, store: Store, session_id: str
                    ) -> tuple[list[Entry], list[Message], int]:
        """A session's entries and conversation, repaired where a crash left a tool call
        without its result: under the turn lease, so no live process's running turn is ever
        repaired and two loads never repair the same call twice. When another process holds
        the lease, nothing is repaired (its turn is still writing)."""
        entries = await store.entries(session_id)
        messages, last = await _rebuild(store, session_id, entries, repair=False)
        if not transcript.needs_repair(messages):  # the usual case: no lease taken at all
            return entries, messages, last
        owner = leases.new_owner(leases.REPAIR)
        claim = await _claim_or_not_found(self, store, session_id, owner)
        if claim.holder is not None:  # its turn is still writing the results
            return entries, messages, last
        try:
            entries = await store.entries(session_id)
            messages, last = await _rebuild(store, session_id, entries)
            if entries and last != entries[-1].seq:  # repaired: replay the repair too
                entries = await store.entries(session_id)
            return entries, messages, last
        finally:
            _release(store, session_id, owner)

    async def close(self, session_id: str) -> None:
        async with self._lifecycle(session_id):
            session = self.get(session_id)
            await self._stop(session, "session/close")
            self._open.pop(session_id, None)

    async def delete(self, session_id: str) -> None:
        store = await self.store()
        async with self._lifecycle(session_id):
            session = self._open.pop(session_id, None)
            if session is not None:
                await self._stop(session, "session/delete")
            if not await store.delete_session(session_id) and session is None:
                raise ResourceNotFound(f"Session not found: {limits.echo(session_id)}")

    async def list(self, cwd: str | None, cursor: str | None) -> dict[str, Any]:
        store = await self.store()
        try:
            # A session nobody prompted has nothing to resume: editors' pickers would show
            # it as an untitled, empty line.
            records, next_cursor = await store.list_sessions(cwd, cursor, prompted=True)
        except StoreError as exc:
            raise InvalidParams(f"Invalid params: cursor: {exc.public}") from None
        result: dict[str, Any] = {"sessions": [_info(r) for r in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    def announce_options(self) -> None:
        """Tell every open session's editor of options that changed (a new model list)."""
        for session in self._open.values():
            session.announce_options()

    def cancel_all(self, reason: str) -> None:
        """Fire the token of every running turn (the connection is closing)."""
        for session in self._open.values():
            session.cancel(reason)

    async def shutdown(self) -> None:
        """The connection closed: let every cancelled turn drain and persist (bounded by
        `SHUTDOWN_GRACE_S`, so the process exits in time), then close the store."""
        await asyncio.gather(*(self._stop(s, "shutdown", SHUTDOWN_GRACE_S)
                               for s in self._open.values()))
        if self._store is not None:
            await self._store.close()

    async def _stop(self, session: Session, reason: str, grace: float = CLOSE_GRACE_S) -> None:
        turn = session.turn
        if turn is not None:
            session.cancel(reason)
            await asyncio.wait({turn.done}, timeout=grace)
        await session.close_mcp()


async def _claim_or_not_found(sessions: Sessions, store: Store, session_id: str,
                              owner: str) -> Claim:
    try:
        return await store.claim_turn(session_id, owner)
    except SessionGone:
        sessions.forget(session_id)
        raise _deleted(session_id) from None


def _deleted(session_id: str) -> ResourceNotFound:
    """A session that was in the store and is no more (another process deleted it)."""
    return ResourceNotFound(f"Session not found: {limits.echo(session_id)} (it was deleted)")


def _release(store: Store, session_id: str, owner: str) -> None:
    """Queue the release of a lease; the answer does not wait for it (the store runs it before
    anything queued later, a next claim included). One that fails (the store was locked) is
    tried again a moment later, until the store is closed: a live process's lease never
    expires on its own."""
    def retry_if_failed(done: asyncio.Future[None]) -> None:
        if done.cancelled() or done.exception() is None:
            return
        log.warning("lease_not_released", error=str(done.exception()))
        asyncio.get_running_loop().call_later(leases.HEARTBEAT_S, _release, store, session_id,
                                              owner)

    with contextlib.suppress(StoreError):  # closed: the process exits, and its leases too
        store.release_turn_soon(session_id, owner).add_done_callback(retry_if_failed)


def _holder(owner: str) -> str:
    """Who holds a lease, in words."""
    pid = leases.owner_pid(owner)
    if pid == os.getpid():
        return "this acp-fsm process (a previous prompt of it is still finishing)"
    return f"another acp-fsm process (pid {pid}), perhaps another editor window"


def _settings_of(entries: list[Entry]) -> Settings:
    """A session's settings: its `settings` entries, in order."""
    return Settings.folded([e.body for e in entries if e.kind == "settings"])


def _log_failed_write(future: asyncio.Future[Any]) -> None:
    if future.cancelled() or (error := future.exception()) is None:
        return
    if isinstance(error, SessionGone):  # deleted by another process: nothing left to write to
        log.info("store_write_dropped", reason=str(error))
    else:
        log.error("store_write_failed", error=str(error))


def _check_session(cwd: str, additional: list[str], mcp_servers: list[Any]) -> None:
    """What a session keeps, stores and lists again: absolute paths, within the limits."""
    limits.check_count("additionalDirectories", additional, limits.MAX_DIRECTORIES,
                       "MAX_DIRECTORIES")
    limits.check_count("mcpServers", mcp_servers, limits.MAX_MCP_SERVERS, "MAX_MCP_SERVERS")
    limits.check_nesting("mcpServers", mcp_servers)
    for name, value in [("cwd", cwd)] + [(f"additionalDirectories[{i}]", d)
                                          for i, d in enumerate(additional)]:
        limits.check_path(name, value)
        if not Path(value).is_absolute():
            raise InvalidParams(f"Invalid params: {name}: must be an absolute path, got "
                                f"{limits.echo(value)}")


def _info(record: SessionRecord) -> dict[str, Any]:
    info: dict[str, Any] = {"sessionId": record.id, "cwd": record.cwd,
                            "updatedAt": _iso(record.updated_at)}
    if record.title:
        info["title"] = record.title
    return info


def _iso(timestamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


async def _rebuild(store: Store, session_id: str, entries: list[Entry], *, repair: bool = True
                   ) -> tuple[list[Message], int]:
    """The conversation from stored entries, and the seq of the last entry it reflects. With
    `repair`, a tool call a crash or a cancel left without its result gets a synthetic one,
    stored too; never while another live process runs a turn of the session (its calls are
    still on their way to their results)."""
    last = entries[-1].seq if entries else 0
    messages: list[Message] = []
    # What comes before the last compaction is not in the conversation any more.
    start = next((i for i in range(len(entries) - 1, -1, -1)
                  if entries[i].kind == "compaction"), 0)
    for entry in entries[start:]:
        if entry.kind == "user":
            messages.append(transcript.user_from_body(entry.body))
        elif entry.kind == "assistant":
            messages.append(transcript.assistant_from_body(entry.body))
        elif entry.kind == "tool_result":
            messages.append(ToolResultsMessage((transcript.result_from_body(entry.body),)))
        elif entry.kind == "compaction":
            from acp_fsm.compaction import from_body  # not on the session/new path

            messages = from_body(entry.body)
    messages = transcript.group_results(messages)
    if not repair:
        return messages, last
    fixed, added = transcript.repair(messages)
    for result in added:
        content = [updates.text_block(result.content)]
        last = await store.append(session_id, "tool_result", transcript.result_body(
            result, updates.final_view("failed", content)))
    if added:
        log.warning("transcript_repaired_on_load", session_id=session_id,
                    calls=[r.call_id for r in added])
    return fixed, last


def replay_updates(entries: list[Any]) -> list[dict[str, Any]]:
    """The updates that show a stored conversation as it looked live (ACP: session/load)."""
    out: list[dict[str, Any]] = []
    plans: dict[str, list[dict[str, Any]]] = {}  # call id -> the plan an update_plan call set
    for entry in entries:
        body = entry.body
        if entry.kind in ("user", "command"):
            out.extend(updates.chunk("user_message_chunk", block) for block in body["prompt"])
        elif entry.kind in ("compaction", "notice"):
            text = body["notice"] if entry.kind == "compaction" else body["text"]
            out.append(updates.chunk("agent_message_chunk", updates.text_content(text)))
        elif entry.kind == "assistant":
            views = body.get("views") or {}
            for part in body["parts"]:
                if part["type"] == "text" and part["text"]:
                    out.append(updates.chunk("agent_message_chunk",
                                             updates.text_content(part["text"])))
                elif part["type"] == "thinking" and part["text"]:
                    out.append(updates.chunk("agent_thought_chunk",
                                             updates.text_content(part["text"])))
                elif part["type"] == "tool_call":
                    view = views.get(part["id"]) or {"title": part["name"], "kind": "other",
                                                     "rawInput": part.get("arguments") or {}}
                    out.append(updates.tool_call(part["id"], view))
                    if part["name"] == updates.PLAN_TOOL:
                        plans[part["id"]] = (part.get("arguments") or {}).get("entries") or []
        elif entry.kind == "tool_result":
            view = body.get("view") or {}
            content = view.get("content")
            if not content or any(block.get("type") == "terminal" for block in content):
                # a terminal belongs to the connection that ran it (sessions stored before
                # its output was kept): the result the model read holds the output instead
                content = [updates.text_block(body["content"])]
            out.append(updates.tool_call_update(
                body["callId"], view.get("status", "failed"), content=content,
                locations=view.get("locations")))
            if body["callId"] in plans and view.get("status") == "completed":
                out.append(updates.plan(plans[body["callId"]]))
    return out
