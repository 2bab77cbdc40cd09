"""Every machine's evaluator (`MachineSpec.step`, what the agent runs) agrees with the same
table built as a `transitions` machine (`MachineSpec.build`, the design's library) on every
state, trigger and outcome of the guards; and the tool call's table as the turn uses it."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from transitions import MachineError

from acp_fsm.devkit.diagrams import machines
from acp_fsm.fsm.machine import Guard, IllegalTransition, MachineSpec
from acp_fsm.fsm.tool_call import (
    ACP_STATUS,
    CLOSED,
    OPEN,
    TOOL_CALL,
    ToolCallState,
    ToolCallTrigger,
)

CASES = [
    pytest.param(spec, state, trigger, holds, id=f"{spec.name}-{state}-{trigger}-{holds}")
    for spec in machines()
    for state, trigger in itertools.product(spec.states, spec.triggers)
    for holds in itertools.product((False, True), repeat=len(spec.guards()))
]


class Model:
    state: str
    trigger: Callable[[str], bool]


def constant(value: bool) -> Callable[[], bool]:
    """A guard that always answers `value`."""
    return lambda: value


@pytest.mark.parametrize(("spec", "state", "trigger", "holds"), CASES)
def test_the_evaluator_agrees_with_transitions(
    spec: MachineSpec, state: str, trigger: str, holds: tuple[bool, ...]
) -> None:
    guards: dict[Guard, Callable[[], bool]] = {
        guard: constant(value) for guard, value in zip(spec.guards(), holds, strict=True)
    }
    model = Model()
    spec.build(model, guards, initial=spec.states(state))
    try:
        expected = spec.step(state, spec.triggers(trigger), guards)
    except IllegalTransition:
        rows = spec.rows_for(state, trigger)
        if rows:  # rows for the pair, none of whose guards held: the machine stays
            assert model.trigger(trigger) is False
        else:
            with pytest.raises(MachineError):
                model.trigger(trigger)
        assert model.state == state
    else:
        assert model.trigger(trigger) is True
        assert model.state == expected


def test_every_machine_is_drawn_and_documented() -> None:
    assert [spec.name for spec in machines()] == [
        "handshake",
        "session",
        "turn",
        "tool_call",
        "mcp_server",
    ]
    for spec in machines():
        assert set(spec.state_docs) == set(spec.states)


S, T = ToolCallState, ToolCallTrigger


def walk(*triggers: ToolCallTrigger) -> ToolCallState:
    state = TOOL_CALL.initial
    for trigger in triggers:
        state = TOOL_CALL.step(state, trigger)
    return ToolCallState(state)


def test_a_call_ends_in_one_of_its_closed_states_whichever_way_it_goes() -> None:
    assert walk(T.ALLOW, T.START, T.SUCCEED) == S.COMPLETED
    assert walk(T.ASK, T.ALLOW, T.START, T.ERROR) == S.FAILED
    assert walk(T.ASK, T.DENY, T.REFUSE) == S.FAILED
    assert walk(T.ALLOW, T.DENY, T.REFUSE) == S.FAILED  # its preview showed it cannot work
    for opened in ((), (T.ASK,), (T.ALLOW,), (T.DENY,), (T.ALLOW, T.START)):
        assert walk(*opened, T.CANCEL) == S.CANCELLED
        assert walk(*opened, T.ABANDON) == S.FAILED


def test_a_closed_call_takes_no_trigger_and_only_a_run_runs() -> None:
    for state in CLOSED:
        assert not [row for row in TOOL_CALL.rows if state in row.sources]
    for state in set(ToolCallState) - {S.ALLOWED}:
        with pytest.raises(IllegalTransition):
            TOOL_CALL.step(state, T.START)
    with pytest.raises(IllegalTransition):  # a pending call is never answered unasked
        TOOL_CALL.step(S.PENDING, T.REFUSE)


def test_the_editor_sees_acp_statuses_only() -> None:
    assert set(ACP_STATUS) == set(ToolCallState)
    # "cancelled" is v2's (a v1 editor is told "failed": tests/test_dialects.py)
    assert set(ACP_STATUS.values()) == {
        "pending",
        "in_progress",
        "completed",
        "failed",
        "cancelled",
    }
    assert {ACP_STATUS[state] for state in OPEN} == {"pending", "in_progress"}
    assert TOOL_CALL.groups == {"open": OPEN}
