"""The handshake machine as a table: every (state, trigger) pair is a row or a rejection.

For each pair the evaluator the agent runs (`MachineSpec.step`) is held to the same table
built as a `transitions` machine (`build`, STYLE §1). `admission` is the flagged rule outside
the table and is walked over every state too.
"""

from __future__ import annotations

import itertools
from enum import StrEnum
from typing import Any

import pytest
from transitions import MachineError

from acp_fsm.fsm.handshake import (
    HANDSHAKE,
    INITIALIZE_METHOD,
    HandshakeState,
    HandshakeTrigger,
    admission,
)
from acp_fsm.fsm.machine import Guard, IllegalTransition, MachineSpec, Row
from acp_fsm.protocol.errors import InternalError, MethodNotFound, ServerNotInitialized

S, T = HandshakeState, HandshakeTrigger

# The table written out by hand: the test is the second witness of what the spec says.
EXPECTED_ROWS: dict[tuple[HandshakeState, HandshakeTrigger], HandshakeState] = {
    (S.UNINITIALIZED, T.INITIALIZE): S.INITIALIZED,
    (S.UNINITIALIZED, T.INITIALIZE_V2): S.INITIALIZED,
    (S.UNINITIALIZED, T.CLOSE): S.CLOSING,
    (S.INITIALIZED, T.CLOSE): S.CLOSING,
    (S.CLOSING, T.FINISH): S.CLOSED,
}

ALL_PAIRS = list(itertools.product(HandshakeState, HandshakeTrigger))


class Model:
    """What `build` drives: a `state` attribute; `transitions` adds `trigger`."""

    state: str
    trigger: Any


def test_spec_shape() -> None:
    assert HANDSHAKE.name == "handshake"
    assert HANDSHAKE.initial == S.UNINITIALIZED
    assert HANDSHAKE.final == (S.CLOSED,)
    assert set(HANDSHAKE.state_docs) == set(HandshakeState)
    assert len(ALL_PAIRS) == 16


def test_table_is_exactly_the_expected_rows() -> None:
    table = {(source, row.trigger): row.dest for row in HANDSHAKE.rows for source in row.sources}
    assert table == EXPECTED_ROWS
    assert all(row.guard is None for row in HANDSHAKE.rows)


@pytest.mark.parametrize(("state", "trigger"), ALL_PAIRS, ids=lambda v: str(v))
def test_every_pair_is_a_row_or_a_rejection(
    state: HandshakeState, trigger: HandshakeTrigger
) -> None:
    model = Model()
    HANDSHAKE.build(model, initial=state)
    assert model.state == state.value
    expected = EXPECTED_ROWS.get((state, trigger))
    if expected is not None:
        assert HANDSHAKE.step(state, trigger) == expected
        assert [r.dest for r in HANDSHAKE.rows_for(state, trigger)] == [expected]
        assert model.trigger(trigger.value) is True
        assert model.state == expected.value
    else:
        with pytest.raises(IllegalTransition, match=f"{trigger} is not allowed in state {state}"):
            HANDSHAKE.step(state, trigger)
        assert HANDSHAKE.rows_for(state, trigger) == ()
        with pytest.raises(MachineError):
            model.trigger(trigger.value)
        assert model.state == state.value


def test_default_initial_state_and_full_walk() -> None:
    model = Model()
    HANDSHAKE.build(model)
    assert model.state == "uninitialized"
    for trigger, state in [
        (T.INITIALIZE, S.INITIALIZED),
        (T.CLOSE, S.CLOSING),
        (T.FINISH, S.CLOSED),
    ]:
        model.trigger(trigger.value)
        assert model.state == state.value


def test_final_state_accepts_nothing() -> None:
    for trigger in HandshakeTrigger:
        with pytest.raises(IllegalTransition):
            HANDSHAKE.step(S.CLOSED, trigger)


def test_built_machine_has_no_auto_transitions() -> None:
    model = Model()
    HANDSHAKE.build(model)
    assert not hasattr(model, "to_closed")
    assert set(HANDSHAKE.build(Model()).events) == {t.value for t in HandshakeTrigger}


def reachable_from(start: StrEnum) -> set[StrEnum]:
    reachable: set[StrEnum] = {start}
    frontier: list[StrEnum] = [start]
    while frontier:
        state = frontier.pop()
        for trigger in HandshakeTrigger:
            try:
                dest = HANDSHAKE.step(state, trigger)
            except IllegalTransition:
                continue
            if dest not in reachable:
                reachable.add(dest)
                frontier.append(dest)
    return reachable


def test_every_state_is_reachable_and_closed_is_reached_from_everywhere() -> None:
    assert reachable_from(HANDSHAKE.initial) == set(HandshakeState)
    for state in HandshakeState:
        assert S.CLOSED in reachable_from(state)


# ------------------------------------------------------------------ admission

KNOWN_METHOD = "session/new"
UNKNOWN_METHOD = "no/such_method"
EXTENSION_METHOD = "_vendor/extension"

# (state, method) -> (error class, code) or None when the method is dispatched.
ADMISSION: dict[tuple[HandshakeState, str], tuple[type, int] | None] = {
    (S.UNINITIALIZED, INITIALIZE_METHOD): None,
    (S.UNINITIALIZED, KNOWN_METHOD): (ServerNotInitialized, -32002),
    (S.INITIALIZED, INITIALIZE_METHOD): (ServerNotInitialized, -32002),
    (S.INITIALIZED, KNOWN_METHOD): None,
    (S.CLOSING, INITIALIZE_METHOD): (InternalError, -32603),
    (S.CLOSING, KNOWN_METHOD): (InternalError, -32603),
    (S.CLOSED, INITIALIZE_METHOD): (InternalError, -32603),
    (S.CLOSED, KNOWN_METHOD): (InternalError, -32603),
}
for _state in HandshakeState:
    ADMISSION[(_state, UNKNOWN_METHOD)] = (MethodNotFound, -32601)
    ADMISSION[(_state, EXTENSION_METHOD)] = (MethodNotFound, -32601)


