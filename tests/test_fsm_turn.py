"""The turn machine as a table: every (state, trigger) pair is a row or a rejection, and the
`needs_permission` guard picks between the two `tools_requested` rows (docs/machines.md)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from transitions import MachineError

from acp_fsm.fsm.machine import IllegalTransition
from acp_fsm.fsm.turn import CANCELLABLE, FINAL, TURN, TurnState, TurnTrigger

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
    (S.STREAMING, T.TOOLS_REQUESTED): S.RUNNING_TOOLS,  # no call needs the user
    (S.AWAITING_PERMISSION, T.PERMISSIONS_SETTLED): S.RUNNING_TOOLS,
    (S.RUNNING_TOOLS, T.TOOLS_DONE): S.STREAMING,
    (S.RUNNING_TOOLS, T.LIMIT_REACHED): S.DONE,
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


class Model:
    """A turn as the machine sees it: a state and the guard."""

    state: str
    trigger: Any  # added by transitions

    def __init__(self, asks: bool, command: bool = False) -> None:
        self.asks = asks
        self.command = command

    def needs_permission(self) -> bool:
        return self.asks

    def on_demand(self) -> bool:
        return self.command


@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(TurnState, TurnTrigger)),
                         ids=str)
def test_every_pair_is_a_row_or_a_rejection(state: TurnState, trigger: TurnTrigger) -> None:
    model = Model(asks=False)
    TURN.build(model, initial=state)
    expected = EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(IllegalTransition):
            TURN.next_state(state, trigger)
        with pytest.raises(MachineError):
            model.trigger(trigger.value)
        assert model.state == state.value
    else:
        assert TURN.next_state(state, trigger) == expected
        assert model.trigger(trigger.value) is True
        assert model.state == expected.value


@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(TurnState, TurnTrigger)),
                         ids=str)
def test_the_shared_machine_fires_as_a_built_one(state: TurnState, trigger: TurnTrigger) -> None:
    """`TURN.fire` (what a turn uses: one machine for every turn of the process) takes the
    same rows and refuses the same pairs, leaving the state as it was."""
    model = Model(asks=False)
    model.state = state.value
    expected = EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(MachineError):
            TURN.fire(model, trigger.value)
        assert model.state == state.value
    else:
        assert TURN.fire(model, trigger.value) is True
        assert model.state == expected.value


def test_the_shared_machine_asks_each_model_its_own_guard() -> None:
    asking, trusting = Model(asks=True), Model(asks=False)
    for model in (asking, trusting):
        model.state = S.STREAMING.value
        TURN.fire(model, T.TOOLS_REQUESTED.value)
    assert (asking.state, trusting.state) == (S.AWAITING_PERMISSION.value,
                                              S.RUNNING_TOOLS.value)


def test_the_guard_sends_tools_to_permission_first() -> None:
    asking = Model(asks=True)
    TURN.build(asking, initial=S.STREAMING)
    asking.trigger(T.TOOLS_REQUESTED.value)
    assert asking.state == S.AWAITING_PERMISSION.value
    guarded = [r for r in TURN.rows if r.guard is not None]
    assert [(r.trigger, r.dest, r.guard) for r in guarded] == [
        (T.COMPACTED, S.DONE, "on_demand"),
        (T.TOOLS_REQUESTED, S.AWAITING_PERMISSION, "needs_permission")]


def test_the_guard_ends_an_on_demand_compaction() -> None:
    command = Model(asks=False, command=True)
    TURN.build(command, initial=S.COMPACTING)
    command.trigger(T.COMPACTED.value)
    assert command.state == S.DONE.value


def test_final_and_cancellable_states() -> None:
    assert set(FINAL) == {S.CANCELLED, S.DONE, S.FAILED}
    assert set(CANCELLABLE) == {S.STREAMING, S.COMPACTING, S.AWAITING_PERMISSION,
                                S.RUNNING_TOOLS}
    assert TURN.initial == S.IDLE and TURN.final == FINAL
    for state in FINAL:  # nothing leaves a final state
        assert not [r for r in TURN.rows if state in r.sources]
