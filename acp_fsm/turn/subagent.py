"""A subagent (the `task` tool): a turn of its own, on the same machine (`Turn`), over a
sub-conversation that starts with the task's prompt and nothing of the session's.

It runs under a token of its own that the calling turn's fires, so a cancel of the turn
reaches its stream and its tools as it reaches the turn's own, and a `session/cancel` of its
child session stops it alone (the turn goes on with what it reported). It stands on ports of
its own (`turn.ports`): the session's directories, settings and background commands
(`task_context`), the editor as a subagent may reach it, its own conversation
(`TaskConversation`), its entries kept in memory (`turn.child_session.Collected`) and stored
whole with the session when it ends (a `subagent` entry), its own context budget, and the
session's ledger, in which its calls count.

An editor that shows subagents as child sessions (`clientCapabilities.subagents`) sees it as
one (`turn.child_session`); to another, it is one call: each of the subagent's tool calls
becomes a line of that call's content (`TaskEffects`), and its report ends it. Its tools are
the read-only ones (read, search, fetch and MCP tools marked read-only) unless the session's
mode runs everything unasked; it cannot ask the user a question, nor for permission unless it
is a child session the request names (a call that would ask is refused and the subagent told
why), nor start a subagent of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import child_sessions, config_options, env_vars, methods, updates, user_settings
from acp_fsm.blocking import run_blocking
from acp_fsm.conversation import Conversation
from acp_fsm.errors import DomainError
from acp_fsm.instructions import SystemPrompt, subagent_prompt
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.providers.types import (
    AssistantMessage,
    Message,
    TextPart,
    ToolResultPart,
    ToolResultsMessage,
    UserMessage,
)
from acp_fsm.steering import Inbox
from acp_fsm.tools.ask_user import ASK_USER_TOOL
from acp_fsm.tools.base import Tool, ToolOutcome
from acp_fsm.tools.task import TASK_TOOL
from acp_fsm.turn.child_session import ChildSession, Collected, Reach
from acp_fsm.turn.model_call import instructions
from acp_fsm.turn.ports import Effects, TurnContext
from acp_fsm.turn.runner import Turn
from acp_fsm.updates import PLAN_TOOL

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.config_options import Settings
    from acp_fsm.initialize import ClientInfo
    from acp_fsm.permission_rules import Rules
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.updates import ChunkKind

log = structlog.get_logger("turn")

# Never a subagent's: another subagent, and the session's plan (the main model keeps it).
NOT_DELEGATED = frozenset({TASK_TOOL, PLAN_TOOL, ASK_USER_TOOL})  # ask_user: it cannot ask
# Progress lines the call shows at most (the latest; a note counts the others).
MAX_LINES = 60
# The statuses a call shown in the task's progress is marked "(failed)" for: the cancel's
# `cancelled` too, as v1 says it (`acp_fsm.dialects`).
ENDED_BADLY = frozenset({"failed", "cancelled"})


class Progress:
    """What the subagent is doing, as the lines of its call's content: one per tool call it
    makes (its title), marked when the call fails."""

    def __init__(self, show: Callable[[tuple[acp.ToolCallContent, ...]], None]) -> None:
        self._show = show
        self._lines: list[str] = []
        self._at: dict[str, int] = {}  # call id -> its line (the latest call of that id)

    def seen(self, update: acp.SessionUpdate) -> None:
        """Follow one of the subagent's updates (the others are its own business)."""
        if update["sessionUpdate"] == "tool_call":
            self._at[update["toolCallId"]] = len(self._lines)
            self._lines.append(f"• {update['title']}")
        elif update["sessionUpdate"] == "tool_call_update" and update.get("status") in ENDED_BADLY:
            call = update["toolCallId"]
            at = self._at.get(call)
            if at is not None and not self._lines[at].endswith(" (failed)"):
                self._lines[at] += " (failed)"
        else:
            return
        self._show(self.content())

    def content(self, report: str | None = None) -> tuple[acp.ToolCallContent, ...]:
        lines = self._lines
        if len(lines) > MAX_LINES:
            lines = [f"… {len(lines) - MAX_LINES + 1:,} earlier calls", *lines[-MAX_LINES + 1 :]]
        blocks = [updates.text_block("\n".join(lines))] if lines else []
        if report is not None:
            blocks.append(updates.text_block(report))
        return tuple(blocks)


