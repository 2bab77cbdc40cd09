"""CancellationToken: one-shot, synchronous callbacks, `wait`, and `race` (pure/async tier).

`race` must tell the two kinds of cancellation apart: the token firing is `Cancelled`, a
cancellation of the awaiting task itself stays `asyncio.CancelledError` (STYLE §9).
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

from acp_fsm.protocol.cancel import CancellationToken, Cancelled


def test_fresh_token_is_live() -> None:
    token = CancellationToken("turn-1")
    assert not token.is_cancelled
    assert token.reason is None
    token.raise_if_cancelled()  # does not raise
    assert repr(token) == "<CancellationToken turn-1 live>"


def test_cancel_is_idempotent_and_keeps_first_reason() -> None:
    token = CancellationToken("t")
    assert token.cancel("user") is True
    assert token.cancel("again") is False
    assert token.cancel() is False
    assert token.is_cancelled
    assert token.reason == "user"
    assert repr(token) == "<CancellationToken t cancelled='user'>"


def test_default_reason() -> None:
    token = CancellationToken()
    token.cancel()
    assert token.reason == "cancelled"


def test_raise_if_cancelled_carries_reason() -> None:
    token = CancellationToken()
    token.cancel("session/cancel")
    with pytest.raises(Cancelled) as caught:
        token.raise_if_cancelled()
    assert caught.value.reason == "session/cancel"
    assert str(caught.value) == "session/cancel"
    assert not isinstance(caught.value, asyncio.CancelledError)


def test_callbacks_run_once_synchronously_in_order() -> None:
    token = CancellationToken()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append("a"))
    token.on_cancel(lambda: calls.append("b"))
    assert calls == []
    token.cancel()
    assert calls == ["a", "b"]  # already ran, before cancel() returned
    token.cancel()
    assert calls == ["a", "b"]


def test_callback_sees_token_already_cancelled() -> None:
    token = CancellationToken()
    seen: list[str | None] = []
    token.on_cancel(lambda: seen.append(token.reason))
    token.cancel("why")
    assert seen == ["why"]


def test_on_cancel_after_cancel_runs_immediately() -> None:
    token = CancellationToken()
    token.cancel()
    calls: list[int] = []
    remove = token.on_cancel(lambda: calls.append(1))
    assert calls == [1]
    remove()  # a no-op, must not raise
    token.cancel()
    assert calls == [1]


def test_remover_unregisters_callback() -> None:
    token = CancellationToken()
    calls: list[str] = []
    remove_a = token.on_cancel(lambda: calls.append("a"))
    token.on_cancel(lambda: calls.append("b"))
    remove_a()
    remove_a()  # twice is harmless
    token.cancel()
    assert calls == ["b"]
    remove_a()  # after cancel too


def test_remover_removes_only_its_own_registration() -> None:
    token = CancellationToken()
    calls: list[int] = []

    def callback() -> None:
        calls.append(1)

    remove_first = token.on_cancel(callback)
    token.on_cancel(callback)
    remove_first()
    token.cancel()
    assert calls == [1]


# ------------------------------------------------------------------ wait


async def test_wait_returns_reason_when_fired_later() -> None:
    token = CancellationToken()
    waiter = asyncio.create_task(token.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    token.cancel("stop")
    assert await waiter == "stop"


async def test_wait_on_fired_token_returns_at_once() -> None:
    token = CancellationToken()
    token.cancel("done")
    assert await token.wait() == "done"


async def test_cancelled_waiter_leaves_no_callback_behind() -> None:
    token = CancellationToken()
    waiter = asyncio.create_task(token.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    calls: list[int] = []
    token.on_cancel(lambda: calls.append(1))
    token.cancel()  # the dead waiter's callback must not fail on its cancelled future
    assert calls == [1]


# ------------------------------------------------------------------ race


async def test_race_returns_value_when_not_cancelled() -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 42

    token = CancellationToken()
    assert await token.race(work()) == 42
    token.cancel()  # nothing left registered from the race
    assert token.is_cancelled


async def test_race_accepts_a_future() -> None:
    token = CancellationToken()
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.set_result, "ok")
    assert await token.race(future) == "ok"


async def test_race_raises_cancelled_and_cancels_inner_when_token_fires() -> None:
    token = CancellationToken()
    started = asyncio.Event()
    inner_saw: list[str] = []

    async def inner() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            inner_saw.append("CancelledError")
            raise
        return "unreachable"

    racer = asyncio.create_task(token.race(inner()))
    await started.wait()
    assert token.cancel("user cancelled") is True
    with pytest.raises(Cancelled) as caught:
        await racer
    assert caught.value.reason == "user cancelled"
    assert inner_saw == ["CancelledError"]
    assert not racer.cancelled()


async def test_race_cancels_inner_task_when_token_fires() -> None:
    token = CancellationToken()
    inner = asyncio.create_task(asyncio.sleep(30))
    racer = asyncio.create_task(token.race(inner))
    await asyncio.sleep(0)
    token.cancel()
    with pytest.raises(Cancelled):
        await racer
    assert inner.cancelled()


async def test_race_on_fired_token_closes_coroutine_without_running_it() -> None:
    token = CancellationToken()
    token.cancel("early")
    ran: list[int] = []

    async def work() -> None:
        ran.append(1)

    coro = work()
    with pytest.raises(Cancelled) as caught:
        await token.race(coro)
    assert caught.value.reason == "early"
    assert ran == []
    # Closed, so no "coroutine was never awaited" warning (filterwarnings = error).
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


async def test_race_on_fired_token_cancels_a_task() -> None:
    token = CancellationToken()
    token.cancel()
    inner = asyncio.create_task(asyncio.sleep(30))
    try:
        with pytest.raises(Cancelled):
            await token.race(inner)
        await asyncio.sleep(0)
        assert inner.cancelled()
    finally:
        inner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await inner


async def test_outer_task_cancel_during_race_is_cancelled_error_not_cancelled() -> None:
    token = CancellationToken()
    started = asyncio.Event()
    inner_saw: list[str] = []

    async def inner() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            inner_saw.append("CancelledError")
            raise

    outcome: list[str] = []

    async def racer() -> None:
        try:
            await token.race(inner())
        except Cancelled:
            outcome.append("Cancelled")
            raise
        except asyncio.CancelledError:
            outcome.append("CancelledError")
            raise

    task = asyncio.create_task(racer())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert outcome == ["CancelledError"]
    assert inner_saw == ["CancelledError"]
    assert not token.is_cancelled


async def test_outer_cancel_wins_even_if_token_also_fires() -> None:
    token = CancellationToken()
    started = asyncio.Event()

    async def inner() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(token.race(inner()))
    await started.wait()
    task.cancel()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


def test_a_failing_callback_does_not_strand_the_others() -> None:
    token = CancellationToken()
    released: list[str] = []

    def boom() -> None:
        raise RuntimeError("callback failed")

    token.on_cancel(boom)
    token.on_cancel(lambda: released.append("second"))
    with pytest.raises(RuntimeError, match="callback failed"):
        token.cancel()
    assert released == ["second"]
    assert token.is_cancelled
