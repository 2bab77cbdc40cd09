"""A session: one conversation open in this process, and its parts: its writes (`journal`),
its turn lease across processes (`lease`), what the user steers (`options`), its tools and
servers (`toolbox`), the context window of its model calls (`budget`), their usage and cost
(`ledger`), its title (`naming`), and its lifecycle (`lifecycle`: prompts admitted, queued,
cancelled, and the session closed). A prompt's run is `prompting`'s; what a turn sees of the
session is its ports (`turn.ports`, docs/architecture.md), built here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import checkpoints, client_prompt, limits, pricing, steering, transcript, updates
from acp_fsm.context_budget import ContextBudget
from acp_fsm.conversation import Conversation
from acp_fsm.errors import SessionNotFound
from acp_fsm.ledger import Ledger
from acp_fsm.prompt import to_parts
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.types import Message, UserPart
from acp_fsm.session import foreground, prompting
from acp_fsm.session.effects import SessionEffects
from acp_fsm.session.journal import Journal
from acp_fsm.session.lease import TurnLease
from acp_fsm.session.lifecycle import Lifecycle
from acp_fsm.session.naming import Naming
from acp_fsm.session.options import Options
from acp_fsm.session.replay import settings_of, user_chunks
from acp_fsm.session.toolbox import Toolbox
from acp_fsm.store import Entry, SessionRecord, Store

if TYPE_CHECKING:
    from acp_fsm import credentials
    from acp_fsm.client_prompt import ClientPrompt
    from acp_fsm.commands import Command
    from acp_fsm.mcp.servers import McpServers
    from acp_fsm.protocol.cancel import CancellationToken
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.holder import Server
    from acp_fsm.turn import Turn

log = structlog.get_logger("session")


class Session:
    """One conversation, open in this process."""

    def __init__(
        self,
        server: Server,
        store: Store,
        record: SessionRecord,
        messages: list[Message],
        forget: Callable[[], None],
        synced_seq: int = 0,
        entries: list[Entry] | None = None,
    ) -> None:
        """`forget` drops it from the connection's sessions (another process deleted it);
        `entries`: the stored session's, whose settings and usage it goes on from."""
        self.server = server
        self.id = record.id
        self.cwd = Path(record.cwd)
        self.roots = (self.cwd, *(Path(d) for d in record.additional_directories))
        self.title = record.title  # the first prompt's words, until a model makes one
        self.naming = Naming(self, record.model_title)
        self.conversation = Conversation(messages)
        self.lifecycle = Lifecycle(record.id)
        self.rejected: set[str] = set()  # the tools the user answered "always reject"
        # Its subagents at work, by child session id: the token `cancel_child` fires.
        self.children: dict[str, CancellationToken] = {}
        self.toolbox = Toolbox(
            server, record.id, self.cwd, self.send_update, lambda: self.lifecycle.token
        )
        self.effects = SessionEffects(server, record.id, self.toolbox.notices)
        self.budget = ContextBudget()  # the context window of its model calls
        self.ledger = Ledger(self._store_charge)  # the tokens and cost of its model calls
        # `journal.synced_seq`: the store's last entry of this session that `messages`
        # reflects; another process with the session open may have written more since.
        self.journal = Journal(store, record.id, synced_seq, forget)
        self.lease = TurnLease(store, record.id, forget)
        self.options = Options(self.journal, self.send_update)
        # The editor's system prompt (`acp_fsm.client_prompt`): stored, re-sent on load.
        self.client_prompt = client_prompt.stored(entries) if entries else None
        self.steering = steering.Inbox()  # what the user steered the running turn with
        self.asking = 0  # the questions to the user its work waits on (v2: requires_action)
        self._unanswered: set[asyncio.Task[acp.PromptResponse]] = set()  # `_unawaited`
        if entries:
            self.options.settings = settings_of(entries)
            self.ledger.reload(entries)

    def __repr__(self) -> str:
        state = self.lifecycle.state
        return f"<Session {self.id} {state} messages={len(self.messages)} cwd={self.cwd}>"

    # ------------------------------------------------------------------- prompts

    def start_turn(
        self, prompt: list[acp.ContentBlock], accepted: foreground.Tell | None = None
    ) -> Coroutine[Any, Any, acp.PromptResponse]:
        """Synchronously check and convert the prompt, and take the token (a cancel read right
        after the prompt reaches this turn); then the coroutine that runs the turn and gives
        the prompt's answer. A prompt sent while a turn runs (or others wait) is queued: it
        runs after them, in order (a cancel meanwhile answers it `cancelled`, unrun).
        `accepted` is told the prompt's message id once it is stored (ACP v2's answer), and
        the turn goes on once what it returns is done (the answer written)."""
        body, parts = self._checked(prompt)
        return self._admitted(prompt, body, parts, accepted)

    def _admitted(
        self,
        prompt: list[acp.ContentBlock],
        body: dict[str, Any],
        parts: tuple[UserPart, ...],
        accepted: foreground.Tell | None = None,
    ) -> Coroutine[Any, Any, acp.PromptResponse]:
        acceptance = foreground.Acceptance(self, body, accepted)

        def run(token: CancellationToken) -> Coroutine[Any, Any, acp.PromptResponse]:
            turn = prompting.run(self, token, body, parts, acceptance)
            return foreground.run(self, turn, acceptance)

        return self._answered(self.lifecycle.admit(prompt, run))

    def _checked(
        self, prompt: list[acp.ContentBlock]
    ) -> tuple[dict[str, Any], tuple[UserPart, ...]]:
        """A prompt of the user's, checked and converted: its stored body and its parts."""
        if not self.lifecycle.taking_prompts:
            raise SessionNotFound(f"{self.id} is being closed")
        limits.check_nesting("prompt", prompt)  # refused now, never answered unstored
        parts = to_parts(prompt)
        body = {"prompt": prompt, "parts": [transcript.part_to_json(p) for p in parts]}
        body["messageId"] = updates.message_id()  # a load shows the prompt as this message
        limits.check_stored("prompt", body)
        return body, parts

    def steer(
        self, prompt: list[acp.ContentBlock], idle_behavior: str | None
    ) -> acp.SteeringResponse:
        """`_session/steering` (`acp_fsm.steering`): `prompt` joins the running turn, shown
        at once; when no turn can read it any more, it starts one (after those running or
        waiting; its answer nobody awaits: the turn is told by its updates), or nothing is
        done when the client asked to send it itself."""
        body, parts = self._checked(prompt)
        if self.steering.put(steering.Steer(body, parts)):
            self._show(body)
            log.info("turn_steered", session_id=self.id)
            return {"outcome": steering.INJECTED}
        if idle_behavior == steering.PROMPT_REQUIRED:  # no turn can read it: the client's
            return {"outcome": steering.PROMPT_REQUIRED, "reason": steering.NO_RUNNING_TURN}
        self._show(body)
        answer = self._admitted(prompt, body, parts)  # after the turns before it, if any

        def start() -> None:
            self._unawaited(answer)

        self.after_answer(start)
        return {"outcome": steering.STARTED}

    def _unawaited(
        self, answer: Coroutine[Any, Any, acp.PromptResponse], *, steered: bool = True
    ) -> asyncio.Task[acp.PromptResponse]:
        """Run a turn whose answer no request awaits: one a steered message started, whose
        failure the user is told of in the session, or (not `steered`) one of ACP v2, whose
        end its idle state told (`foreground`). Its end and any failure are logged."""

        def ended(task: asyncio.Task[acp.PromptResponse]) -> None:
            self._unanswered.discard(task)
            if task.cancelled():
                return
            if (exc := task.exception()) is not None:
                log.warning("unawaited_turn_failed", session_id=self.id, error=str(exc))
                if steered:  # no request answers it with the error: told in the session
                    told = f"The turn your steered message started failed: {exc}"
                    self.send_update(updates.agent_text(told, updates.message_id()))
            else:
                stop = task.result()["stopReason"]
                log.info("unawaited_turn_ended", session_id=self.id, stop=stop)

        task = asyncio.get_running_loop().create_task(answer)
        self._unanswered.add(task)  # kept until it ends
        task.add_done_callback(ended)
        return task

    def run_acknowledged(
        self, answer: Coroutine[Any, Any, acp.PromptResponse]
    ) -> asyncio.Task[acp.PromptResponse]:
        """Run the turn of a prompt ACP v2 answers once it is stored (`surface_v2`)."""
        return self._unawaited(answer, steered=False)

    def _show(self, body: dict[str, Any]) -> None:
        for update in user_chunks(body["prompt"], body["messageId"]):
            self.send_update(update)

    @staticmethod
    async def _answered(
        admitted: Coroutine[Any, Any, acp.PromptResponse | None],
    ) -> acp.PromptResponse:
        """The prompt's answer: `cancelled` when it was withdrawn before its turn began."""
        answer = await admitted
        return {"stopReason": "cancelled"} if answer is None else answer

    def cancel(self, reason: str = "session/cancel") -> bool:
        """Fire the running turn's token and answer every waiting prompt `cancelled`; False
        (and nothing fired) when no turn runs."""
        return self.lifecycle.cancel(reason)

    def cancel_child(self, child_id: str, reason: str = "session/cancel") -> bool:
        """Stop the work of subagent `child_id` only (`session/cancel` of its child session);
        False when it is not at work."""
        token = self.children.get(child_id)
        return token is not None and token.cancel(reason)

    def cancel_prompt(self, prompt: list[acp.ContentBlock], reason: str) -> bool:
        """`$/cancel_request` for `prompt` (the request's own list), waiting or running."""
        return self.lifecycle.cancel_prompt(prompt, reason)

    async def close(self, reason: str, grace: float) -> None:
        """Close the session (`Lifecycle.close`): then its MCP servers, background commands
        and title call stop."""

        async def stop() -> None:
            await asyncio.gather(self.toolbox.stop(), self.naming.stop(reason, grace))

        await self.lifecycle.close(reason, grace, stop)

    async def instruct(self, prompt: ClientPrompt) -> None:
        """The editor's system prompt, sent with a session setup request: stored when it
        differs from the one in force, and in force from the next prompt."""
        if prompt == self.client_prompt:
            return
        body = client_prompt.to_body(prompt)
        await self.journal.write(client_prompt.ENTRY, body, wait=True, synced=False)
        self.client_prompt = prompt

    # ---------------------------------------------------------------- its turns

    def new_turn(
        self,
        token: CancellationToken,
        found: credentials.InForce,
        command: Command | None = None,
        *,
        read_only: bool = False,
    ) -> Turn:
        """A turn of this session over its ports, under `token`, with the provider
        configuration `found` read for its prompt."""
        from acp_fsm.turn import Turn
        from acp_fsm.turn.ports import TurnContext

        self.steering.open()  # closed when its prompt is answered (`prompting`)
        toolbox = self.toolbox
        context = TurnContext(
            self.id,
            self.roots,
            toolbox.library,
            False,
            self.rejected,
            toolbox.background,
            lambda: self.options.settings,
            toolbox.tools,
            toolbox.status,
            self.client_prompt,
            self.steering,
            self.children,
            self._checkpoint,
            self,
        )
        turn = Turn(
            context,
            self.effects,
            self.journal,
            self.conversation,
            self.budget,
            self.ledger,
            token,
            command,
        )
        turn.provider = found
        turn.read_only = read_only
        return turn

    @property
    def mcp(self) -> McpServers | None:
        """The editor's MCP servers, when it passed any (`toolbox`)."""
        return self.toolbox.mcp

    async def connect_mcp(self, entries: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> None:
        await self.toolbox.connect_mcp(entries)

    # ------------------------------------------------------------ its other parts

    @property
    def provider(self) -> ProviderConfig | None:
        """The provider configuration as last read (`options`)."""
        return self.options.provider

    @property
    def messages(self) -> list[Message]:
        """The conversation as stored."""
        return self.conversation.messages

    def _store_charge(self, charge: pricing.Charge) -> None:
        """A model call's usage entry (`ledger`): queued, not waited for (committed with the
        message the call ends with, queued after it)."""
        # Moved past only under the lease: a title call's, between turns, may follow another
        # process's entries, which a catch-up must still read.
        self.journal.queue(pricing.USAGE_ENTRY, charge.body(), synced=self.lease.held)

    async def settle(self) -> None:
        """Wait until everything queued for this session is committed."""
        await self.journal.settle()

    def after_answer(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the prompt is answered (at once outside a request)."""
        conn = self.server.conn
        if conn.handling_request():
            conn.after_response(callback)
        else:
            callback()

    async def stored(self) -> list[Entry]:
        """Every entry of the session, once all written so far is committed (`History`)."""
        await self.journal.settle()
        return await self.journal.store.entries(self.id)

    async def reload(self) -> None:
        """The conversation read again from the store (`History`: after a rewind)."""
        from acp_fsm.session.replay import rebuild

        entries = await self.stored()
        messages, self.journal.synced_seq = await rebuild(
            self.journal.store, self.id, entries, repair=False
        )
        self.conversation.replace(messages)

    async def _checkpoint(self, bodies: list[dict[str, Any]]) -> None:
        """Store a tool's checkpoints (`acp_fsm.checkpoints`), one per file, committed before
        it writes: queued together, so they share the store's commit."""
        queued = [self.journal.queue(checkpoints.CHECKPOINT, b, required=True) for b in bodies]
        for written in queued:
            await self.journal.commit(checkpoints.CHECKPOINT, written)

    def send_update(
        self, update: acp.SessionUpdate | dict[str, Any], on: str | None = None
    ) -> None:
        """Send `update` on this session, or on its child session `on`."""
        (self.effects if on in (None, self.id) else self.effects.child(on)).send(update)

    async def keep_pace(self) -> None:
        """Wait while the editor reads slower than updates are written."""
        behind = self.effects.pace(None)
        if behind is not None:
            await behind
