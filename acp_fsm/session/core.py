"""A session: its conversation, its token and the turn it runs; its writes (`journal`), its
turn lease (`lease`) and its options (`options`) are modules of their own.

Token lifecycle (docs/cancellation.md): a session gets a fresh CancellationToken when it is
created, loaded or resumed; a turn takes it when its prompt arrives, before any await;
`session/cancel` fires it (only while a turn runs: a cancel while idle is a no-op); when the
turn ends, whatever the reason, a fresh token replaces it, so a cancel never reaches a later
turn.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from acp_fsm import credentials, limits, pricing, redact, transcript, updates
from acp_fsm.blocking import Shared
from acp_fsm.context_budget import ContextBudget
from acp_fsm.conversation import Conversation
from acp_fsm.ledger import Ledger
from acp_fsm.library import EMPTY, Library, scan
from acp_fsm.prompt import title_of, to_parts
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.protocol.errors import ResourceNotFound
from acp_fsm.providers.endpoint import ProviderConfig
from acp_fsm.providers.types import (
    AssistantMessage,
    Message,
    ToolResultPart,
    UserMessage,
    UserPart,
)
from acp_fsm.session.journal import Journal
from acp_fsm.session.lease import TurnLease
from acp_fsm.session.naming import Naming
from acp_fsm.session.options import Options
from acp_fsm.session.replay import rebuild, settings_of
from acp_fsm.settings import Settings
from acp_fsm.store import Entry, SessionRecord, Store

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.mcp.servers import McpServers
    from acp_fsm.protocol.connection import Connection
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.registry import Sessions
    from acp_fsm.tools.background import BackgroundJobs
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

# The user's commands and skills, read once for the sessions that ask at once in a directory.
_SCAN = Shared(scan)


@dataclass(slots=True)
class Queued:
    """A prompt sent while a turn ran: `ready` once it is its turn, or once it is cancelled
    (then answered at once, without running)."""

    prompt: list[dict[str, Any]]
    ready: asyncio.Future[None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        if not self.ready.done():
            self.ready.set_result(None)


class Session:
    """One conversation, open in this process."""

    def __init__(
        self,
        server: Server,
        store: Store,
        record: SessionRecord,
        messages: list[Message],
        synced_seq: int = 0,
        entries: list[Entry] | None = None,
    ) -> None:
        """`entries`: the stored session's, whose settings and usage it goes on from."""
        self.server = server
        self.id = record.id
        self.cwd = Path(record.cwd)
        self.roots = (self.cwd, *(Path(d) for d in record.additional_directories))
        self.title = record.title  # the first prompt's words, until a model makes one
        self.naming = Naming(self, record.model_title)
        self.conversation = Conversation(messages)
        self.token = CancellationToken(f"session {record.id}")
        self.turn: Turn | None = None
        self.always: dict[str, bool] = {}  # tool name → remembered "always" answer
        self.asks_user = True  # its calls may ask the user (`Host`)
        self.mcp: McpServers | None = None  # the editor's MCP servers, when it passed any
        self._background: BackgroundJobs | None = None  # made with the first one started
        self._notices: list[str] = []  # for the user, with the next model call's answer
        self._told: set[str] = set()  # notices of `tell_once` given so far
        self.budget = ContextBudget()  # the context window of its model calls
        self.ledger = Ledger(self._store_charge)  # the tokens and cost of its model calls
        # This turn's last stored assistant message: (its pending or done write, its body).
        self._last_assistant: tuple[asyncio.Future[int], dict[str, Any]] | None = None
        forget = partial(server.sessions.forget, record.id)
        # `journal.synced_seq`: the store's last entry of this session that `messages`
        # reflects; another process with the session open may have written more since.
        self.journal = Journal(store, record.id, synced_seq, forget)
        self.lease = TurnLease(store, record.id, forget)
        self.options = Options(self.journal, self.send_update)
        if entries:
            self.options.settings = settings_of(entries)
            self.ledger.reload(entries)
        self._text_senders: dict[str, Callable[[str], object]] = {}  # see `text_sender`
        self.library: Library = EMPTY  # the user's commands and skills, as last read
        self._reading: asyncio.Task[None] | None = None  # the first read (`read_library_soon`)
        self._announced: list[acp.AvailableCommand] | None = None  # the commands last told
        self._queued: collections.deque[Queued] = collections.deque()  # prompts sent meanwhile
        self.closing = False  # closed, deleted or shut down: no prompt is taken any more

    def __repr__(self) -> str:
        turn = self.turn.state if self.turn is not None else "idle"
        return f"<Session {self.id} {turn} messages={len(self.messages)} cwd={self.cwd}>"

    # ------------------------------------------------------------------- turns

    def start_turn(self, prompt: list[dict[str, Any]]) -> Coroutine[Any, Any, acp.PromptResponse]:
        """Synchronously check and convert the prompt, and take the token (a cancel read right
        after the prompt reaches this turn); then the coroutine that runs the turn and gives
        the prompt's answer. A prompt sent while a turn runs (or others wait) is queued: it
        runs after them, in order (a cancel meanwhile answers it `cancelled`, unrun)."""
        if self.closing:
            raise ResourceNotFound(f"Session not found: {self.id} is being closed")
        limits.check_nesting("prompt", prompt)  # refused now, never answered unstored
        parts = to_parts(prompt)
        body = {"prompt": prompt, "parts": [transcript.part_to_json(p) for p in parts]}
        limits.check_stored("prompt", body)
        if self.turn is not None or self._queued:
            waiting = Queued(prompt, asyncio.get_running_loop().create_future())
            self._queued.append(waiting)
            log.info("prompt_queued", session_id=self.id, ahead=len(self._queued))
            return self._after(waiting, body, parts)
        return self._begin(body, parts)

    def _begin(
        self, body: dict[str, Any], parts: tuple[UserPart, ...]
    ) -> Coroutine[Any, Any, acp.PromptResponse]:
        # Imported at the first prompt: the turn brings the tools and the providers, which
        # `initialize` and `session/new` do not need (startup budget, see bench/startup.py).
        from acp_fsm import commands
        from acp_fsm.turn import Turn

        self._last_assistant = None  # only this turn's own message may be marked cancelled
        if self.mcp is not None:
            self.mcp.retry()  # a server that failed or was lost: its next use tries again
        self.turn = Turn(self, self.token, commands.parse(body["prompt"]))
        self.turn.prompt = body["prompt"]  # the request's own list (`cancel_prompt`)
        return self._run_turn(self.turn, body, parts)

    async def _after(
        self, waiting: Queued, body: dict[str, Any], parts: tuple[UserPart, ...]
    ) -> acp.PromptResponse:
        """A queued prompt: its turn once those before it ended (it stays first in the queue
        until it starts, so no later prompt overtakes it)."""
        try:
            await waiting.ready
        except BaseException:  # the request was dropped (the connection closed)
            self._leave(waiting)
            raise
        if waiting.cancelled:
            self._leave(waiting)
            return {"stopReason": "cancelled"}
        self._queued.remove(waiting)
        return await self._begin(body, parts)

    def _leave(self, waiting: Queued) -> None:
        """`waiting` will not run: out of the queue, and the next one's turn if it was first."""
        first = bool(self._queued) and self._queued[0] is waiting
        self._queued.remove(waiting)
        if first and self.turn is None:
            self._hand_over()

    def _hand_over(self) -> None:
        """The turn ended: the first queued prompt may start."""
        if self._queued and not self._queued[0].ready.done():
            self._queued[0].ready.set_result(None)

    async def _run_turn(
        self, turn: Turn, body: dict[str, Any], parts: tuple[UserPart, ...]
    ) -> acp.PromptResponse:
        try:
            turn.provider = found = await credentials.read()
            self.options.provider = found.config
            if found.needs_login:  # refused before anything of the prompt is stored
                raise found.refusal(self.server.client)
            await self._claim()
            try:
                await self.read_library(turn.token)  # the files may have changed
                if turn.command is not None:  # shown again by a load, never sent to a model
                    await self.journal.write("command", {"prompt": body["prompt"]}, wait=True)
                    return await self._finish(turn)
                return await self._converse(turn, body, parts)
            finally:
                self.lease.release()
        finally:
            self.turn = None
            self.token = CancellationToken(f"session {self.id}")  # never reused by a later turn
            if not turn.done.done():
                turn.done.set_result(None)
            self._hand_over()

    async def _converse(
        self, turn: Turn, body: dict[str, Any], parts: tuple[UserPart, ...]
    ) -> acp.PromptResponse:
        found = await self._expanded(turn, body["prompt"], parts)
        if found is not None:  # the user's command: the model reads it, the user sees theirs
            parts = found
            body = {**body, "parts": [transcript.part_to_json(p) for p in parts]}
            limits.check_stored("prompt", body)
        await self.journal.write("user", body, wait=True)  # not stored: not in the conversation
        self.conversation.append(UserMessage(parts))
        if self.title is None and (
            title := title_of(body["prompt"], clean=redact.configured().scrub_text)
        ):
            self.title = title
            self.journal.set_title_soon(title)
            self.send_update(updates.session_info(title, updates.iso_time(time.time())))
        answer = await self._finish(turn)
        if answer["stopReason"] != "cancelled":  # a completed turn: a title can be made
            config = turn.config()
            self.after_answer(lambda: self.naming.start(config))
        return answer

    async def _finish(self, turn: Turn) -> acp.PromptResponse:
        """Run the turn; its answer once all it wrote is stored."""
        try:
            stop_reason = await turn.run()
        finally:
            # The lease goes with the turn's last entries (queued behind them, so in the same
            # commit or after it). Commit, then tell: the answer goes out once all the turn
            # wrote is durable.
            self.lease.release()
            await self.settle()
        # _meta (ACP extensibility): how the turn machine got there, the tokens of the turn's
        # model calls (its compactions' and subagents' included) and of the session's, and
        # what the session's calls cost when that is known.
        meta = {
            "statePath": turn.path,
            "modelCalls": turn.requests,
            "usage": updates.usage_totals(turn.spent),
            "sessionUsage": updates.usage_totals(self.ledger.spent),
        }
        if (cost := pricing.to_acp(self.ledger.cost)) is not None:
            meta["sessionCost"] = cost
        return {"stopReason": stop_reason, "_meta": {"acpFsm": meta}}

    async def _claim(self) -> None:
        """Take the session's turn lease, then catch up with what another process wrote since
        this one last looked, or repair what a dead holder left."""
        claim = await self.lease.claim()
        try:
            if claim.last_seq != self.journal.synced_seq or claim.taken_over:
                store = self.journal.store
                entries = await store.entries(self.id)
                messages, self.journal.synced_seq = await rebuild(store, self.id, entries)
                self.conversation.replace(messages)
                self.options.adopt(settings_of(entries))
                self.ledger.reload(entries)
                log.info("session_caught_up", session_id=self.id, taken_over=claim.taken_over)
        except BaseException:
            self.lease.release()
            raise

    def cancel(self, reason: str = "session/cancel") -> bool:
        """Fire the running turn's token and cancel every queued prompt (each answers
        `cancelled` now); False (and nothing fired) when idle."""
        queued = bool(self._queued)
        for waiting in self._queued:
            waiting.cancel()
        if self.turn is None:
            return queued
        self.token.cancel(reason)
        return True

    def cancel_prompt(self, prompt: list[dict[str, Any]], reason: str) -> bool:
        """`$/cancel_request` for the prompt `prompt` (the request's own list): that one
        alone, queued or running; False when it is neither."""
        waiting = next((w for w in self._queued if w.prompt is prompt), None)
        if waiting is not None:
            waiting.cancel()
            return True
        if self.turn is None or self.turn.prompt is not prompt:
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

        return {
            **TOOLS,
            **{name: McpTool(server, tool, name) for name, (server, tool) in offered.items()},
        }

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

    async def connect_mcp(self, entries: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> None:
        """Start the editor's MCP servers (after stopping those of an earlier connect). A
        session without servers imports nothing of MCP."""
        await self.close_mcp()
        if entries:
            from acp_fsm.mcp.servers import McpServers

            # closed by a shutdown meanwhile
            self.mcp = McpServers.of(entries, str(self.cwd), self.relay_form)
            await self.mcp.start()

    async def relay_form(
        self, server: str, message: str, requested: dict[str, Any], call_id: str | None
    ) -> tuple[str, dict[str, Any] | None]:
        """An MCP server's form, asked of the user as the model's questions are (bounded by
        the running turn's token); its answer as MCP's (action, content). Raises with the
        reason when the editor cannot show it."""
        from acp_fsm import questions
        from acp_fsm.client import Client, ClientCallError

        question = questions.form_question(message, requested)
        title = f"MCP server {server} asks: {' '.join(message.split())[:200]}"
        try:
            answer = await Client(self.server, self.id, self.token).ask(question, call_id, title)
        except Cancelled:
            return questions.CANCEL, None
        except ClientCallError as exc:
            if exc.timed_out:  # no answer in time: the user dismissed it, as MCP sees it
                return questions.CANCEL, None
            raise
        return answer.action, answer.content if answer.action == questions.ACCEPT else None

    @property
    def background(self) -> BackgroundJobs:
        """The commands left running by `run_command` (background), stopped with the
        session; the tools' module is loaded only by a session that starts one."""
        if self._background is None:
            from acp_fsm.tools.background import BackgroundJobs

            self._background = BackgroundJobs()
        return self._background

    def background_summary(self) -> str:
        """What the system prompt says of the background commands ("" when none)."""
        return "" if self._background is None else self._background.summary()

    async def stop_background(self) -> None:
        if self._background is not None:
            await self._background.stop_all()

    async def close_mcp(self) -> None:
        mcp, self.mcp = self.mcp, None
        if mcp is not None:
            await mcp.close()

    # ------------------------------------------------------ commands and skills

    async def _expanded(
        self, turn: Turn, prompt: list[dict[str, Any]], parts: tuple[UserPart, ...]
    ) -> tuple[UserPart, ...] | None:
        """What the model receives for a prompt that is a command (`/init`, `/review`, the
        user's commands and skills), or None: the prompt as it is. A `/review` turn is
        read-only; its diff is read with git, off the event loop."""
        from acp_fsm import commands

        scope = commands.reviewing(prompt)
        if scope is None:
            return commands.expanded(prompt, parts, self.library)
        from acp_fsm.blocking import run_blocking
        from acp_fsm.protocol.cancel import Cancelled
        from acp_fsm.providers.types import TextPart
        from acp_fsm.review import review_prompt

        try:
            text = await run_blocking(turn.token, review_prompt, self.cwd, scope)
        except Cancelled:
            return None  # the turn sees its cancel at once
        turn.read_only = True
        return (TextPart(text), *parts[1:])

    def read_library_soon(self) -> None:
        """Read the user's commands and skills now, off the answer's path (session setup)."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.get_running_loop().create_task(self.read_library(None))

    async def read_library(self, token: CancellationToken | None) -> None:
        """Read the user's commands and skills again (at every prompt: the files may have
        changed): announced when they differ from what the editor was told, a file that
        cannot be used named once in the session. A cancel leaves the last read in force."""
        from acp_fsm import commands
        from acp_fsm.protocol.cancel import Cancelled

        try:
            found = await _SCAN(token, self.cwd, commands.RESERVED)
        except Cancelled:
            return
        for problem in found.problems:
            self.tell_once(problem)
        self.library = found
        listed = commands.available(found)
        if listed != (self._announced or commands.available()):  # setup told the built-ins
            self._announced = listed
            self.send_update(commands.announcement(found))

    # -------------------------------------------------------------- options

    @property
    def provider(self) -> ProviderConfig | None:
        """The provider configuration as last read (`options`)."""
        return self.options.provider

    @property
    def settings(self) -> Settings:
        """The model, mode and thought level chosen now (`options`)."""
        return self.options.settings

    def model(self, config: ProviderConfig) -> str:
        """The model the next model call uses."""
        return self.options.model(config)

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
            log.warning("transcript_repaired", session_id=self.id, calls=[r.call_id for r in added])
        return messages

    async def compact_to(self, messages: list[Message], body: dict[str, Any]) -> None:
        """Replace the conversation by its compacted form, once that is stored."""
        await self.journal.write("compaction", body, wait=True)
        self.conversation.replace(messages)
        self.budget.compacted()

    async def add_notice(self, text: str) -> None:
        """Store a message to the user that is not part of the conversation (a command's
        answer): a load shows it again."""
        await self.journal.write("notice", {"text": text}, wait=True)

    async def add_assistant(
        self,
        message: AssistantMessage,
        stop_reason: str,
        views: dict[str, dict[str, Any]],
        *,
        wait: bool = True,
    ) -> None:
        body = transcript.assistant_body(message, stop_reason, views)
        written = self.journal.queue("assistant", body, required=wait)
        self.conversation.append(message)  # once queued: the store and the conversation agree
        # Known before the wait, so a cancel during the write can still mark the message.
        self._last_assistant = (written, body) if written is not None else None
        if wait:
            await self.journal.commit("assistant", written)

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
            return  # committed before anything went on (see `Journal.commit`): not stored
        self.journal.rewrite(written.result(), {**body, "stopReason": transcript.CANCELLED})

    async def add_result(
        self, result: ToolResultPart, view: dict[str, Any], *, wait: bool = True
    ) -> None:
        written = self.journal.queue(
            "tool_result", transcript.result_body(result, view), required=wait
        )
        self.conversation.add_result(result)  # once queued, as above
        if wait:
            await self.journal.commit("tool_result", written)

    async def record_turn_end(self, stop_reason: str) -> None:
        await self.journal.write("turn_end", {"stopReason": stop_reason}, wait=False)

    def mcp_status(self) -> list[str]:
        return [] if self.mcp is None else self.mcp.status()

    def _store_charge(self, charge: pricing.Charge) -> None:
        """A model call's usage entry (`ledger`): queued, not waited for (committed with the
        message the call ends with, queued after it)."""
        # Moved past only under the lease: a title call's, between turns, may follow another
        # process's entries, which a catch-up must still read.
        self.journal.queue(pricing.USAGE_ENTRY, charge.body(), synced=self.lease.held)

    def record_subagent(self, body: dict[str, Any]) -> None:
        """Queued, not waited for: what the editor is told rests on the call's result."""
        self.journal.queue("subagent", body)

    async def settle(self) -> None:
        """Wait until everything queued for this session is committed."""
        await self.journal.settle()

    def after_answer(self, callback: Callable[[], None]) -> None:
        conn = self.server.conn
        if conn.handling_request():
            conn.after_response(callback)
        else:
            callback()

    def send_update(self, update: acp.SessionUpdate) -> None:
        self.server.conn.notify("session/update", {"sessionId": self.id, "update": update})

    def text_sender(self, kind: updates.ChunkKind) -> Callable[[str], object]:
        """The sender of this session's `kind` chunks of text (`updates.chunk`): a streamed
        answer's, one per delta, validated as a template (`Connection.notifier`)."""
        sender = self._text_senders.get(kind)
        if sender is None:
            sender = self._text_senders[kind] = self.server.conn.notifier(
                "session/update",
                lambda text: {
                    "sessionId": self.id,
                    "update": updates.chunk(kind, updates.text_content(text)),
                },
            )
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