class TaskEffects:
    """A subagent's `Effects`: its updates become lines of the task's call (`Progress`), its
    streamed text is not shown (its report is read from its last message), the editor cannot
    be asked anything, and the user is told nothing of its own."""

    def __init__(self, parent: Effects, progress: Progress) -> None:
        self._parent = parent
        self._client = Reach(parent.client)
        self._progress = progress

    @property
    def client(self) -> ClientChannel:
        return self._client

    @property
    def session_id(self) -> str:
        return self._parent.session_id

    def child(self, session_id: str) -> Effects:
        return self._parent.child(session_id)

    def send(self, update: acp.SessionUpdate) -> None:
        self._progress.seen(update)

    def text_sender(self, kind: ChunkKind, message_id: str) -> Callable[[str], object]:
        return _ignore

    def pace(self, token: CancellationToken | None) -> Awaitable[None] | None:
        return self._parent.pace(token)  # its progress goes out on the session's updates

    def notices(self, found: Iterable[str] = ()) -> list[str]:
        return []


class TaskConversation(Conversation):
    """A subagent's conversation: its task's prompt first, kept word for word in front when
    it is compacted (it is the subagent's whole task); every message it had, compacted or
    not, in `transcript`."""

    def __init__(self, prompt: str) -> None:
        self.task = UserMessage((TextPart(prompt),))
        super().__init__([self.task])
        self.transcript: list[Message] = [self.task]
        self.compactions = 0

    def __repr__(self) -> str:
        return f"<TaskConversation messages={len(self)} compactions={self.compactions}>"

    def append(self, message: Message) -> None:
        super().append(message)
        self.transcript.append(message)

    def add_result(self, result: ToolResultPart) -> None:
        super().add_result(result)
        self.transcript.append(ToolResultsMessage((result,)))

    def compacted(self, messages: Iterable[Message]) -> None:
        self.compactions += 1
        kept = list(messages)
        first = kept[0] if kept else None
        if isinstance(first, UserMessage):
            kept = [UserMessage((*self.task.parts, *first.parts)), *kept[1:]]
        else:
            kept = [self.task, *kept]
        self.replace(kept)


def task_context(parent: TurnContext, *, read_only: bool) -> TurnContext:
    """A subagent's context: its session's directories, commands, answers and background
    commands; its own model when `ACP_FSM_SUBAGENT_MODEL` names one; its own tools: all but
    `NOT_DELEGATED` in Full access (a read-only turn's never more than reads), else those that
    change nothing and a page fetcher once the user's rules allow some fetches (a subagent
    cannot ask, and a fetch no rule allows asks in the other modes)."""
    own_model = env_vars.subagent_model()

    def chosen() -> Settings:
        found = parent.settings()
        return found._replace(model=own_model) if own_model else found

    def delegated(name: str, tool: Tool, rules: Rules | None) -> bool:
        if name in NOT_DELEGATED:
            return False
        everything = chosen().mode == config_options.FULL_ACCESS and not read_only
        if everything or tool.kind in config_options.READ_ONLY_KINDS:
            return True
        return tool.kind == "fetch" and rules is not None and rules.grants(name)

    read: list[Rules] = []  # the user's rules, read at the subagent's first listing only

    async def tools() -> dict[str, Tool]:
        found = await parent.tools()
        if not read and any(tool.kind == "fetch" for tool in found.values()):
            read.append((await run_blocking(None, user_settings.read, parent.roots[0])).rules)
        rules = read[0] if read else None
        return {name: tool for name, tool in found.items() if delegated(name, tool, rules)}

    return replace(parent, subagent=True, settings=chosen, tools=tools, steering=Inbox())


def _ignore(text: str) -> None:
    """Streamed text of a subagent: its report is read from its last message instead."""


async def delegate(parent: Turn, call_id: str, description: str, prompt: str) -> ToolOutcome:
    """Run `prompt` in a subagent for call `call_id` of `parent`: its report as the outcome.
    Its tokens count in the parent turn's and the session's; its transcript is stored."""
    child = child_sessions.child_id(parent.context.session_id)
    client = parent.effects.client.client
    progress = Progress(lambda content: _show(parent, call_id, content))
    shown = ChildSession(parent.effects, child) if _shows(client) else None
    token = CancellationToken(child)  # fired by the turn's, or by a cancel of the child alone
    unlink = parent.token.on_cancel(lambda: token.cancel(parent.token.reason or "cancelled"))
    parent.context.children[child] = token
    conversation = TaskConversation(prompt)
    entries = Collected()
    effects = shown.effects if shown else TaskEffects(parent.effects, progress)
    sub = await _sub_turn(parent, effects, entries, conversation, token)
    if shown:
        shown.open(description, prompt, lambda link: _show(parent, call_id, (link,)))
    try:
        stop: acp.StopReason = await sub.run()
    except DomainError as exc:
        report, is_error, ended = f"The subagent failed: {exc.message}", True, _failed(exc)
    except BaseException:  # the turn's own end (its task cancelled): the child's too
        if shown:
            shown.close("", child_sessions.idle("cancelled"))
        raise
    else:
        if stop == "cancelled" and not parent.token.is_cancelled:
            report, is_error = _stopped(conversation.messages), True
        else:
            report, is_error = _report(conversation.messages, stop, sub.requests)
        ended = child_sessions.idle(stop)
    finally:
        unlink()
        parent.context.children.pop(child, None)
        parent.spent = parent.spent.plus(sub.spent)
    # A cancelled turn is told nothing more: its subagent's report goes nowhere.
    told = "" if parent.token.is_cancelled else report
    if shown:
        shown.close(told, ended)
    ids = (shown.prompt_ids, shown.report_ids) if shown else None
    body = {"callId": call_id, "sessionId": child, "description": description, "prompt": prompt}
    # Queued, not waited for: what the editor is told rests on the call's result.
    kept = _record(sub, conversation, told, ended, entries, ids)
    parent.entries.queue("subagent", {**body, **kept})
    log.info("subagent_finished", call=call_id, child=child, stop=ended["stopReason"])
    if ended["stopReason"] == "cancelled" and parent.token.is_cancelled:
        raise Cancelled(parent.token.reason or "cancelled")
    content = (child_sessions.reference(child),) if shown else progress.content()
    return ToolOutcome(report, is_error=is_error, content=(*content, updates.text_block(report)))


