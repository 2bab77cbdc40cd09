"""The turn runner: the one place that moves a turn's machine (`fsm/turn.py`).

Each state's work (`WORK`: a module of this package each) runs to its end and returns the
trigger it ends with; the runner fires it, with the table's guards as predicates of the turn.
Work is awaited here, never inside a transition. Every wait of the turn is guarded by the
session's token, taken when the prompt arrived: when it fires, the current work ends with
`Cancelled` (the stream's connection closes, a pending client request is released, a
running command is killed), the runner fires `cancel` and the turn drains.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import config_options, credentials, transcript, updates
from acp_fsm.client import Client
from acp_fsm.commands import REPORTS, Command
from acp_fsm.context_budget import ContextBudget
from acp_fsm.conversation import Conversation
from acp_fsm.errors import DomainError, TurnFailed
from acp_fsm.fsm.machine import Guard
from acp_fsm.fsm.tool_call import ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import (
    CANCELLABLE,
    FINAL,
    NEEDS_PERMISSION,
    ON_DEMAND,
    STEERED,
    TURN,
    TurnState,
    TurnTrigger,
)
from acp_fsm.hooks import Hooks
from acp_fsm.ledger import Ledger
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.providers import open_stream
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.types import Usage
from acp_fsm.tools.base import Tool, ToolOutcome
from acp_fsm.turn import (
    compacting,
    draining,
    permission,
    reporting,
    running_tools,
    storing,
    streaming,
)
from acp_fsm.turn.calls import PendingCall, close_open
from acp_fsm.turn.ports import (
    Effects,
    Entries,
    OpenModelCall,
    TurnContext,
    TurnEnv,
)

if TYPE_CHECKING:
    from acp_fsm.instructions import SystemPrompt
    from acp_fsm.permission_rules import Rules
    from acp_fsm.schemas import acp_types as acp

log = structlog.get_logger("turn")

Work = Callable[["Turn"], Awaitable[TurnTrigger]]
# What is done in each working state; it returns the trigger it ends with.
WORK: dict[TurnState, Work] = {
    TurnState.STREAMING: streaming.stream,
    TurnState.COMPACTING: compacting.compact,
    TurnState.REPORTING: reporting.report,
    TurnState.AWAITING_PERMISSION: permission.ask_permissions,
    TurnState.RUNNING_TOOLS: running_tools.run_tools,
    TurnState.DRAINING: draining.drain,
}


class Turn:
    """One prompt turn: its machine's state, and what the work of its states shares. It stands
    on its ports (`turn.ports`, docs/architecture.md): the context, the effects, the entries,
    the conversation, the context budget and the ledger."""

    def __init__(
        self,
        context: TurnContext,
        effects: Effects,
        entries: Entries,
        conversation: Conversation,
        budget: ContextBudget,
        ledger: Ledger,
        token: CancellationToken,
        command: Command | None = None,
        *,
        open_stream: OpenModelCall = open_stream,
    ) -> None:
        self.context = context
        self.effects = effects
        self.entries = entries
        self.conversation = conversation
        self.budget = budget
        self.ledger = ledger
        self.open_stream = open_stream  # how its model calls start
        self.token = token
        self.command = command  # a slash command the prompt runs instead of a model turn
        self.state = TurnState(TURN.initial)  # moved by `_fire` only
        self.requests = 0  # model calls made
        self.max_requests = running_tools.max_turn_requests()  # and allowed
        self.spent = Usage()  # the tokens of its model calls (its subagents' included)
        self.calls: list[PendingCall] = []  # of the current assistant message
        self.stop_reason: acp.StopReason = "end_turn"  # when the turn ends done
        self.error: DomainError | None = None
        self.path: list[str] = [self.state.value]
        self.client = Client(effects.client, effects.session_id, token)
        # The provider configuration, read when the prompt came (`session.prompting`).
        self.provider: credentials.InForce | None = None
        self.tools: dict[str, Tool] = {}  # of the current model call
        self.system: SystemPrompt | None = None  # read once a turn (the files may change)
        self.rules: Rules | None = None  # the user's permission rules, read once a turn too
        self.hooks = Hooks()  # the user's hooks, read with the rules
        self.went_on = 0  # times a Stop hook had the model go on (`hooking.goes_on`)
        self.halted: str | None = None  # a hook's `continue: false`: why the turn stops
        self.rewound: dict[str, Any] | None = None  # what `/rewind` did, for the response
        self.read_only = False  # this turn has the read-only tools only, whatever the mode
        # Its last stored assistant message: (its pending or done write, its body).
        self.last_assistant: tuple[asyncio.Future[int], dict[str, Any]] | None = None
        # The ids of its current model call's answer and thought ("text", "thinking": ACP's
        # messageId), stored with the message.
        self.message_ids: dict[str, str] = {}
        # What to close once the prompt is answered (a model call's response cut by a cancel:
        # closing its socket is not on the way to the answer).
        self.closers: list[Callable[[], None]] = []
        self._guards: dict[Guard, Callable[[], bool]] = {
            NEEDS_PERMISSION: self._needs_permission,
            ON_DEMAND: lambda: self.command is not None,
            STEERED: self.context.steering.waiting,
        }

    def __repr__(self) -> str:
        return (
            f"<Turn {self.context.session_id} {self.state} requests={self.requests} "
            f"calls={len(self.calls)} token={self.token!r}>"
        )

    # ------------------------------------------------------------------ driving

    def _fire(self, trigger: TurnTrigger) -> None:
        before = self.state
        self.state = TurnState(TURN.step(self.state, trigger, self._guards))
        self.path.append(self.state.value)
        log.debug(
            "turn_transition", trigger=trigger.value, source=before.value, dest=self.state.value
        )

    @property
    def mode(self) -> str:
        """The mode the turn works in: Plan's tools for a read-only turn (/review)."""
        return config_options.PLAN if self.read_only else self.context.settings().mode

    def _needs_permission(self) -> bool:
        """Guard of `tools_requested`: some call waits for the user's answer."""
        return any(pc.state == ToolCallState.PENDING for pc in self.calls)

    async def run(self) -> acp.StopReason:
        """Run to a final state; the ACP stop reason, or raise the failure (a `DomainError`).
        `path` then holds the states the turn went through."""
        # A cancel that came before the turn started (while its prompt was being stored) is a
        # row of the table: idle --cancel--> cancelled, no model call.
        if self.token.is_cancelled:
            self._fire(TurnTrigger.CANCEL)
        else:
            self._fire(self._first_trigger())
        while self.state not in FINAL:
            await self._step()
        await storing.write(self, "turn_end", {"stopReason": self.stop_reason_now}, wait=False)
        log.info(
            "turn_finished",
            state=self.state.value,
            path=" → ".join(self.path),
            requests=self.requests,
        )
        if self.state == TurnState.FAILED:
            assert self.error is not None
            raise self.error
        return "cancelled" if self.state == TurnState.CANCELLED else self.stop_reason

    def _first_trigger(self) -> TurnTrigger:
        """A model call, or the command the prompt is (`/compact`, `/status`, `/mcp`)."""
        if self.command is None:
            return TurnTrigger.START
        return TurnTrigger.REPORT if self.command.name in REPORTS else TurnTrigger.COMPACT

    async def _step(self) -> None:
        """The work of the state the turn is in, then the transition it ends with: `cancel`
        when the token fired meanwhile, `fail` when the work could not go on."""
        state = self.state
        try:
            self._fire(await WORK[state](self))
        except Cancelled:
            pass  # the token fired; the cancel transition follows
        except DomainError as failure:  # the turn's own, or the session's (a write refused)
            if not self.token.is_cancelled:  # a cancelled prompt is never an error (ACP)
                await self._fail(failure)
        except Exception as exc:
            log.exception("turn_work_failed", state=state.value)
            await self._fail(TurnFailed(f"Internal error in {state.value}: {exc}"))
        if self.state in CANCELLABLE and self.token.is_cancelled:
            self._fire(TurnTrigger.CANCEL)

    @property
    def stop_reason_now(self) -> str:
        if self.state == TurnState.CANCELLED:
            return transcript.CANCELLED
        if self.state == TurnState.FAILED:
            return "error"
        return self.stop_reason

    async def _fail(self, error: DomainError) -> None:
        """The transition first (the table decides whether failing is allowed here), then its
        effects: every open call gets a result."""
        self.error = error
        self._fire(TurnTrigger.FAIL)
        await close_open(self, lambda pc: transcript.LOST, ToolCallTrigger.ABANDON)

    # ---------------------------------------------------- what the work shares

    def compactions(self) -> int:
        """How many times the model call under way was compacted first: the compactions
        since the last model call that was answered (read from the path)."""
        count = 0
        for state in reversed(self.path):
            if state == TurnState.COMPACTING:
                count += 1
            elif state != TurnState.STREAMING:
                break
        return count

    def config(self) -> ProviderConfig:
        """The provider configuration of this turn (the environment, then what `acp-fsm
        login` stored), read once, when its prompt came."""
        found = self.provider
        assert found is not None, "the session reads it before the turn runs"
        if found.config is None:
            raise TurnFailed(f"Configuration error: {found.error}")
        return found.config

    def env(
        self,
        call_id: str,
        previewed: tuple[acp.ToolCallContent, ...] = (),
        locations: tuple[acp.ToolCallLocation, ...] = (),
    ) -> TurnEnv:
        """What the tool of call `call_id` sees of the turn (running: what it showed and where
        it said it acts when the user was asked)."""

        def report(content: tuple[acp.ToolCallContent, ...]) -> None:
            self.update(updates.tool_call_update(call_id, "in_progress", content=list(content)))

        async def delegate(description: str, prompt: str) -> ToolOutcome:
            from acp_fsm.turn import subagent  # with the first task call

            return await subagent.delegate(self, call_id, description, prompt)

        return TurnEnv(
            self.context,
            self.effects.send,
            self.token,
            self.client,
            report,
            delegate,
            previewed,
            call_id,
            locations,
        )

    def update(self, update: acp.SessionUpdate) -> None:
        self.effects.send(update)

    def notify(self, text: str) -> None:
        """Tell the user something apart from the model's answer that follows: a `notice`
        for a client that shows them, else text before the answer."""
        self.update(updates.told(self.effects.client.client, text))

    async def tell(self, text: str) -> None:
        """Tell the user something of the turn that is not the model's (stored: a load shows
        it again; never sent to the model)."""
        message_id = updates.message_id()
        await storing.add_notice(self, text, message_id)
        self.update(updates.agent_text(text, message_id))
