"""`draining`'s work (`acp_fsm.turn.draining.drain`) over in-memory ports: after a cancel,
every open call gets a synthetic result (stored, then shown) and the cut message is marked as
ending the turn cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp_fsm import transcript
from acp_fsm.fsm.tool_call import ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.providers.types import AssistantMessage, TextPart
from acp_fsm.turn import storing
from acp_fsm.turn.calls import classify
from acp_fsm.turn.draining import drain
from tests.turn.memory import Gate, Setup, call

S = ToolCallState


async def test_open_calls_get_results_and_the_message_is_marked_cancelled(tmp_path: Path) -> None:
    setup = Setup(tmp_path, tools={"gate": Gate(), "asking": Gate("asking", "edit", asks=True)})
    turn = setup.turn()
    turn.tools = setup.tools
    message = AssistantMessage((TextPart("calling"),))
    await storing.add_assistant(turn, message, "tool_use", {})
    turn.calls = [
        classify(turn, call("run", "gate")),
        classify(turn, call("asked", "asking")),
        classify(turn, call("later", "gate")),
    ]
    turn.calls[0].fire(ToolCallTrigger.START)
    turn.calls[1].fire(ToolCallTrigger.ASK)

    assert await drain(turn) == TurnTrigger.DRAINED

    assert [pc.state for pc in turn.calls] == [S.CANCELLED] * 3
    results = setup.memory.of("tool_result")
    assert [r["content"] for r in results] == [
        transcript.INTERRUPTED,
        transcript.NOT_STARTED,
        transcript.NOT_STARTED,
    ]
    # what the turn says: v2's `cancelled` (a v1 editor is told `failed`: acp_fsm.dialects)
    assert [setup.editor.statuses(c) for c in ("run", "asked", "later")] == [["cancelled"]] * 3
    assert setup.memory.entries[0][1]["stopReason"] == transcript.CANCELLED  # rewritten
    assert setup.memory.rewritten == [1]


async def test_a_message_whose_write_is_still_under_way_is_not_rewritten(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    turn = setup.turn()
    setup.memory.hold = asyncio.Event()
    await storing.add_assistant(
        turn, AssistantMessage((TextPart("words"),)), "end_turn", {}, wait=False
    )
    assert await drain(turn) == TurnTrigger.DRAINED
    assert setup.memory.rewritten == []
    assert setup.memory.of("tool_result") == []


async def test_a_message_cut_by_the_cancel_stays_as_it_was_stored(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    turn = setup.turn()
    cut = AssistantMessage((TextPart("half"),))
    await storing.add_assistant(turn, cut, transcript.CANCELLED, {})
    assert await drain(turn) == TurnTrigger.DRAINED
    assert setup.memory.rewritten == []
