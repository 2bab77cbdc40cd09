"""The session's machine as a table (every (state, trigger) pair is a row or a rejection, the
`one_waiting` guard picks between rows), and its one owner, `Lifecycle`, driven without a
process: prompts begin, wait in order, are withdrawn, cancelled, and the session closes."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from acp_fsm.fsm.machine import Guard, IllegalTransition
from acp_fsm.fsm.session import BUSY, ONE_WAITING, OPEN, SESSION, SessionState, SessionTrigger
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.schemas import acp_types as acp
from acp_fsm.session.lifecycle import Lifecycle

S, T = SessionState, SessionTrigger

# Unguarded rows, written out by hand as a second witness of the design.
EXPECTED: dict[tuple[SessionState, SessionTrigger], SessionState] = {
    (S.IDLE, T.PROMPT): S.RUNNING,
    (S.RUNNING, T.PROMPT): S.QUEUED,
    (S.QUEUED, T.PROMPT): S.QUEUED,
    (S.RUNNING, T.FINISH): S.IDLE,
    (S.QUEUED, T.FINISH): S.QUEUED,  # others still wait
    (S.QUEUED, T.WITHDRAW): S.QUEUED,
    (S.IDLE, T.CLOSE): S.STOPPING,
    (S.RUNNING, T.CLOSE): S.CLOSING,
    (S.CLOSING, T.FINISH): S.STOPPING,
    (S.CLOSING, T.STOPPED): S.CLOSED,  # the turn outlived the grace
    (S.STOPPING, T.STOPPED): S.CLOSED,
    (S.CLOSED, T.FINISH): S.CLOSED,  # ... and ended later
}


def prompt(text: str = "") -> list[acp.ContentBlock]:
    """A prompt of its own: the lifecycle tells prompts apart by identity."""
    return [{"type": "text", "text": text}]


def guards(one: bool = False) -> dict[Guard, Callable[[], bool]]:
    return {ONE_WAITING: lambda: one}


@pytest.mark.parametrize(
    ("state", "trigger"), list(itertools.product(SessionState, SessionTrigger)), ids=str
)
def test_every_pair_is_a_row_or_a_rejection(state: SessionState, trigger: SessionTrigger) -> None:
    expected = EXPECTED.get((state, trigger))
    if expected is None:
        with pytest.raises(IllegalTransition):
            SESSION.step(state, trigger, guards())
    else:
        assert SESSION.step(state, trigger, guards()) == expected


def test_the_last_waiting_prompt_leaves_a_running_session() -> None:
    for trigger in (T.FINISH, T.WITHDRAW):
        assert SESSION.step(S.QUEUED, trigger, guards(one=True)) == S.RUNNING
        assert SESSION.step(S.QUEUED, trigger, guards(one=False)) == S.QUEUED
    assert [r.guard for r in SESSION.rows if r.guard is not None] == [ONE_WAITING, ONE_WAITING]


def test_open_and_busy_states() -> None:
    assert set(OPEN) == {S.IDLE, S.RUNNING, S.QUEUED}
    assert set(BUSY) == {S.RUNNING, S.QUEUED}
    assert SESSION.initial == S.IDLE and SESSION.final == (S.CLOSED,)


# ---------------------------------------------------------------------- Lifecycle


class Turns:
    """Turns that run until the test lets them end (or their token fires)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.tokens: dict[str, CancellationToken] = {}
        self.release: dict[str, asyncio.Event] = {}

    def run(self, name: str) -> Callable[[CancellationToken], Any]:
        self.release[name] = asyncio.Event()

        async def turn(token: CancellationToken) -> str:
            self.started.append(name)
            self.tokens[name] = token
            try:
                await token.race(self.release[name].wait())
            except Cancelled:
                return f"{name} cancelled"
            return f"{name} done"

        return turn


def state(life: Lifecycle) -> SessionState:
    """The machine's state now (read through a call: mypy would keep an earlier assert's)."""
    return life.state


async def settled() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_prompts_run_one_at_a_time_in_the_order_they_came() -> None:
    life, turns = Lifecycle("s"), Turns()
    a = asyncio.ensure_future(life.admit(prompt("a"), turns.run("a")))
    b = asyncio.ensure_future(life.admit(prompt("b"), turns.run("b")))
    c = asyncio.ensure_future(life.admit(prompt("c"), turns.run("c")))
    assert state(life) == S.QUEUED
    await settled()
    assert turns.started == ["a"]
    turns.release["a"].set()
    assert await a == "a done"
    await settled()
    assert turns.started == ["a", "b"] and state(life) == S.QUEUED
    assert turns.tokens["b"] is not turns.tokens["a"]  # a fresh token for every turn
    turns.release["b"].set()
    turns.release["c"].set()
    assert (await b, await c) == ("b done", "c done")
    assert state(life) == S.IDLE


async def test_a_prompt_takes_the_token_when_it_is_admitted() -> None:
    life, turns = Lifecycle("s"), Turns()
    token = life.token
    admitted = life.admit(prompt(), turns.run("a"))
    assert life.cancel("session/cancel")  # before the turn's task even started
    assert token.is_cancelled and life.token is token
    assert await admitted == "a cancelled"
    assert state(life) == S.IDLE and not life.token.is_cancelled  # a fresh one for the next