@pytest.mark.parametrize(("state", "method"), list(ADMISSION), ids=lambda v: str(v))
def test_admission(state: HandshakeState, method: str) -> None:
    known = method in (INITIALIZE_METHOD, KNOWN_METHOD)
    expected = ADMISSION[(state, method)]
    error = admission(state, method, known=known)
    if expected is None:
        assert error is None
    else:
        cls, code = expected
        assert type(error) is cls
        assert error is not None
        assert error.code == code
        assert error.to_error()["code"] == code
        if cls is MethodNotFound:
            assert method in error.message


def test_admission_table_covers_every_state() -> None:
    assert {state for state, _ in ADMISSION} == set(HandshakeState)
    assert len(ADMISSION) == 4 * len(HandshakeState)


def test_second_initialize_message() -> None:
    error = admission(S.INITIALIZED, INITIALIZE_METHOD, known=True)
    assert error is not None
    assert "already initialized" in error.message


# ------------------------------------------------------------------ MachineSpec checks


class Color(StrEnum):
    RED = "red"
    GREEN = "green"


class Go(StrEnum):
    GO = "go"
    STOP = "stop"


DOCS: dict[StrEnum, str] = {Color.RED: "stopped", Color.GREEN: "moving"}


def test_spec_rejects_undocumented_states() -> None:
    with pytest.raises(ValueError, match="undocumented states"):
        MachineSpec("lights", Color, Go, Color.RED, (), (), {Color.RED: "stopped"})


CLEAR = Guard("clear", "the road is clear")
BLOCKED = Guard("blocked", "the road is blocked")


def test_spec_rejects_duplicate_rows() -> None:
    rows = (Row(Go.GO, Color.RED, Color.GREEN), Row(Go.GO, (Color.GREEN, Color.RED), Color.RED))
    with pytest.raises(ValueError, match="overlap"):
        MachineSpec("lights", Color, Go, Color.RED, (), rows, DOCS)


def test_spec_rejects_an_unguarded_row_before_a_guarded_one() -> None:
    rows = (Row(Go.GO, Color.RED, Color.GREEN), Row(Go.GO, Color.RED, Color.RED, guard=CLEAR))
    with pytest.raises(ValueError, match="the unguarded one last"):
        MachineSpec("lights", Color, Go, Color.RED, (), rows, DOCS)


def test_the_first_row_whose_guard_holds_is_taken() -> None:
    rows = (
        Row(Go.GO, Color.RED, Color.GREEN, guard=CLEAR),
        Row(Go.GO, Color.RED, Color.RED, guard=BLOCKED),
    )
    spec = MachineSpec("lights", Color, Go, Color.RED, (), rows, DOCS)
    assert len(spec.rows_for(Color.RED, Go.GO)) == 2
    assert spec.guards() == (CLEAR, BLOCKED)
    assert spec.step(Color.RED, Go.GO, {CLEAR: lambda: True, BLOCKED: lambda: True}) == "green"
    assert spec.step(Color.RED, Go.GO, {CLEAR: lambda: False, BLOCKED: lambda: True}) == "red"
    with pytest.raises(IllegalTransition):  # no guard holds: no row applies
        spec.step(Color.RED, Go.GO, {CLEAR: lambda: False, BLOCKED: lambda: False})
    with pytest.raises(ValueError, match="no predicate for the guard clear"):
        spec.step(Color.RED, Go.GO)


def test_a_guard_is_asked_only_when_its_row_is_reached() -> None:
    asked: list[str] = []

    def clear() -> bool:
        asked.append("clear")
        return True

    rows = (Row(Go.GO, Color.RED, Color.GREEN, guard=CLEAR), Row(Go.STOP, Color.RED, Color.RED))
    spec = MachineSpec("lights", Color, Go, Color.RED, (), rows, DOCS)
    assert spec.step(Color.RED, Go.STOP, {CLEAR: clear}) == "red"
    assert asked == []
    assert spec.step(Color.RED, Go.GO, {CLEAR: clear}) == "green"
    assert asked == ["clear"]


def test_guarded_row_in_built_machine() -> None:
    rows = (Row(Go.GO, Color.RED, Color.GREEN, guard=CLEAR),)
    spec = MachineSpec("lights", Color, Go, Color.RED, (), rows, DOCS)

    class Car:
        state: str
        trigger: Any
        clear = False

    car = Car()
    spec.build(car, {CLEAR: lambda: car.clear})
    assert car.trigger("go") is False
    assert car.state == "red"
    car.clear = True
    assert car.trigger("go") is True
    assert car.state == "green"


def test_a_group_holds_working_states_only() -> None:
    with pytest.raises(ValueError, match="group stopped"):
        MachineSpec(
            "lights", Color, Go, Color.RED, (Color.RED,), (), DOCS, groups={"stopped": (Color.RED,)}
        )


def test_row_repr() -> None:
    row = Row(Go.GO, (Color.RED, Color.GREEN), Color.GREEN, guard=Guard("ok", "fine"))
    assert repr(row) == "<Row red|green --go [ok]--> green>"
    assert row.sources == (Color.RED, Color.GREEN)
    assert Row(Go.STOP, Color.GREEN, Color.RED).sources == (Color.GREEN,)
