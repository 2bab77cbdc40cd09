"""`compacting`: the older part of the conversation summarised by one model call, the latest
turns kept as they are (`acp_fsm.compaction`), stored, then told to the user."""

from __future__ import annotations

import secrets
from asyncio import CancelledError
from typing import TYPE_CHECKING

import structlog

from acp_fsm import compaction, updates
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.types import Finished, Message, ModelRequest
from acp_fsm.turn import storing
from acp_fsm.turn.model_call import charge, open_call, request, reserve, window

if TYPE_CHECKING:
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")


async def compact(turn: Turn) -> TurnTrigger:
    """Without a summary (the call failed, the model wrote none, the system prompt and the
    tools alone fill the window) the older part is dropped instead: the session always goes
    on. The next model call is then sent as it is: a turn never loops here."""
    if not turn.tools:  # /compact: no model call of this turn has listed them yet
        turn.tools = await turn.token.race(turn.context.tools())
    model_request = await request(turn)
    size = window(turn)
    room = reserve(model_request, turn.config())
    before = turn.budget.tokens(compaction.estimate(model_request))
    parts = cut(turn, model_request)  # the next model call is sent as it is (`compactions`)
    if parts is None:
        if turn.command is not None:
            await turn.tell(compaction.NOTHING_TO_COMPACT)
        return TurnTrigger.COMPACTED
    shown = _shown_as_compaction(turn)  # else as text, once it is done
    if shown is not None:
        turn.update(updates.compaction_update(shown, "in_progress"))
    try:
        summary, dropped = await _summary(turn, model_request, parts.older, size, room)
        messages = compaction.replaced(summary, parts.kept)
        after = turn.budget.tokens(
            compaction.estimate(model_request._replace(messages=tuple(messages)))
        )
        text = compaction.notice(before, after, len(parts.older), dropped)
        if turn.command is None:
            text += "\n\n"  # the model's answer follows
        message_id = updates.message_id()
        body = compaction.to_body(summary, parts.kept, text, message_id)
        await storing.compact_to(turn, messages, body)
    except BaseException as exc:
        if shown is not None:
            ended = "cancelled" if isinstance(exc, Cancelled | CancelledError) else "failed"
            turn.update(updates.compaction_update(shown, ended))
        raise
    log.info(
        "context_compacted",
        before=before,
        after=after,
        summarised=len(parts.older),
        kept=len(parts.kept),
        dropped=dropped,
    )
    if shown is None:
        turn.update(updates.agent_text(text, message_id))
    else:
        if summary:
            turn.update(updates.compaction_summary(shown, summary))
        turn.update(updates.compaction_update(shown, "completed"))
    return TurnTrigger.COMPACTED


def _shown_as_compaction(turn: Turn) -> str | None:
    """A new compaction id when the client follows compactions (`session.compaction`): it is
    shown as `compaction_update`s instead of a line of text."""
    client = turn.effects.client.client
    if client is None or not client.follows_compaction:
        return None
    return f"compaction_{secrets.token_hex(6)}"


def cut(turn: Turn, model_request: ModelRequest) -> compaction.Compaction | None:
    """Where a compaction of `model_request` would cut its messages now; None when nothing
    before the cut would be left to summarise or drop."""
    room = reserve(model_request, turn.config())
    return turn.budget.cut(model_request, window(turn), room, on_demand=turn.command is not None)


async def _summary(
    turn: Turn, model_request: ModelRequest, older: list[Message], size: int, room: int
) -> tuple[str | None, str | None]:
    """The summary the model writes of `older` (a model call of the turn: counted), or None
    and why there is none. No call is made when the system prompt and the tools alone pass
    the threshold (it could not make the conversation fit, and would be made again at every
    prompt), unless the user asked for it (/compact)."""
    fixed = compaction.fixed_part(model_request)
    if turn.command is None and turn.budget.too_full(fixed, size, room):
        return None, compaction.too_small(turn.budget.tokens(fixed), size)
    focus = turn.command.argument if turn.command is not None else ""
    turn.requests += 1
    finished: Finished | None = None
    try:
        async with open_call(
            turn, compaction.summary_request(model_request, older, focus, size, turn.budget.scale)
        ) as summary_stream:
            async for event in summary_stream:
                if isinstance(event, Finished):
                    finished = event
    except ProviderError as exc:
        log.warning("summary_failed", error=str(exc))
        return None, f"the summary call failed ({exc})"
    assert finished is not None, "a stream ends with Finished or an exception"
    await charge(turn, finished, model_request.model, "summary")
    summary = compaction.summary_of(finished.message)
    return (summary, None) if summary else (None, "the model answered with no summary")
