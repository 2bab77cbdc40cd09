"""A subagent (the `task` tool): a turn of its own, on the same machine (`Turn`), over a
sub-conversation that starts with the task's prompt and nothing of the session's.

It runs under the calling turn's token, so a cancel reaches its stream and its tools as it
reaches the turn's own. It stands on a `SubagentHost`: the session's directories, settings,
editor and background commands, but its own conversation, kept in memory and stored whole
with the session when it ends (a `subagent` entry). The editor sees one call: each of the
subagent's tool calls becomes a line of that call's content, and its report ends it.
Its tools are the read-only ones (read, search, fetch and MCP tools marked read-only) unless
the session's mode runs everything unasked; it cannot ask the user anything (a call that would
ask is refused and the subagent told why), nor start a subagent of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import environment, settings, transcript, updates
from acp_fsm.conversation import Conversation
from acp_fsm.environment import ELICITATION_METHOD, PERMISSION_METHOD
from acp_fsm.instructions import subagent_prompt
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.protocol.errors import OutboundError, RpcError
from acp_fsm.providers.endpoint import ProviderConfig
from acp_fsm.providers.types import (
    AssistantMessage,
    Message,
    TextPart,
    ToolResultPart,
    ToolResultsMessage,
    UserMessage,
)
from acp_fsm.tools.ask_user import ASK_USER_TOOL
from acp_fsm.tools.base import Tool, ToolOutcome
from acp_fsm.tools.task import TASK_TOOL
from acp_fsm.turn.host import Host
from acp_fsm.turn.model import instructions
from acp_fsm.turn.runner import Turn
from acp_fsm.updates import PLAN_TOOL

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.initialize import ClientInfo
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.settings import Settings
    from acp_fsm.tools.background import BackgroundJobs
    from acp_fsm.updates import ChunkKind

log = structlog.get_logger("turn")

# Never a subagent's: another subagent, and the session's plan (the main model keeps it).
NOT_DELEGATED = frozenset({TASK_TOOL, PLAN_TOOL, ASK_USER_TOOL})  # ask_user: it cannot ask
# Progress lines the call shows at most (the latest; a note counts the others).
MAX_LINES = 60
NO_ASKING = (
    "a subagent cannot ask the user: in this session's mode the call needs their permission. "
    "Say in your report what you could not do, so the agent can do it itself"
)


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
        elif update["sessionUpdate"] == "tool_call_update" and update.get("status") == "failed":
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


class _Unasking:
    """The editor as a subagent reaches it: everything but permission requests and questions."""

    def __init__(self, server: ClientChannel) -> None:
        self._server = server

    @property
    def client(self) -> ClientInfo | None:
        return self._server.client

    def call_client(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None = None,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> asyncio.Future[Any]:
        if method not in (PERMISSION_METHOD, ELICITATION_METHOD):
            return self._server.call_client(
                method, params, token=token, timeout_ms=timeout_ms, verbatim=verbatim
            )
        refused: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        refused.set_exception(OutboundError(NO_ASKING))
        return refused


class SubagentHost:
    """The `Host` of a subagent's turn (see the module's docstring)."""

    def __init__(
        self, parent: Host, progress: Progress, prompt: str, *, read_only: bool = False
    ) -> None:
        self._parent = parent
        self._read_only = read_only  # a read-only turn's (/review): never more than reads
        self._progress = progress
        self._server = _Unasking(parent.server)
        self.id = parent.id
        self.cwd = parent.cwd
        self.roots = parent.roots
        self.always = parent.always  # the user's answers hold (a subagent never adds one)
        self.asks_user = False
        self.budget = parent.budget.subagents(own_model=bool(environment.subagent_model()))
        self.ledger = parent.ledger  # its calls count in the session's
        self.task = UserMessage((TextPart(prompt),))
        self.conversation = Conversation([self.task])
        self.transcript: list[Message] = [self.task]  # all of it, compactions or not
        self.compactions = 0
        self.library = parent.library

    def __repr__(self) -> str:
        return f"<SubagentHost of {self.id} messages={len(self.conversation)}>"

    # the session's, as they are
    @property
    def background(self) -> BackgroundJobs:
        return self._parent.background

    def background_summary(self) -> str:
        return self._parent.background_summary()

    @property
    def settings(self) -> Settings:
        return self._parent.settings

    def model(self, config: ProviderConfig) -> str:
        return environment.subagent_model() or self._parent.model(config)

    @property
    def server(self) -> ClientChannel:
        return self._server

    async def tools(self) -> dict[str, Tool]:
        found = await self._parent.tools()
        return {name: tool for name, tool in found.items() if self._delegated(name, tool)}

    def _delegated(self, name: str, tool: Tool) -> bool:
        """Whether the subagent has `tool`: in Full access, all but `NOT_DELEGATED`;
        otherwise those that change nothing, and a page fetcher the user chose to always
        allow (a subagent cannot ask, and a fetch asks in the other modes)."""
        if name in NOT_DELEGATED:
            return False
        everything = self.settings.mode == settings.FULL_ACCESS and not self._read_only
        if everything or tool.kind in settings.READ_ONLY_KINDS:
            return True
        return tool.kind == "fetch" and self.always.get(name) is True

    def tell_once(self, notice: str) -> None:
        self._parent.tell_once(notice)

    def after_answer(self, callback: Callable[[], None]) -> None:
        self._parent.after_answer(callback)

    @property
    def behind(self) -> bool:
        return self._parent.behind

    async def keep_pace(self, token: CancellationToken | None = None) -> None:
        await self._parent.keep_pace(token)

    def mcp_status(self) -> list[str]:
        return self._parent.mcp_status()

    def record_subagent(self, body: dict[str, Any]) -> None:
        raise AssertionError("a subagent starts no subagent")

    # its own conversation, in memory
    def messages_for_model(self) -> tuple[Message, ...]:
        return self.conversation.for_model()[0]

    def take_notices(self) -> list[str]:
        return []

    async def add_assistant(
        self,
        message: AssistantMessage,
        stop_reason: str,
        views: dict[str, dict[str, Any]],
        *,
        wait: bool = True,
    ) -> None:
        self.conversation.append(message)
        self.transcript.append(message)

    async def add_result(
        self, result: ToolResultPart, view: dict[str, Any], *, wait: bool = True
    ) -> None:
        self.conversation.add_result(result)
        self.transcript.append(ToolResultsMessage((result,)))

    def mark_cancelled(self) -> None:
        pass  # kept as it was streamed; the whole is stored when the subagent ends

    async def compact_to(self, messages: list[Message], body: dict[str, Any]) -> None:
        """The conversation compacted, the task's prompt kept word for word in front (it
        is the subagent's whole task)."""
        self.compactions += 1
        first = messages[0] if messages else None
        if isinstance(first, UserMessage):
            messages = [UserMessage((*self.task.parts, *first.parts)), *messages[1:]]
        else:
            messages = [self.task, *messages]
        self.conversation.replace(messages)
        self.budget.compacted()

    async def add_notice(self, text: str) -> None:
        pass  # for the user of a turn; a subagent's user is the agent

    async def record_turn_end(self, stop_reason: str) -> None:
        pass

    async def settle(self) -> None:
        pass

    # what it shows: its calls, as lines of the task's call
    def send_update(self, update: acp.SessionUpdate) -> None:
        self._progress.seen(update)

    def text_sender(self, kind: ChunkKind) -> Callable[[str], object]:
        return _ignore