async def test_a_cancel_withdraws_every_waiting_prompt_and_reaches_the_running_turn() -> None:
    life, turns = Lifecycle("s"), Turns()
    a = asyncio.ensure_future(life.admit(prompt(), turns.run("a")))
    b = asyncio.ensure_future(life.admit(prompt(), turns.run("b")))
    await settled()
    assert life.cancel("session/cancel")
    assert state(life) == S.RUNNING  # b left the queue at once
    assert (await a, await b) == ("a cancelled", None)  # b never ran
    assert turns.started == ["a"] and state(life) == S.IDLE
    assert not life.cancel("session/cancel")  # idle: nothing to fire


async def test_cancel_request_reaches_one_prompt_waiting_or_running() -> None:
    life, turns = Lifecycle("s"), Turns()
    first, second, third = prompt("n"), prompt("2"), prompt("3")
    a = asyncio.ensure_future(life.admit(first, turns.run("a")))
    b = asyncio.ensure_future(life.admit(second, turns.run("b")))
    c = asyncio.ensure_future(life.admit(third, turns.run("c")))
    await settled()
    assert life.cancel_prompt(second, "$/cancel_request")
    assert not life.cancel_prompt(prompt("2"), "$/cancel_request")  # by identity, not value
    assert await b is None and state(life) == S.QUEUED
    assert life.cancel_prompt(first, "$/cancel_request")
    assert await a == "a cancelled"
    await settled()
    assert turns.started == ["a", "c"] and state(life) == S.RUNNING
    turns.release["c"].set()
    assert await c == "c done"


async def test_a_dropped_waiting_request_leaves_the_queue_and_the_next_one_runs() -> None:
    life, turns = Lifecycle("s"), Turns()
    a = asyncio.ensure_future(life.admit(prompt(), turns.run("a")))
    b = asyncio.ensure_future(life.admit(prompt(), turns.run("b")))
    c = asyncio.ensure_future(life.admit(prompt(), turns.run("c")))
    await settled()
    b.cancel()  # the connection dropped its request
    await settled()
    assert state(life) == S.QUEUED  # c still waits behind a
    turns.release["a"].set()
    turns.release["c"].set()
    assert (await a, await c) == ("a done", "c done")
    assert turns.started == ["a", "c"] and state(life) == S.IDLE


async def test_a_prompt_dropped_as_it_begins_hands_the_session_on() -> None:
    life, turns = Lifecycle("s"), Turns()
    a = asyncio.ensure_future(life.admit(prompt(), turns.run("a")))
    b = asyncio.ensure_future(life.admit(prompt(), turns.run("b")))
    await settled()

    async def drop_b_as_it_begins() -> None:
        await life.until(S.RUNNING)  # woken before b is: b began, and has not run yet
        b.cancel()  # the connection dropped its request

    dropper = asyncio.ensure_future(drop_b_as_it_begins())
    await settled()
    turns.release["a"].set()
    await asyncio.gather(a, dropper)
    with pytest.raises(asyncio.CancelledError):
        await b
    assert turns.started == ["a"] and state(life) == S.IDLE
    c = asyncio.ensure_future(life.admit(prompt(), turns.run("c")))
    await settled()
    turns.release["c"].set()
    assert await c == "c done" and turns.started == ["a", "c"]


async def test_close_cancels_drains_then_stops_and_takes_no_prompt() -> None:
    life, turns = Lifecycle("s"), Turns()
    a = asyncio.ensure_future(life.admit(prompt(), turns.run("a")))
    b = asyncio.ensure_future(life.admit(prompt(), turns.run("b")))
    await settled()
    seen: list[SessionState] = []

    async def stop() -> None:
        seen.append(state(life))

    await life.close("session/close", 1.0, stop)
    assert seen == [S.STOPPING]  # the turn drained before anything was stopped
    assert state(life) == S.CLOSED and not life.taking_prompts
    assert (await a, await b) == ("a cancelled", None)


async def test_a_turn_that_outlives_the_grace_ends_after_the_close() -> None:
    life = Lifecycle("s")
    ended = asyncio.Event()

    async def stubborn(token: CancellationToken) -> str:
        await ended.wait()  # ignores its token
        return "late"

    a = asyncio.ensure_future(life.admit(prompt(), stubborn))
    await settled()
    stopped: list[SessionState] = []

    async def stop() -> None:
        stopped.append(state(life))

    await life.close("shutdown", 0.01, stop)
    assert stopped == [S.CLOSING] and state(life) == S.CLOSED
    ended.set()
    assert await a == "late" and state(life) == S.CLOSED


async def test_a_second_close_waits_for_the_first() -> None:
    life, turns = Lifecycle("s"), Turns()
    gate = asyncio.Event()
    stops = 0

    async def stop() -> None:
        nonlocal stops
        stops += 1
        await gate.wait()

    a = asyncio.ensure_future(life.admit(prompt(), turns.run("a")))
    await settled()
    first = asyncio.ensure_future(life.close("session/close", 1.0, stop))
    await settled()
    second = asyncio.ensure_future(life.close("shutdown", 1.0, stop))
    await settled()
    assert not second.done()
    gate.set()
    await asyncio.gather(first, second)
    assert stops == 1 and state(life) == S.CLOSED
    assert await a == "a cancelled"
