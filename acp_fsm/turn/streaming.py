"""`streaming`: one model call. Deltas become message and thought chunks, the finished message
is stored and its tool calls announced (pending), previewed and classified; the trigger says
what follows: the calls, the end of the turn, or a compaction first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import compaction, credentials, pricing, transcript, updates
from acp_fsm.blocking import run_blocking
from acp_fsm.call_modes import AUTO, CALL_MODES, NATIVE
from acp_fsm.errors import TurnFailed
from acp_fsm.fsm.tool_call import ToolCallState
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.llm_providers import EDITOR
from acp_fsm.model_catalog import CATALOG
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.providers.errors import EMPTY_STREAM, ProviderError, StreamCancelled
from acp_fsm.providers.types import (
    AssistantMessage,
    Finished,
    ModelRequest,
    StopReason,
    TextDelta,
    ThinkingDelta,
    ToolCallPart,
)
from acp_fsm.tools.base import Drafts
from acp_fsm.tools.common import ToolError, describe_os_error
from acp_fsm.turn import hooking, storing, written_calls
from acp_fsm.turn.calls import classify
from acp_fsm.turn.compacting import cut
from acp_fsm.turn.model_call import (
    charge,
    instructions,
    known,
    open_call,
    open_room,
    request,
    reserve,
    settings,
    window,
)
from acp_fsm.turn.written_calls import WrittenCalls
from acp_fsm.warm import aiohttp_imported

if TYPE_CHECKING:
    from acp_fsm.providers.config import ProviderConfig
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")

ACP_STOP: dict[StopReason, acp.StopReason] = {
    StopReason.END_TURN: "end_turn",
    StopReason.TOOL_USE: "end_turn",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.REFUSAL: "refusal",
}


async def stream(turn: Turn) -> TurnTrigger:
    turn.calls = []
    for steered in turn.context.steering.take():  # after the last calls' results: in order
        await storing.add_user(turn, steered.body, steered.parts)
    found = turn.provider
    if found is not None and found.endpoint != EDITOR.version and not turn.context.subagent:
        turn.provider = await turn.token.race(credentials.read())  # the editor's new endpoint
    # The request and its calls see one set; a server slow to list them cannot hold up a
    # cancel.
    turn.tools = await turn.token.race(turn.context.tools())
    await instructions(turn)
    assert turn.system is not None
    unread = [*turn.system.skipped, *(await settings(turn)).problems]
    for notice in turn.effects.notices(unread):  # apart from the answer
        turn.notify(notice)
    config = turn.config()
    if (described := CATALOG.pending(config)) is not None:  # its models, its window
        await turn.token.race(described)
    await turn.token.race(aiohttp_imported())  # the first call's, off the loop
    model_request = await request(turn)
    estimate = compaction.estimate(model_request, turn.conversation.size(model_request.messages))
    room = reserve(model_request, config)
    budget = turn.budget
    if not turn.compactions() and budget.too_full(estimate, window(turn), room):
        return TurnTrigger.COMPACT
    model_request = open_room(model_request, config, window(turn), budget.tokens(estimate))
    turn.requests += 1
    streamed = await _streamed(turn, model_request, estimate, room)
    if streamed is None:
        return TurnTrigger.COMPACT
    finished, looped = streamed
    CATALOG.after_call(config, model_request.model)
    usage = await charge(turn, finished, model_request.model, "turn")
    used = budget.counted(usage.input_tokens, usage.output_tokens, estimate)
    if used:
        turn.update(updates.usage(used, window(turn), pricing.to_acp(turn.ledger.cost)))
    return await _finish(turn, finished, looped)


async def _streamed(
    turn: Turn, model_request: ModelRequest, estimate: int, room: int
) -> tuple[Finished, str] | None:
    """Stream the call to the editor; its end and how it looped ("" when it did not: see
    `WrittenCalls.looping`), or None when the provider refused it as over the window before
    anything streamed (a compaction may help)."""
    model_stream = open_call(turn, model_request)
    finished: Finished | None = None
    effects = turn.effects
    turn.message_ids = {"text": updates.message_id(), "thinking": updates.message_id()}
    answer = effects.text_sender("agent_message_chunk", turn.message_ids["text"])
    thought = effects.text_sender("agent_thought_chunk", turn.message_ids["thinking"])
    config = turn.config()
    mode = CALL_MODES.mode(config, model_request.model)
    reads = written_calls.applies(model_request, mode)
    written = (
        WrittenCalls(model_request.tools, deciding=mode.kind == AUTO, loops=mode.kind != NATIVE)
        if reads
        else None
    )
    try:
        async with model_stream:
            async for event in model_stream:
                if isinstance(event, TextDelta):
                    if text := event.text if written is None else written.feed(event.text):
                        answer(text)
                    if written is not None and written.looping:  # its limit comes now
                        event = Finished(StopReason.MAX_TOKENS, model_stream.partial)
                if isinstance(event, ThinkingDelta):
                    thought(event.text)
                elif isinstance(event, Finished):
                    if written is not None:
                        rest, event = written.finish(event)
                        if rest:
                            answer(rest)
                    finished = event
                if (behind := effects.pace(turn.token)) is not None:  # the provider waits too
                    await behind
                if finished is not None and written is not None and written.looping:
                    break  # the server stops generating when the stream is closed
    except Cancelled as cancelled:  # in the stream, or while the editor was behind
        partial = (
            cancelled.partial if isinstance(cancelled, StreamCancelled) else model_stream.partial
        )
        # what was held back as a call in the making was never shown: it is not kept either
        kept = partial if written is None else written.as_shown(partial)
        await keep_partial(turn, kept, transcript.CANCELLED)
        raise
    except ProviderError as exc:
        if _overflowed(turn, exc, model_request, estimate, room):  # refused whole: nothing streamed
            return None
        partial = model_stream.partial
        kept = partial if written is None else written.as_shown(partial)
        await keep_partial(turn, kept, "error", wait=True)
        raise _failure(turn, exc, model_request, estimate) from None
    assert finished is not None, "a stream ends with Finished or an exception"
    if written is None:
        return finished, ""
    await _observed(config, model_request.model, written)
    if written.looping:
        log.warning("answer_looped", model=model_request.model, how=written.looping)
    return finished, written.looping


async def _observed(config: ProviderConfig, model: str, written: WrittenCalls) -> None:
    """An answer read for written calls: it decides the model's mode if none is yet, and
    the decision is kept for the next sessions (a failure to keep it only costs them the
    decision)."""
    decided = CALL_MODES.observe(config, model, written.native, written.formats)
    if decided is None:
        return
    log.info("call_mode_decided", model=model, mode=decided, formats=written.formats)
    try:
        await run_blocking(None, CALL_MODES.save)
    except OSError as exc:
        log.warning("call_mode_not_kept", error=str(exc))


async def _finish(turn: Turn, finished: Finished, looped: str) -> TurnTrigger:
    """Store the model's message, announce its calls and decide what follows (`looped`: how
    the answer repeated itself, when it was stopped for it)."""
    message = finished.message
    turn.calls = [classify(turn, call) for call in message.tool_calls]
    views = {pc.call.id: updates.view_body(pc.view, pc.call.name) for pc in turn.calls}
    await storing.add_assistant(turn, message, finished.stop_reason.value, views)
    for pc in turn.calls:  # stored: announced even if a cancel came meanwhile
        turn.update(updates.tool_call(pc.call.id, views[pc.call.id]))
    turn.token.raise_if_cancelled()  # a cancel that came with the last token still counts
    if not turn.calls:
        ended = not looped and ACP_STOP[finished.stop_reason] == "end_turn"
        if ended and await hooking.goes_on(turn, message.text):
            return TurnTrigger.GO_ON
        turn.stop_reason = ACP_STOP[finished.stop_reason]
        if looped:
            await turn.tell(
                f"\n\nThe model was repeating itself ({looped}), so its answer was stopped."
            )
        elif not message.text.strip():  # a role chunk and a stop: the user sees nothing
            await turn.tell(_empty_answer(finished.stop_reason))
        return TurnTrigger.MODEL_DONE
    await _preview(turn)
    await hooking.before_calls(turn)
    return TurnTrigger.TOOLS_REQUESTED


async def _preview(turn: Turn) -> None:
    """Show what each call will change (a diff) before anyone is asked to allow it; a call
    that cannot work (its text is not in the file, say) is denied now, and nobody is asked.

    Calls are previewed in order against `drafts`, the files as the earlier calls leave them.
    After a call whose effects no preview can show (a command), the rest are not previewed:
    they are shown and run as they come."""
    drafts: Drafts = {}
    for pc in turn.calls:
        if pc.tool is None or pc.state == ToolCallState.DENIED:
            continue
        problem: str | None = None
        try:
            pc.preview = await pc.tool.preview(pc.call.arguments, turn.env(pc.call.id), drafts)
        except Cancelled:
            raise
        except ToolError as exc:
            problem = str(exc)
        except OSError as exc:
            problem = describe_os_error(exc)
        except Exception:  # a preview bug must not cost the call: it runs unpreviewed
            log.exception("tool_preview_failed", tool=pc.call.name)
        if problem is not None:
            pc.deny(problem)
        elif pc.preview:
            turn.update(updates.tool_call_update(pc.call.id, None, content=list(pc.preview)))
        if pc.tool.unpredictable:
            return


async def keep_partial(
    turn: Turn, partial: AssistantMessage, stop_reason: str, *, wait: bool = False
) -> None:
    """Store what was streamed before a cancel or failure (no tool calls: unanswered calls of
    a cut message are dropped, complete ones are never run)."""
    kept = AssistantMessage(tuple(p for p in partial.parts if not isinstance(p, ToolCallPart)))
    if kept.parts:
        await storing.add_assistant(turn, kept, stop_reason, {}, wait=wait)


def _overflowed(
    turn: Turn, exc: ProviderError, model_request: ModelRequest, estimate: int, room: int
) -> bool:
    """Whether the call was refused for being over the context window, so that compacting and
    sending it again may help (once a model call: a request sent as it is after a compaction
    is not compacted again, unless this refusal taught a lower window or a larger scale and
    there is still something to cut; that happens once). An empty 200 stream counts when the
    request was near the window, or the window is only assumed: llama-cpp-python answers
    so."""
    if not _for_length(turn, exc, estimate, room):
        return False
    if turn.compactions():
        return _guessed_too_large(turn, exc, model_request, estimate, room)
    turn.budget.learn(exc, estimate, window(turn), room, known(turn))
    return True


def _for_length(turn: Turn, exc: ProviderError, estimate: int, room: int) -> bool:
    """Whether the provider refused the call as over the window: it said so, or answered
    an empty stream to a request near a known window (or to any, the window assumed)."""
    if exc.error_type == EMPTY_STREAM:
        return not known(turn) or turn.budget.near(estimate, window(turn), room)
    return exc.context_exceeded


def _guessed_too_large(
    turn: Turn, exc: ProviderError, model_request: ModelRequest, estimate: int, room: int
) -> bool:
    """A compacted request refused as too long although it fit the budget: the window
    guessed from an earlier refusal (that request was larger: it listed every tool, say)
    comes down to this request, or the provider counted more tokens than the estimate said
    (a local model's tokenizer); it is compacted again if the refusal taught that and the
    cut can take anything. Once a model call, so a turn never loops."""
    budget = turn.budget
    if turn.compactions() > 1:
        return False
    before = (budget.learned, budget.scale)
    budget.learn(exc, estimate, window(turn), room, known(turn))
    if (budget.learned, budget.scale) == before:
        return False  # it teaches nothing new
    return cut(turn, model_request) is not None


def _failure(
    turn: Turn, exc: ProviderError, model_request: ModelRequest, estimate: int
) -> TurnFailed:
    """The failure a failed model call answers the prompt with: one short line, the provider's
    whole message in its data; for a request over the window, what to do."""
    message = str(exc)
    if exc.context_exceeded or exc.error_type == EMPTY_STREAM:
        fixed = turn.budget.tokens(compaction.fixed_part(model_request))
        sizes = (turn.budget.tokens(estimate), fixed, window(turn))
        message = f"{message}. {_too_long(exc, sizes, bool(turn.compactions()))}"
    return TurnFailed(message, data=_error_data(exc))


def _empty_answer(stop: StopReason) -> str:
    """What the user is told of an answer with no text and no tool call."""
    if stop is StopReason.MAX_TOKENS:
        return "The model reached its output limit (ACP_FSM_MAX_TOKENS) before writing any answer."
    return "The model returned an empty answer (no text and no tool call)."


def _too_long(exc: ProviderError, sizes: tuple[int, int, int], compacted: bool) -> str:
    """What happened when a request was refused as over the window, and what to do; `sizes`
    are the request's tokens, those of its system prompt and tools, and the window."""
    estimate, fixed, size = sizes
    what = (
        "Local servers such as llama-cpp-python answer so when a request is longer than "
        "their context window. "
        if exc.error_type == EMPTY_STREAM
        else ""
    )
    after = "even after compacting, " if compacted else ""
    alone = (
        f"; the system prompt and the tools alone take about {fixed:,} of them"
        if fixed * 2 > size
        else ""
    )
    return (
        f"{what}The request ({after}about {estimate:,} tokens with the system prompt and "
        f"the tools) did not fit a context window of {size:,} tokens{alone}: run "
        "/compact to summarise more of the conversation, or set ACP_FSM_CONTEXT_WINDOW to "
        "the model's real context size (and start a local server with a larger one)"
    )


def _error_data(exc: ProviderError) -> dict[str, Any]:
    data: dict[str, Any] = {"provider": exc.provider, "retryable": exc.retryable}
    if exc.status is not None:
        data["status"] = exc.status
    if exc.error_type is not None:
        data["type"] = exc.error_type
    if exc.details is not None:
        data["details"] = exc.details
    return data