def _ignore(text: str) -> None:
    """Streamed text of a subagent: its report is read from its last message instead."""


async def delegate(parent: Turn, call_id: str, description: str, prompt: str) -> ToolOutcome:
    """Run `prompt` in a subagent for call `call_id` of `parent`: its report as the outcome.
    Its tokens count in the parent turn's and the session's; its transcript is stored."""

    def show(content: tuple[acp.ToolCallContent, ...]) -> None:
        parent.update(updates.tool_call_update(call_id, "in_progress", content=list(content)))

    progress = Progress(show)
    host = SubagentHost(parent.session, progress, prompt, read_only=parent.read_only)
    sub = Turn(host, parent.token)
    sub.provider = parent.provider
    sub.system = subagent_prompt(await instructions(parent), parent.session.cwd)
    sub.max_requests = environment.subagent_max_steps()
    sub.subagent = True
    sub.read_only = parent.read_only
    stop: acp.StopReason | None = None
    try:
        stop = await sub.run()
    except RpcError as exc:
        failure = f"The subagent failed: {exc.message}"
        return ToolOutcome(failure, is_error=True, content=progress.content(failure))
    finally:
        parent.spent = parent.spent.plus(sub.spent)
        parent.session.record_subagent(
            {
                "callId": call_id,
                "description": description,
                "stopReason": stop or sub.stop_reason_now,
                "modelCalls": sub.requests,
                "usage": updates.usage_totals(sub.spent),
                "compactions": host.compactions,
                "messages": [
                    transcript.message_to_json(m) for m in transcript.group_results(host.transcript)
                ],
            }
        )
        log.info("subagent_finished", call=call_id, stop=stop, requests=sub.requests)
    if stop == "cancelled":
        raise Cancelled(parent.token.reason or "cancelled")
    report, is_error = _report(host.conversation.messages, stop, sub.requests)
    return ToolOutcome(report, is_error=is_error, content=progress.content(report))


def _report(messages: list[Message], stop: acp.StopReason, requests: int) -> tuple[str, bool]:
    """The subagent's report (its last words), with a note when it stopped short; whether it
    is a failure (no words at all)."""
    said = (m.text.strip() for m in reversed(messages) if isinstance(m, AssistantMessage))
    last = next((text for text in said if text), "")
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
