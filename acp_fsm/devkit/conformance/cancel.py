"""Cancel: session/cancel while the model streams ends the turn with stopReason cancelled (the
time it took is reported), and nothing of the turn follows the response. Not applicable to an
agent that does not call the model it was pointed at: there is no stream to cancel."""

from __future__ import annotations

import json
from typing import Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.reading import Turn, clip
from acp_fsm.devkit.conformance.script import HANG_CHUNKS, HANG_PROMPT
from acp_fsm.devkit.conformance.verdicts import Blocked, Violation


async def _cancelled_turn(ctx: Context) -> Turn:
    probe = await ctx.start()
    turn = await probe.prompt(await probe.new_session(), HANG_PROMPT, cancel=True)
    if turn.cancel_ms is None or HANG_CHUNKS[0].strip() not in turn.text():
        turn.needs_model()
        raise Blocked(
            "nothing of the model's endless reply streamed before the cancel (the agent "
            f"answered {clip(turn.text(), 80)!r})"
        )
    ctx.data["cancelLatencyMs"] = round(turn.cancel_ms, 1)
    return turn


async def mid_stream(ctx: Context) -> str:
    try:
        turn = await _cancelled_turn(ctx)
    except TimeoutError as exc:  # NoAnswer: the cancel was not answered
        raise Violation(f"after session/cancel: {exc}") from None
    if turn.stop_reason != "cancelled":
        raise Violation(
            f"the cancelled turn was answered {clip(json.dumps(turn.response))}, "
            "not stopReason cancelled"
        )
    return f"stopReason cancelled, {turn.cancel_ms:.0f} ms after session/cancel"


async def quiet_after(ctx: Context) -> str:
    try:
        turn = await _cancelled_turn(ctx)
    except TimeoutError as exc:
        raise Blocked(f"the cancel was not answered (cancel.mid_stream): {exc}") from None
    if turn.stop_reason != "cancelled":
        raise Blocked("the turn was not answered cancelled (cancel.mid_stream)")
    if turn.late:
        raise Violation(f"the turn was answered cancelled, then {turn.late_kinds()}")
    return "no update after the cancelled response"


RULE: Final = "ACP prompt turn, cancellation"
CHECKS: Final = (
    Check(
        "cancel.mid_stream",
        Rule(
            RULE,
            "after session/cancel the agent stops and answers the prompt with stopReason "
            "cancelled, a result and not an error",
        ),
        mid_stream,
    ),
    Check(
        "cancel.quiet_after",
        Rule(RULE, "no session/update of the cancelled turn follows its response"),
        quiet_after,
    ),
)
