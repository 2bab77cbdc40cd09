"""`blocking.Shared`: callers who ask at once share one call, and nobody is given the outcome
of a call that started before they asked (a file is read as it is when asked for)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from acp_fsm.blocking import Shared
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from tests.harness import wait_until


class Gate:
    """A blocking function whose calls wait until released; each returns its call number."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, *args: object) -> int:
        self.calls += 1
        number = self.calls
        self.entered.set()
        assert self.release.wait(5), "never released"
        return number


async def test_callers_at_once_share_one_call() -> None:
    gate = Gate()
    gate.release.set()
    shared = Shared(gate)
    assert await asyncio.gather(*(shared(None, "x") for _ in range(50))) == [1] * 50
    assert gate.calls == 1


async def test_a_caller_during_a_call_gets_the_next_one() -> None:
    gate = Gate()
    shared = Shared(gate)
    first = asyncio.ensure_future(shared(None, "x"))
    await wait_until(gate.entered.is_set, "the first call to start")
    later = [asyncio.ensure_future(shared(None, "x")) for _ in range(3)]
    gate.release.set()
    assert await first == 1
    assert await asyncio.gather(*later) == [2, 2, 2]  # one call, started after they asked
    assert gate.calls == 2


async def test_other_arguments_are_other_calls() -> None:
    gate = Gate()
    gate.release.set()
    shared = Shared(gate)
    assert sorted(await asyncio.gather(shared(None, "a"), shared(None, "b"))) == [1, 2]


async def test_a_cancelled_caller_leaves_the_call_to_the_others() -> None:
    gate = Gate()
    shared = Shared(gate)
    token = CancellationToken("test")
    cancelled = asyncio.ensure_future(shared(token, "x"))
    other = asyncio.ensure_future(shared(None, "x"))
    await wait_until(gate.entered.is_set, "the call to start")
    token.cancel()
    with pytest.raises(Cancelled):
        await cancelled
    gate.release.set()
    assert await other == 1


async def test_a_failure_reaches_every_caller() -> None:
    def fail(_: str) -> None:
        raise OSError("unreadable")

    shared = Shared(fail)
    outcomes = await asyncio.gather(shared(None, "x"), shared(None, "x"), return_exceptions=True)
    assert [str(o) for o in outcomes] == ["unreadable", "unreadable"]
