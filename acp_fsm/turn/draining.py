"""`draining`: after a cancel, every open call gets a synthetic result and a final update,
and the cut assistant message is marked as ending the turn cancelled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_fsm import transcript
from acp_fsm.fsm.tool_call import ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.turn import storing
from acp_fsm.turn.calls import close_open

if TYPE_CHECKING:
    from acp_fsm.turn.runner import Turn


async def drain(turn: Turn) -> TurnTrigger:
    storing.mark_cancelled(turn)
    await close_open(
        turn,
        lambda pc: (
            transcript.INTERRUPTED if pc.state == ToolCallState.RUNNING else transcript.NOT_STARTED
        ),
        ToolCallTrigger.CANCEL,
    )
    return TurnTrigger.DRAINED
