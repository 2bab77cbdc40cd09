"""The turn runner: drives the turn machine (`fsm/turn.py`) for one `session/prompt`.

The runner fires a trigger, then does the work of the state it lands in (`_work`): a model call
in `streaming`, permission requests in `awaiting_permission`, tool runs in `running_tools`,
synthetic results in `draining`. Work is awaited here, never inside transition callbacks.
Every wait of the turn is guarded by the session's token, taken when the prompt arrived:
when it fires, the current work ends with `Cancelled` (the stream's connection closes, a
pending client request is released, a running command is killed) and the turn drains.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from acp_fsm import compaction, credentials, redact, results, settings, transcript, updates
from acp_fsm.blocking import Shared
from acp_fsm.client import Client, ClientChannel
from acp_fsm.commands import Command
from acp_fsm.conversation import Conversation
from acp_fsm.fsm.turn import CANCELLABLE, FINAL, TURN, TurnState, TurnTrigger
from acp_fsm.instructions import system_prompt
from acp_fsm.models import CATALOG
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.protocol.errors import (
    InternalError,
    OutboundCancelled,
    OutboundError,
    RpcError,
)
from acp_fsm.providers import open_stream
from acp_fsm.providers.anthropic import THINKING_BUDGETS
from acp_fsm.providers.endpoint import ANTHROPIC, ProviderConfig
from acp_fsm.providers.errors import EMPTY_STREAM, ProviderError, StreamCancelled
from acp_fsm.providers.types import (
    AssistantMessage,
    Finished,
    Message,
    ModelRequest,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)
from acp_fsm.tools.base import Drafts, Tool, ToolCallView, ToolOutcome
from acp_fsm.tools.common import ToolError, describe_os_error
from acp_fsm.warm import aiohttp_imported

if TYPE_CHECKING:
    from acp_fsm.providers.stream import ModelStream

log = structlog.get_logger("turn")

DEFAULT_MAX_TURN_REQUESTS = 50
# An empty 200 stream counts as a refusal for length from this share of the usable window on.
NEAR_WINDOW = 0.5
PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
# The system prompt of turns starting at once in the same directories: read once for them.
_SYSTEM_PROMPT = Shared(system_prompt)


def max_turn_requests() -> int:
    """Model calls allowed per prompt (`ACP_FSM_MAX_TURN_REQUESTS`, default 50)."""
    raw = os.environ.get("ACP_FSM_MAX_TURN_REQUESTS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_TURN_REQUESTS


ACP_STOP = {
    StopReason.END_TURN: "end_turn",
    StopReason.TOOL_USE: "end_turn",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.REFUSAL: "refusal",
}


class TurnFailed(Exception):
    """The turn cannot go on; `error` answers the prompt."""

    def __init__(self, error: RpcError) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(slots=True)
class PendingCall:
    """One tool call of the current assistant message, on its way to a result."""

    call: ToolCallPart
    tool: Tool | None
    view: ToolCallView
    decision: str | None = None  # "allow", "deny" (with `reason`), or None = ask the user
    reason: str = ""
    confined: bool = False  # inside the session's roots (see `Tool.confined`)
    preview: tuple[dict[str, Any], ...] = ()  # the change it will make, shown before asking
    started: bool = False
    result: ToolResultPart | None = None


class Host(Protocol):
    """What a turn needs of its session (`session.Session` is one): where it works, the
    conversation, the store behind it, and the editor."""

    id: str
    cwd: Path
    roots: tuple[Path, ...]
    always: dict[str, bool]  # tool name -> the user's remembered "always" answer
    settings: settings.Settings  # the model, mode and thought level chosen now
    context_drift: int  # tokens the provider counted beyond the last estimate
    context_window: int | None  # the provider's, when it said it is less than configured
    window_guessed: bool  # context_window is only a bound (an empty stream's), not stated

    def model(self, config: ProviderConfig) -> str:
        """The model the next model call uses."""

    @property
    def server(self) -> ClientChannel:
        """The editor, for permission and client requests."""

    @property
    def conversation(self) -> Conversation:
        """The conversation, kept ready for a model call (`messages_for_model`)."""

    def messages_for_model(self) -> tuple[Message, ...]:
        """The conversation to send, repaired."""

    async def tools(self) -> dict[str, Tool]:
        """The tools the model may call now (its MCP servers' included), by name."""

    def take_notices(self) -> list[str]:
        """What the user is still to be told about the session (an MCP server lost)."""

    def tell_once(self, notice: str) -> None:
        """Have the user told `notice` with the next ones, unless the session already did."""

    async def add_assistant(self, message: AssistantMessage, stop_reason: str,
                            views: dict[str, dict[str, Any]], *, wait: bool = True) -> None:
        """Store the model's message (and its tool calls' views)."""

    async def add_result(self, result: ToolResultPart, view: dict[str, Any], *,
                         wait: bool = True) -> None:
        """Store a tool call's result."""

    def mark_cancelled(self) -> None:
        """The last stored assistant message now ends the turn as cancelled."""

    async def compact_to(self, messages: list[Message], body: dict[str, Any]) -> None:
        """Replace the conversation by its compacted form (stored first)."""

    async def add_notice(self, text: str) -> None:
        """Store something the user was told apart from the conversation."""

    async def record_turn_end(self, stop_reason: str) -> None:
        """Store that the turn ended, and why."""

    async def settle(self) -> None:
        """Wait until everything queued is stored."""

    def after_answer(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the prompt is answered (at once outside a prompt)."""

    def send_update(self, update: dict[str, Any]) -> None:
        """Send a `session/update`."""

    def text_sender(self, kind: str) -> Callable[[str], object]:
        """What sends a `kind` chunk of text as a `session/update`, for each streamed delta."""

    @property
    def behind(self) -> bool:
        """The editor is behind: `keep_pace` would wait."""

    async def keep_pace(self, token: CancellationToken | None = None) -> None:
        """Wait while the editor is behind."""


class TurnEnv:
    """The `ToolEnv` of one turn."""

    def __init__(self, session: Host, token: CancellationToken, client: Client,
                 report: Callable[[tuple[dict[str, Any], ...]], None],
                 previewed: tuple[dict[str, Any], ...] = ()) -> None:
        self._session = session
        self._token = token
        self._client = client
        self._report = report
        self._previewed = previewed

    @property
    def cwd(self) -> Path:
        return self._session.cwd

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._session.roots

    @property
    def token(self) -> CancellationToken:
        return self._token

    @property
    def client(self) -> Client:
        return self._client

    @property
    def previewed(self) -> tuple[dict[str, Any], ...]:
        return self._previewed

    def report(self, content: tuple[dict[str, Any], ...]) -> None:
        self._report(content)

    def show_plan(self, entries: list[dict[str, Any]]) -> None:
        self._session.send_update(updates.plan(entries))


class Turn:
    """One prompt turn. `state` is driven by the turn machine."""

    state: str

    def __init__(self, session: Host, token: CancellationToken,
                 command: Command | None = None) -> None:
        self.session = session
        self.token = token
        self.command = command  # a slash command the prompt runs instead of a model turn
        self.state = TURN.initial.value  # moved by the turn machine only (`_fire`)
        self.requests = 0
        self.calls: list[PendingCall] = []
        self.stop_reason = "end_turn"
        self.error: RpcError | None = None
        self.path: list[str] = [self.state]
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._client = Client(session.server, session.id, token)
        # The provider configuration, read when the prompt came (`Session._run_turn`).
        self.provider: credentials.InForce | None = None
        self._tools: dict[str, Tool] = {}  # of the current model call
        self._system: str | None = None  # read once a turn (instruction files may change)
        self._send_as_is = False  # the next model call: compacted once, it is not again
        self._work: dict[str, Callable[[], Awaitable[None]]] = {
            TurnState.STREAMING: self._stream,
            TurnState.COMPACTING: self._compact,
            TurnState.AWAITING_PERMISSION: self._ask_permissions,
            TurnState.RUNNING_TOOLS: self._run_tools,
            TurnState.DRAINING: self._drain,
        }

    def __repr__(self) -> str:
        return (f"<Turn {self.session.id} {self.state} requests={self.requests} "
                f"calls={len(self.calls)} token={self.token!r}>")

    # ------------------------------------------------------------------ driving

    def _fire(self, trigger: TurnTrigger) -> None:
        before = self.state
        TURN.fire(self, trigger.value)
        self.path.append(self.state)
        log.debug("turn_transition", trigger=trigger.value, source=before, dest=self.state)

    def needs_permission(self) -> bool:
        """Guard of `tools_requested`: some call waits for the user's answer."""
        return any(pc.decision is None for pc in self.calls)

    def on_demand(self) -> bool:
        """Guard of `compacted`: the user asked for it (/compact), so the turn ends."""
        return self.command is not None

    async def run(self) -> str:
        """Run to a final state; the ACP stop reason, or raise the RpcError of a failure.
        `path` then holds the states the turn went through."""
        # A cancel that came before the turn started (while its prompt was being stored) is a
        # row of the table: idle --cancel--> cancelled, no model call.
        if self.token.is_cancelled:
            self._fire(TurnTrigger.CANCEL)
        else:
            self._fire(TurnTrigger.START if self.command is None else TurnTrigger.COMPACT)
        while self.state not in FINAL:
            state = self.state
            try:
                await self._work[state]()
            except Cancelled:
                pass  # the token fired; the cancel transition follows
            except (TurnFailed, RpcError) as failure:  # RpcError: the session's own (a write)
                if not self.token.is_cancelled:  # a cancelled prompt is never an error (ACP)
                    await self._fail(failure.error if isinstance(failure, TurnFailed)
                                     else failure)
            except Exception as exc:
                log.exception("turn_work_failed", state=state)
                await self._fail(InternalError(f"Internal error in {state}: {exc}"))
            if self.state in CANCELLABLE and self.token.is_cancelled:
                self._fire(TurnTrigger.CANCEL)
            elif self.state == state and self.state not in FINAL:
                await self._fail(InternalError(f"Internal error: the turn stalled in {state}"))
        await self.session.record_turn_end(self.state_stop_reason)
        log.info("turn_finished", state=self.state, path=" → ".join(self.path),
                 requests=self.requests)
        if self.state == TurnState.FAILED:
            assert self.error is not None
            raise self.error
        return self.state_stop_reason

    @property
    def state_stop_reason(self) -> str:
        if self.state == TurnState.CANCELLED:
            return transcript.CANCELLED
        if self.state == TurnState.FAILED:
            return "error"
        return self.stop_reason

    async def _fail(self, error: RpcError) -> None:
        """The transition first (the table decides whether failing is allowed here), then its
        effects: every open call gets a result."""
        self.error = error
        self._fire(TurnTrigger.FAIL)
        await self._close_calls(lambda pc: transcript.LOST)

    async def _close_calls(self, wording: Callable[[PendingCall], str]) -> None:
        """Give every call still without a result a synthetic one (a cancel, a failure): all
        queued at once, then told together once committed (one wait, not one per call)."""
        open_calls = [pc for pc in self.calls if pc.result is None]
        told = [await self._answer(pc, ToolOutcome(wording(pc), is_error=True), wait=False)
                for pc in open_calls]
        if told:
            await self.session.settle()
        for update in told:
            self._update(update)

    def _update(self, update: dict[str, Any]) -> None:
        self.session.send_update(update)

    # ------------------------------------------------------------------ streaming

    def config(self) -> ProviderConfig:
        """The provider configuration of this turn (the environment, then what `acp-fsm
        login` stored), read once, when its prompt came."""
        found = self.provider
        assert found is not None, "the session reads it before the turn runs"
        if found.config is None:
            raise TurnFailed(InternalError(f"Configuration error: {found.error}"))
        return found.config

    async def _system_prompt(self) -> str:
        """Read once a turn, off the event loop (it reads the project's files); an instruction
        file it did not read is told to the user once a session."""
        if self._system is None:
            prompt = await _SYSTEM_PROMPT(self.token, self.session.cwd,
                                          self.session.roots[1:])
            for skipped in prompt.skipped:
                self.session.tell_once(skipped)
            self._system = prompt.text
        return self._system

    async def _request(self) -> ModelRequest:
        """The next model call, with the session's settings as they are now: the model, the
        thought level, and the tools and instructions of the mode."""
        config = self.config()
        chosen = self.session.settings
        model = self.session.model(config)
        system = await self._system_prompt()
        if chosen.mode == settings.PLAN:
            system = f"{system}\n\n{settings.PLAN_NOTE}"
        return ModelRequest(model=model, messages=self.session.messages_for_model(),
                            system=system, memo=self.session.conversation.memo,
                            tools=tuple(ToolSpec(t.name, t.description, t.input_schema)
                                        for t in self._tools.values()
                                        if settings.offered(chosen.mode, t.kind)),
                            # never more than half the window: a server that counts the
                            # answer's room in (vLLM) refuses the request otherwise
                            max_tokens=min(config.max_tokens, max(1, self._window() // 2)),
                            reasoning=settings.thought_level(chosen, config.provider, model))

    async def _stream(self) -> None:
        self.calls = []
        # The request and its calls see one set; a server slow to list them cannot hold up a
        # cancel.
        self._tools = await self.token.race(self.session.tools())
        await self._system_prompt()  # what it could not read is among the notices
        for notice in self.session.take_notices():  # apart from the answer that follows
            self._notify(notice)
        config = self.config()
        if (described := CATALOG.pending(config)) is not None:  # its models, its window
            await self.token.race(described)
        await self.token.race(aiohttp_imported())  # the first call's, off the loop
        request = await self._request()
        estimate = compaction.estimate(request,
                                       self.session.conversation.size(request.messages))
        reserve = _reserve(request, config)
        if not self._send_as_is and compaction.too_full(
                estimate + self.session.context_drift, self._window(), reserve):
            self._fire(TurnTrigger.COMPACT)
            return
        self.requests += 1
        stream = self._open(request)
        finished: Finished | None = None
        session = self.session
        answer = session.text_sender("agent_message_chunk")
        thought = session.text_sender("agent_thought_chunk")
        try:
            async with stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        answer(event.text)
                    elif isinstance(event, ThinkingDelta):
                        thought(event.text)
                    elif isinstance(event, Finished):
                        finished = event
                    if session.behind:  # the provider waits too
                        await session.keep_pace(self.token)
        except Cancelled as cancelled:  # in the stream, or while the editor was behind
            partial = (cancelled.partial if isinstance(cancelled, StreamCancelled)
                       else stream.partial)
            await self._keep_partial(partial, transcript.CANCELLED)
            raise
        except ProviderError as exc:
            if self._overflowed(exc, estimate, reserve):  # refused whole: nothing streamed
                self._fire(TurnTrigger.COMPACT)
                return
            await self._keep_partial(stream.partial, "error", wait=True)
            raise TurnFailed(self._failure(exc, request, estimate)) from None
        assert finished is not None, "a stream ends with Finished or an exception"
        self._send_as_is = False
        CATALOG.after_call(config, request.model)
        usage = _log_usage(finished, "turn")
        if usage.input_tokens:
            self.session.context_drift = max(0, usage.input_tokens - estimate)
        used = usage.input_tokens + usage.output_tokens
        if used:
            self._update(updates.usage(used, self._window()))
        message = finished.message
        self.calls = [self._pending(call) for call in message.tool_calls]
        views = {pc.call.id: updates.view_body(pc.view) for pc in self.calls}
        await self.session.add_assistant(message, finished.stop_reason.value, views)
        for pc in self.calls:  # stored: announced even if a cancel came meanwhile
            self._update(updates.tool_call(pc.call.id, views[pc.call.id]))
        self.token.raise_if_cancelled()  # a cancel that came with the last token still counts
        if not self.calls:
            self.stop_reason = ACP_STOP[finished.stop_reason]
            if not message.text.strip():  # a role chunk and a stop: the user sees nothing
                await self._tell(_empty_answer(finished.stop_reason))
            self._fire(TurnTrigger.MODEL_DONE)
            return
        await self._preview()
        self._fire(TurnTrigger.TOOLS_REQUESTED)

    def _notify(self, text: str) -> None:
        """Tell the user something apart from the model's answer that follows."""
        self._update(updates.chunk("agent_message_chunk", updates.text_content(text + "\n\n")))

    async def _tell(self, text: str) -> None:
        """Tell the user something of the turn that is not the model's (stored: a load shows
        it again; never sent to the model)."""
        await self.session.add_notice(text)
        self._update(updates.chunk("agent_message_chunk", updates.text_content(text)))

    def _overflowed(self, exc: ProviderError, estimate: int, reserve: int) -> bool:
        """Whether the call was refused for being over the context window, so that compacting
        and sending it again may help (once a model call: a request sent as it is after a
        compaction is not compacted again). An empty 200 stream counts when the request was
        near the window, or the window is only assumed: llama-cpp-python answers so."""
        if self._send_as_is:
            return False
        if exc.error_type == EMPTY_STREAM:
            near = estimate + self.session.context_drift >= NEAR_WINDOW * compaction.usable(
                self._window(), reserve)
            if self._window_known() and not near:
                return False
        elif not exc.context_exceeded:
            return False
        self._learn_window(exc, estimate, reserve)
        return True

    def _failure(self, exc: ProviderError, request: ModelRequest,
                 estimate: int) -> InternalError:
        """The error a failed model call answers the prompt with: one short line, the
        provider's whole message in its data; for a request over the window, what to do."""
        message = str(exc)
        if exc.context_exceeded or exc.error_type == EMPTY_STREAM:
            sizes = (estimate, compaction.fixed_part(request), self._window())
            message = f"{message}. {_too_long(exc, sizes, self._send_as_is)}"
        return InternalError(message, data=_error_data(exc))

    # ---------------------------------------------------------------- compacting

    def _window(self) -> int:
        """The context window: the one a compatible server states for the model (at most
        ACP_FSM_CONTEXT_WINDOW when that is set), else the configured one; less if the
        provider said so when it refused a request."""
        config = self.config()
        window = config.context_window
        stated = CATALOG.window(config, self.session.model(config))
        if stated is not None:
            window = min(window, stated) if config.window_set else stated
        learned = self.session.context_window
        return window if learned is None else min(window, learned)

    def _window_known(self) -> bool:
        """Whether the window is known (set, stated by the server, learned, or the provider's
        own API's) rather than assumed."""
        config = self.config()
        learned = self.session.context_window is not None and not self.session.window_guessed
        return (config.window_set or config.official or learned
                or CATALOG.window(config, self.session.model(config)) is not None)

    def _learn_window(self, exc: ProviderError, estimate: int, reserve: int) -> None:
        """The provider refused a request as too long: what it said of its window and of the
        prompt's size holds for the rest of the session (in memory). Without a maximum, a
        known window stands and the estimate is taken to have fallen short of the server's
        count; an assumed one (or one guessed so before) is taken to be at most this request,
        a guess each later refusal lowers."""
        prompt, maximum = exc.context_sizes
        known = self._window_known()
        if prompt is not None:
            self.session.context_drift = max(self.session.context_drift, prompt - estimate)
        elif maximum is None and known:
            full = int(compaction.usable(self._window(), reserve)) + 1
            self.session.context_drift = max(self.session.context_drift, full - estimate)
        if maximum is not None or not known:
            self.session.context_window = maximum or min(self._window(), estimate)
            self.session.window_guessed = maximum is None
        log.info("context_exceeded", error=str(exc), estimate=estimate, prompt=prompt,
                 maximum=maximum, window=self._window())

    async def _compact(self) -> None:
        """Summarise the older part of the conversation with one model call and keep the
        latest turns as they are (acp_fsm.compaction); store it, then tell the user. Without
        a summary (the call failed, the model wrote none, the system prompt and the tools
        alone fill the window) the older part is dropped instead: the session always goes
        on. The next model call is then sent as it is: a turn never loops here."""
        if not self._tools:  # /compact: no model call of this turn has listed them yet
            self._tools = await self.token.race(self.session.tools())
        request = await self._request()
        window = self._window()
        reserve = _reserve(request, self.config())
        before = compaction.estimate(request) + self.session.context_drift
        parts = compaction.split(list(request.messages), window, reserve,
                                 on_demand=self.command is not None,
                                 budget=compaction.kept_budget(request, window, reserve,
                                                               self.session.context_drift))
        self._send_as_is = True
        if parts is None:
            if self.command is not None:
                await self._tell(compaction.NOTHING_TO_COMPACT)
            self._fire(TurnTrigger.COMPACTED)
            return
        summary, dropped = await self._summary(request, parts.older, window, reserve)
        messages = compaction.replaced(summary, parts.kept)
        after = compaction.estimate(request._replace(messages=tuple(messages)))
        text = compaction.notice(before, after, len(parts.older), dropped)
        if self.command is None:
            text += "\n\n"  # the model's answer follows
        await self.session.compact_to(messages, compaction.to_body(summary, parts.kept, text))
        log.info("context_compacted", before=before, after=after, summarised=len(parts.older),
                 kept=len(parts.kept), dropped=dropped)
        self._update(updates.chunk("agent_message_chunk", updates.text_content(text)))
        self._fire(TurnTrigger.COMPACTED)

    def _open(self, request: ModelRequest) -> ModelStream:
        """Start a model call of this turn (secrets scrubbed from what is sent)."""
        secrets = redact.configured()
        return open_stream(request, self.token, self.config(),
                           scrub=secrets.scrub if secrets else None,
                           close_later=self.session.after_answer)

    async def _summary(self, request: ModelRequest, older: list[Message], window: int,
                       reserve: int) -> tuple[str | None, str | None]:
        """The summary the model writes of `older` (a model call of the turn: counted), or
        None and why there is none. No call is made when the system prompt and the tools
        alone pass the threshold (it could not make the conversation fit, and would be
        made again at every prompt), unless the user asked for it (/compact)."""
        fixed = compaction.fixed_part(request)
        if self.command is None and compaction.too_full(fixed, window, reserve):
            return None, compaction.too_small(fixed, window)
        focus = self.command.argument if self.command is not None else ""
        self.requests += 1
        finished: Finished | None = None
        try:
            async with self._open(compaction.summary_request(request, older, focus,
                                                             window)) as stream:
                async for event in stream:
                    if isinstance(event, Finished):
                        finished = event
        except ProviderError as exc:
            log.warning("summary_failed", error=str(exc))
            return None, f"the summary call failed ({exc})"
        assert finished is not None, "a stream ends with Finished or an exception"
        _log_usage(finished, "summary")
        summary = compaction.summary_of(finished.message)
        return (summary, None) if summary else (None, "the model answered with no summary")

    async def _preview(self) -> None:
        """Show what each call will change (a diff) before anyone is asked to allow it; a call
        that cannot work (its text is not in the file, say) fails now, and nobody is asked.

        Calls are previewed in order against `drafts`, the files as the earlier calls leave
        them. After a call whose effects no preview can show (a command), the rest are not
        previewed: they are shown and run as they come."""
        drafts: Drafts = {}
        for pc in self.calls:
            if pc.tool is None or pc.decision == "deny":
                continue
            problem: str | None = None
            try:
                pc.preview = await pc.tool.preview(pc.call.arguments, self._env(pc.call.id),
                                                   drafts)
            except Cancelled:
                raise
            except ToolError as exc:
                problem = str(exc)
            except OSError as exc:
                problem = describe_os_error(exc)
            except Exception:  # a preview bug must not cost the call: it runs unpreviewed
                log.exception("tool_preview_failed", tool=pc.call.name)
            if problem is not None:
                pc.decision, pc.reason = "deny", problem
            elif pc.preview:
                self._update(updates.tool_call_update(pc.call.id, None,
                                                      content=list(pc.preview)))
            if pc.tool.unpredictable:
                return

    async def _keep_partial(self, partial: AssistantMessage, stop_reason: str, *,
                            wait: bool = False) -> None:
        """Store what was streamed before a cancel or failure (no tool calls: unanswered
        calls of a cut message are dropped, complete ones are never run)."""
        kept = AssistantMessage(tuple(p for p in partial.parts if not isinstance(p, ToolCallPart)))
        if kept.parts:
            await self.session.add_assistant(kept, stop_reason, {}, wait=wait)

    def _pending(self, call: ToolCallPart) -> PendingCall:
        tool = self._tools.get(call.name)
        generic = ToolCallView(title=call.name or "tool call", kind="other",
                               raw_input=call.arguments)
        if call.error is not None:
            return PendingCall(call, tool, generic, "deny",
                               f"Invalid arguments for {call.name}: {call.error}. Call it again "
                               "with a JSON object that matches the tool's schema.")
        mode = self.session.settings.mode
        if tool is None:
            offered = [name for name, t in self._tools.items() if settings.offered(mode, t.kind)]
            return PendingCall(call, None, generic, "deny",
                               f"Unknown tool {call.name!r}. Available tools: "
                               f"{', '.join(offered)}.")
        env = self._env(call.id)
        try:
            problem = tool.validate(call.arguments)
            if problem is None:
                view = tool.view(call.arguments, env)
                asks = tool.needs_permission(call.arguments, env)
                confined = tool.confined(call.arguments, env)
        except Exception as exc:  # a tool bug on odd arguments is the model's error to see
            log.exception("tool_arguments_failed", tool=call.name)
            problem = f"the arguments could not be used ({type(exc).__name__}: {exc})"
        if problem is not None:
            return PendingCall(call, tool, generic, "deny",
                               f"Invalid arguments for {call.name}: {problem}")
        if not settings.offered(mode, tool.kind):
            return PendingCall(call, tool, view, "deny", _planning(call.name))
        pending = PendingCall(call, tool, view, confined=confined)
        if not self._remembered(pending) and (
                not asks or settings.runs_unasked(mode, tool.kind, confined)):
            pending.decision = "allow"
        return pending

    def _remembered(self, pc: PendingCall) -> bool:
        """Apply the user's "always" answer for the call's tool, if any; True when one
        applied. "Always reject" covers every call of the tool; "always allow" only calls
        confined to the session's roots: it never widens the boundary."""
        remembered = self.session.always.get(pc.call.name)
        if remembered is False:
            pc.decision, pc.reason = "deny", _denied(pc.call.name, always=True)
        elif remembered and pc.confined:
            pc.decision = "allow"
        else:
            return False
        return True

    def _env(self, call_id: str, previewed: tuple[dict[str, Any], ...] = ()) -> TurnEnv:
        def report(content: tuple[dict[str, Any], ...]) -> None:
            self._update(updates.tool_call_update(call_id, "in_progress", content=list(content)))

        return TurnEnv(self.session, self.token, self._client, report, previewed)

    # ---------------------------------------------------------------- permission

    async def _ask_permissions(self) -> None:
        for pc in self.calls:
            if pc.decision is not None or self._remembered(pc):  # answered earlier this turn
                continue
            await self._ask(pc)
        self._fire(TurnTrigger.PERMISSIONS_SETTLED)

    async def _ask(self, pc: PendingCall) -> None:
        params = {
            "sessionId": self.session.id,
            "toolCall": updates.tool_call_fields(pc.call.id, updates.view_body(pc.view),
                                                 pc.preview),
            "options": PERMISSION_OPTIONS,
        }
        try:
            answer = await self.session.server.call_client(
                "session/request_permission", params, token=self.token)
        except OutboundCancelled:
            raise Cancelled(self.token.reason or "cancelled") from None
        except OutboundError as exc:
            pc.decision, pc.reason = "deny", _unanswered(pc.call.name, exc)
            return
        outcome = answer["outcome"]
        if outcome["outcome"] == "cancelled":
            if self.token.is_cancelled:
                raise Cancelled(self.token.reason or "cancelled")
            pc.decision = "deny"
            pc.reason = (f"The permission request for this {pc.call.name} call was cancelled "
                         "by the client, so the call was not run.")
            return
        kind = {o["optionId"]: o["kind"] for o in PERMISSION_OPTIONS}.get(outcome["optionId"])
        if kind is None:
            pc.decision = "deny"
            pc.reason = f"The client answered with an unknown option {outcome['optionId']!r}."
            return
        allowed = kind.startswith("allow")
        if kind.endswith("always"):
            self.session.always[pc.call.name] = allowed
        pc.decision = "allow" if allowed else "deny"
        pc.reason = "" if allowed else _denied(pc.call.name, always=kind.endswith("always"))

    # --------------------------------------------------------------------- tools

    async def _run_tools(self) -> None:
        for pc in self.calls:
            if pc.result is not None:
                continue
            if pc.decision != "allow" or pc.tool is None:
                await self._answer(pc, ToolOutcome(pc.reason, is_error=True))
                continue
            pc.started = True
            self._update(updates.tool_call_update(pc.call.id, "in_progress"))
            try:
                outcome = await pc.tool.run(pc.call.arguments,
                                            self._env(pc.call.id, pc.preview))
            except Cancelled:
                raise
            except Exception as exc:  # a tool bug is a tool result, not a turn failure
                log.exception("tool_failed", tool=pc.call.name)
                outcome = ToolOutcome(f"The tool failed unexpectedly: {exc}", is_error=True)
            await self._answer(pc, outcome)  # it finished: its real result is kept
            self.token.raise_if_cancelled()
        self.token.raise_if_cancelled()
        if self.requests >= max_turn_requests():
            self.stop_reason = "max_turn_requests"
            self._fire(TurnTrigger.LIMIT_REACHED)
        else:
            self._fire(TurnTrigger.TOOLS_DONE)

    async def _answer(self, pc: PendingCall, outcome: ToolOutcome, *,
                      wait: bool = True) -> dict[str, Any]:
        """Record a call's result: committed, then told in its final update (commit, then
        tell: a crash one instant later must not lose what the editor was shown as done).
        Without `wait` the result is only queued and the update returned, not sent: the
        caller sends it once the store has caught up (`_close_calls`). A result too large for
        the store or the window is cut down first (`results.bounded`)."""
        outcome = results.bounded(outcome, compaction.result_chars(
            self._window(), self.config().max_tokens))
        output = outcome.output or "(no output)"
        status = "failed" if outcome.is_error else "completed"
        content = list(outcome.content) or [updates.text_block(output)]
        locations = list(outcome.locations) if outcome.locations is not None else None
        result = ToolResultPart(pc.call.id, output, outcome.is_error)
        stored = content if outcome.replay is None else list(outcome.replay)
        await self.session.add_result(result, updates.final_view(status, stored, locations),
                                      wait=wait)
        pc.result = result
        live = content if outcome.replay is None else None  # None: the editor keeps its view
        update = updates.tool_call_update(pc.call.id, status, content=live, locations=locations)
        if wait:
            self._update(update)
        return update

    # ------------------------------------------------------------------ draining

    async def _drain(self) -> None:
        self.session.mark_cancelled()
        await self._close_calls(
            lambda pc: transcript.INTERRUPTED if pc.started else transcript.NOT_STARTED)
        self._fire(TurnTrigger.DRAINED)


def _denied(tool: str, *, always: bool) -> str:
    if always:
        return (f"Denied by the user: they chose to always reject {tool} in this session, so "
                "the call was not run.")
    return (f"Denied by the user: they rejected this {tool} call, so it was not run. Do not "
            "retry it unless they ask.")


def _planning(tool: str) -> str:
    return (f"Not run: the session is in Plan mode, where only read-only tools are available, "
            f"so this {tool} call was refused. Answer with a plan instead; the user switches "
            "mode to carry it out.")


def _unanswered(tool: str, exc: OutboundError) -> str:
    from acp_fsm.protocol.errors import OutboundTimeout

    if isinstance(exc, OutboundTimeout):
        return (f"No response from the user: the permission request for this {tool} call "
                "timed out, so the call was not run.")
    return f"The permission request failed ({exc}), so this {tool} call was not run."


def _empty_answer(stop: StopReason) -> str:
    """What the user is told of an answer with no text and no tool call."""
    if stop is StopReason.MAX_TOKENS:
        return ("The model reached its output limit (ACP_FSM_MAX_TOKENS) before writing any "
                "answer.")
    return "The model returned an empty answer (no text and no tool call)."


def _too_long(exc: ProviderError, sizes: tuple[int, int, int], compacted: bool) -> str:
    """What happened when a request was refused as over the window, and what to do; `sizes`
    are the request's tokens, those of its system prompt and tools, and the window."""
    estimate, fixed, window = sizes
    what = ("Local servers such as llama-cpp-python answer so when a request is longer than "
            "their context window. " if exc.error_type == EMPTY_STREAM else "")
    after = "even after compacting, " if compacted else ""
    alone = (f"; the system prompt and the tools alone take about {fixed:,} of them"
             if fixed * 2 > window else "")
    return (f"{what}The request ({after}about {estimate:,} tokens with the system prompt and "
            f"the tools) did not fit a context window of {window:,} tokens{alone}: run "
            "/compact to summarise more of the conversation, or set ACP_FSM_CONTEXT_WINDOW to "
            "the model's real context size (and start a local server with a larger one)")


def _reserve(request: ModelRequest, config: ProviderConfig) -> int:
    """The room a request keeps for its answer: max_tokens, and Anthropic's thinking budget on
    top of it."""
    if config.provider == ANTHROPIC and request.reasoning:
        return request.max_tokens + THINKING_BUDGETS.get(request.reasoning, 0)
    return request.max_tokens


def _log_usage(finished: Finished, call: str) -> Usage:
    usage = finished.usage
    log.info("model_usage", call=call, input_tokens=usage.input_tokens,
             output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
             cache_write_tokens=usage.cache_write_tokens)
    return usage


def _error_data(exc: ProviderError) -> dict[str, Any]:
    data: dict[str, Any] = {"provider": exc.provider, "retryable": exc.retryable}
    if exc.status is not None:
        data["status"] = exc.status
    if exc.error_type is not None:
        data["type"] = exc.error_type
    if exc.details is not None:
        data["details"] = exc.details
    return data
