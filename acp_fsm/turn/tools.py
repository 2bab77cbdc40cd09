"""`running_tools`: the allowed calls run in order (in_progress, then completed or failed),
the denied ones get a result saying why; each result is stored as it arrives."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import structlog

from acp_fsm import updates
from acp_fsm.fsm.tool_call import ACP_STATUS, ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools.base import ToolOutcome
from acp_fsm.turn.calls import answer

if TYPE_CHECKING:
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")

DEFAULT_MAX_TURN_REQUESTS = 50


def max_turn_requests() -> int:
    """Model calls allowed per prompt (`ACP_FSM_MAX_TURN_REQUESTS`, default 50)."""
    raw = os.environ.get("ACP_FSM_MAX_TURN_REQUESTS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_TURN_REQUESTS


async def run_tools(turn: Turn) -> TurnTrigger:
    for pc in turn.calls:
        if not pc.is_open:
            continue
        if pc.state != ToolCallState.ALLOWED or pc.tool is None:
            await answer(turn, pc, ToolOutcome(pc.reason, is_error=True), ToolCallTrigger.REFUSE)
            continue
        pc.fire(ToolCallTrigger.START)
        turn.update(updates.tool_call_update(pc.call.id, ACP_STATUS[pc.state]))
        try:
            outcome = await pc.tool.run(pc.call.arguments, turn.env(pc.call.id, pc.preview))
        except Cancelled:
            raise
        except Exception as exc:  # a tool bug is a tool result, not a turn failure
            log.exception("tool_failed", tool=pc.call.name)
            outcome = ToolOutcome(f"The tool failed unexpectedly: {exc}", is_error=True)
        trigger = ToolCallTrigger.ERROR if outcome.is_error else ToolCallTrigger.SUCCEED
        await answer(turn, pc, outcome, trigger)  # it finished: its real result is kept
        turn.token.raise_if_cancelled()
    turn.token.raise_if_cancelled()
    if turn.requests >= max_turn_requests():
        turn.stop_reason = "max_turn_requests"
        return TurnTrigger.LIMIT_REACHED
    return TurnTrigger.TOOLS_DONE
