"""The turn machine as a table: every (state, trigger) pair is a row or a rejection, and the
`needs_permission` guard picks between the two `tools_requested` rows (docs/machines.md)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from acp_fsm.fsm.machine import Guard, IllegalTransition
from acp_fsm.fsm.turn import (
    CANCELLABLE,
    FINAL,
    NEEDS_PERMISSION,
    ON_DEMAND,
    STEERED,
    TURN,
    TurnState,
    TurnTrigger,
)

S, T = TurnState, TurnTrigger

# Unguarded rows, written out by hand as a second witness of the design.
EXPECTED: dict[tuple[TurnState, TurnTrigger], TurnState] = {
    (S.IDLE, T.START): S.STREAMING,
    (S.IDLE, T.CANCEL): S.CANCELLED,  # cancelled before it started
    (S.IDLE, T.COMPACT): S.COMPACTING,  # the /compact command
    (S.STREAMING, T.COMPACT): S.COMPACTING,  # the context is nearly full
    (S.COMPACTING, T.COMPACTED): S.STREAMING,  # not on demand: the model call goes on
    (S.COMPACTING, T.CANCEL): S.DRAINING,
    (S.COMPACTING, T.FAIL): S.FAILED,
    (S.IDLE, T.REPORT): S.REPORTING,  # /status, /mcp
    (S.REPORTING, T.REPORTED): S.DONE,
    (S.REPORTING, T.CANCEL): S.DRAINING,
    (S.REPORTING, T.FAIL): S.FAILED,
    (S.STREAMING, T.TOOLS_REQUESTED): S.RUNNING_TOOLS,  # no call needs the user
    (S.AWAITING_PERMISSION, T.PERMISSIONS_SETTLED): S.RUNNING_TOOLS,
    (S.RUNNING_TOOLS, T.TOOLS_DONE): S.STREAMING,
    (S.RUNNING_TOOLS, T.LIMIT_REACHED): S.DONE,
    (S.RUNNING_TOOLS, T.HALTED): S.DONE,  # a hook said stop
    (S.STREAMING, T.GO_ON): S.STREAMING,  # a Stop hook has the model go on
    (S.STREAMING, T.MODEL_DONE): S.DONE,
    (S.STREAMING, T.CANCEL): S.DRAINING,
    (S.AWAITING_PERMISSION, T.CANCEL): S.DRAINING,
    (S.RUNNING_TOOLS, T.CANCEL): S.DRAINING,
    (S.DRAINING, T.DRAINED): S.CANCELLED,
    (S.STREAMING, T.FAIL): S.FAILED,
    (S.AWAITING_PERMISSION, T.FAIL): S.FAILED,
    (S.RUNNING_TOOLS, T.FAIL): S.FAILED,
    (S.DRAINING, T.FAIL): S.FAILED,
}


def guards(
    asks: bool = False, command: bool = False, steered: bool = False
) -> dict[Guard, Callable[[], bool]]:
    """The turn's guards as a turn passes them: some call waits for the user, /compact, a
    steered message waits."""
    return {NEEDS_PERMISSION: lambda: asks, ON_DEMAND: lambda: command, STEERED: lambda: steered}


@pytest.mark.parametrize(
    ("state", "trigger"), list(itertools.product(TurnState, TurnTrigger)), ids=str
)
def test_every_pair_is_a_row_or_a_rejection(state: TurnState, trigger: TurnTrigger) -> None:
    expected = EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(IllegalTransition):
            TURN.step(state, trigger, guards())
    else:
        assert TURN.step(state, trigger, guards()) == expected


def test_the_guard_sends_tools_to_permission_first() -> None:
    assert TURN.step(S.STREAMING, T.TOOLS_REQUESTED, guards(asks=True)) == S.AWAITING_PERMISSION
    assert TURN.step(S.STREAMING, T.TOOLS_REQUESTED, guards(asks=False)) == S.RUNNING_TOOLS
    guarded = [r for r in TURN.rows if r.guard is not None]
    assert [(r.trigger, r.dest, r.guard) for r in guarded] == [
        (T.COMPACTED, S.DONE, ON_DEMAND),
        (T.TOOLS_REQUESTED, S.AWAITING_PERMISSION, NEEDS_PERMISSION),
        (T.MODEL_DONE, S.STREAMING, STEERED),
    ]


def test_a_steered_message_gets_one_more_model_call() -> None:
    assert TURN.step(S.STREAMING, T.MODEL_DONE, guards(steered=True)) == S.STREAMING
    assert TURN.step(S.STREAMING, T.MODEL_DONE, guards(steered=False)) == S.DONE


def test_the_guard_ends_an_on_demand_compaction() -> None:
    assert TURN.step(S.COMPACTING, T.COMPACTED, guards(command=True)) == S.DONE
    assert TURN.step(S.COMPACTING, T.COMPACTED, guards(command=False)) == S.STREAMING


def test_the_working_states_are_one_group() -> None:
    assert TURN.groups == {"working": CANCELLABLE}


def test_final_and_cancellable_states() -> None:
    assert set(FINAL) == {S.CANCELLED, S.DONE, S.FAILED}
    assert set(CANCELLABLE) == {
        S.STREAMING,
        S.COMPACTING,
        S.REPORTING,
        S.AWAITING_PERMISSION,
        S.RUNNING_TOOLS,
    }
    assert TURN.initial == S.IDLE and TURN.final == FINAL
    for state in FINAL:  # nothing leaves a final state
        assert not [r for r in TURN.rows if state in r.sources]