async def _sub_turn(
    parent: Turn,
    effects: Effects,
    entries: Collected,
    conversation: TaskConversation,
    token: CancellationToken,
) -> Turn:
    """The subagent's turn, on its own ports, under `token`."""
    sub = Turn(
        task_context(parent.context, read_only=parent.read_only),
        effects,
        entries,
        conversation,
        parent.budget.subagents(own_model=bool(env_vars.subagent_model())),
        parent.ledger,  # its calls count in the session's
        token,
        open_stream=parent.open_stream,
    )
    sub.provider = parent.provider
    sub.closers = parent.closers  # a stream its cancel cut, closed once the prompt is answered
    text = subagent_prompt(await instructions(parent), parent.context.roots[0])
    sub.system = SystemPrompt(text, [])
    sub.max_requests = env_vars.subagent_max_steps()
    sub.read_only = parent.read_only
    return sub


def _record(
    sub: Turn,
    conversation: TaskConversation,
    report: str,
    ended: acp.StateUpdateIdle,
    entries: Collected,
    ids: tuple[tuple[str, str], tuple[str, str]] | None,
) -> dict[str, Any]:
    """What the `subagent` entry keeps of how the subagent ran: its report and end, the ids
    of its messages with its parent (new ones when the editor was shown none: a load may
    show them), its calls, tokens and compactions, and its own entries (a load replays them
    as its child session's)."""
    prompt_ids, report_ids = ids or (child_sessions.message_ids(), child_sessions.message_ids())
    return {
        "report": report,
        "stopReason": ended["stopReason"],
        **({"error": ended["error"]} if "error" in ended else {}),
        "messageIds": {"prompt": list(prompt_ids), "report": list(report_ids)},
        "modelCalls": sub.requests,
        "usage": updates.usage_totals(sub.spent),
        "compactions": conversation.compactions,
        "entries": entries.items,
    }


def _shows(client: ClientInfo | None) -> bool:
    """Whether the editor shows subagents as child sessions."""
    return client is not None and client.shows_subagents


def _show(parent: Turn, call_id: str, content: tuple[acp.ToolCallContent, ...]) -> None:
    """What the task's call shows while its subagent works."""
    parent.update(updates.tool_call_update(call_id, "in_progress", content=list(content)))


def _failed(failure: DomainError) -> acp.StateUpdateIdle:
    """The child's state once `failure` ended its work: the error, as a request would get it."""
    error = methods.answer(failure).to_error()
    return child_sessions.idle("error", {"code": error["code"], "message": error["message"]})


def _stopped(messages: list[Message]) -> str:
    """The report of a subagent the user stopped alone: what it had said by then."""
    said = _last_words(messages)
    note = "The user stopped this subagent before it finished."
    return f"{note} What it had said by then:\n\n{said}" if said else f"{note} It reported nothing."


def _last_words(messages: list[Message]) -> str:
    """The subagent's last words ("" when it said nothing)."""
    said = (m.text.strip() for m in reversed(messages) if isinstance(m, AssistantMessage))
    return next((text for text in said if text), "")


def _report(messages: list[Message], stop: acp.StopReason, requests: int) -> tuple[str, bool]:
    """The subagent's report (its last words), with a note when it stopped short; whether it
    is a failure (no words at all)."""
    last = _last_words(messages)
    note = {
        "max_turn_requests": (
            f"The subagent stopped after {requests} model calls (ACP_FSM_SUBAGENT_MAX_STEPS) "
            "before it finished."
        ),
        "max_tokens": "The subagent's last answer was cut at the output limit.",
        "refusal": "The model refused to go on with the subagent's task.",
    }.get(stop)
    if not last:
        return (note or "The subagent ended without a report.") + " It reported nothing.", True
    return (f"{last}\n\n({note})" if note else last), False
