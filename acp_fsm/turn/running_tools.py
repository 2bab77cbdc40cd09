"""`running_tools`: the allowed calls run in order (in_progress, then completed or failed),
the denied ones get a result saying why; each result is stored as it arrives."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

import structlog

from acp_fsm import updates
from acp_fsm.fsm.tool_call import ACP_STATUS, ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools.base import ToolOutcome
from acp_fsm.turn import hooking
from acp_fsm.turn.calls import PendingCall, answer

if TYPE_CHECKING:
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")

DEFAULT_MAX_TURN_REQUESTS = 50


def max_turn_requests() -> int:
    """Model calls allowed per prompt (`ACP_FSM_MAX_TURN_REQUESTS`, default 50)."""
    raw = os.environ.get("ACP_FSM_MAX_TURN_REQUESTS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_TURN_REQUESTS


async def run_tools(turn: Turn) -> TurnTrigger:
    together: list[PendingCall] = []  # allowed calls of a tool that runs calls at once
    for pc in turn.calls:
        if not pc.is_open:
            continue
        if pc.state == ToolCallState.ALLOWED and pc.tool is not None and pc.tool.concurrent:
            together.append(pc)
            continue
        await _run_together(turn, together)
        together = []
        await _run(turn, pc)
    await _run_together(turn, together)
    turn.token.raise_if_cancelled()
    if turn.halted is not None:
        await turn.tell(turn.halted)
        return TurnTrigger.HALTED
    if turn.requests >= turn.max_requests:
        turn.stop_reason = "max_turn_requests"
        return TurnTrigger.LIMIT_REACHED
    return TurnTrigger.TOOLS_DONE


async def _run_together(turn: Turn, calls: list[PendingCall]) -> None:
    """Run `calls` at once, each answered as it ends; a cancel ends them all (they share the
    turn's token), and is raised once every one has stopped."""
    if len(calls) <= 1:
        for pc in calls:
            await _run(turn, pc)
        return
    ended = await asyncio.gather(*(_run(turn, pc) for pc in calls), return_exceptions=True)
    for outcome in ended:
        if isinstance(outcome, BaseException):
            raise outcome


async def _run(turn: Turn, pc: PendingCall) -> None:
    """Run one call (or refuse it: denied), then store and show its result."""
    if pc.state != ToolCallState.ALLOWED or pc.tool is None:
        await answer(turn, pc, ToolOutcome(pc.reason, is_error=True), ToolCallTrigger.REFUSE)
        return
    pc.fire(ToolCallTrigger.START)
    turn.update(updates.tool_call_update(pc.call.id, ACP_STATUS[pc.state]))
    try:
        env = turn.env(pc.call.id, pc.preview, pc.view.locations)
        outcome = await pc.tool.run(pc.call.arguments, env)
        outcome = await hooking.after_call(turn, pc, outcome)
    except Cancelled:
        raise
    except Exception as exc:  # a tool bug is a tool result, not a turn failure
        log.exception("tool_failed", tool=pc.call.name)
        outcome = ToolOutcome(f"The tool failed unexpectedly: {exc}", is_error=True)
    trigger = ToolCallTrigger.ERROR if outcome.is_error else ToolCallTrigger.SUCCEED
    await answer(turn, pc, outcome, trigger)  # it finished: its real result is kept
    turn.token.raise_if_cancelled()
