"""Cancellation by the turn's token, both providers: what the caller gets, how fast, and that
the server sees the connection go away."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from acp_fsm.devkit.provider import (
    Call,
    Hang,
    HttpError,
    Raw,
    Reply,
    ScriptedProvider,
    render_openai,
)
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.errors import StreamCancelled
from acp_fsm.providers.types import (
    AssistantMessage,
    Event,
    Finished,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallArgsDelta,
    ToolCallStarted,
)
from tests.harness import wait_until
from tests.providers.conftest import (
    collect,
    events_through,
    make_config,
    start_stream,
    without_usage,
)

# "Within a few tens of ms": the token's callback fails the pending read synchronously.
PROMPT_S = 0.05


class Canceller:
    """Fires a token later and remembers when."""

    def __init__(self, token: CancellationToken, reason: str = "cancelled") -> None:
        self.token = token
        self.reason = reason
        self.at: float | None = None
        self._asked: asyncio.Task[None] | None = None

    def fire(self) -> None:
        self.at = time.monotonic()
        self.token.cancel(self.reason)

    def fire_in(self, seconds: float) -> None:
        asyncio.get_running_loop().call_later(seconds, self.fire)

    def fire_once_asked(self, server: ScriptedProvider, seconds: float = 0.0) -> None:
        """Fire `seconds` after `server` has the request (on a busy machine sending it may
        take longer than any fixed delay)."""

        async def fire() -> None:
            await wait_until(lambda: server.requests, "the request")
            self.fire_in(seconds)

        self._asked = asyncio.create_task(fire())

    def latency(self) -> float:
        assert self.at is not None, "the token never fired"
        return time.monotonic() - self.at


async def cancel_stream(
    config: ProviderConfig, canceller: Canceller, when: Callable[[Event], bool] | None = None
) -> tuple[list[Event], StreamCancelled, float]:
    """Stream until StreamCancelled (firing the token 50 ms after the first event matching
    `when`, if given); return the events, the exception and the cancel-to-raise latency."""
    events: list[Event] = []
    stream = start_stream(config, canceller.token)

    async def consume() -> None:
        async with stream:
            async for event in stream:
                events.append(event)
                if when is not None and when(event) and canceller.at is None:
                    canceller.fire_in(0.05)

    with pytest.raises(StreamCancelled) as caught:
        async with asyncio.timeout(3):
            await consume()
    return events, caught.value, canceller.latency()


async def test_cancel_mid_stream_keeps_text_drops_the_half_streamed_call(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    reply = Reply(text=("Hel", "lo"), calls=(Call("call_1", "read_file", ('{"pa', 'th": 1}')),))
    after = events_through(provider, reply, '{"pa')
    server.script(replace(reply, fault=Hang(after)))
    canceller = Canceller(CancellationToken("turn-1"), "user pressed stop")
    events, error, latency = await cancel_stream(
        config, canceller, lambda e: isinstance(e, ToolCallArgsDelta)
    )
    assert latency < PROMPT_S
    assert without_usage(events) == [
        TextDelta("Hel"),
        TextDelta("lo"),
        ToolCallStarted("call_1", "read_file"),
        ToolCallArgsDelta("call_1", '{"pa'),
    ]
    assert error.partial == AssistantMessage((TextPart("Hello"),))
    assert isinstance(error, Cancelled)
    assert error.reason == "user pressed stop"
    async with asyncio.timeout(1):
        (disconnect,) = await server.wait_for_disconnects(1)
    assert canceller.at is not None
    assert disconnect.time - canceller.at < PROMPT_S
    assert disconnect.events_sent == after
    assert len(server.requests) == 1


async def test_cancel_during_thinking_keeps_the_unsigned_thinking(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    reply = Reply(thinking=("Let me", " see"), signature="sig-never-sent", text="x")
    server.script(replace(reply, fault=Hang(events_through(provider, reply, " see"))))
    canceller = Canceller(CancellationToken())
    events, error, latency = await cancel_stream(
        config, canceller, lambda e: e == ThinkingDelta(" see")
    )
    assert latency < PROMPT_S
    assert without_usage(events) == [ThinkingDelta("Let me"), ThinkingDelta(" see")]
    assert error.partial == AssistantMessage((ThinkingPart("Let me see", None),))


async def test_cancel_during_back_off(server: ScriptedProvider, config: ProviderConfig) -> None:
    server.script(
        HttpError(429, "Rate limited", headers={"retry-after": "30"}), Reply(text="never")
    )
    canceller = Canceller(CancellationToken())
    started = time.monotonic()
    canceller.fire_once_asked(server, 0.1)  # answered by then: backing off
    _, error, latency = await cancel_stream(config, canceller)
    assert latency < PROMPT_S
    assert canceller.at is not None and canceller.at - started >= 0.1
    assert error.partial == AssistantMessage(())
    assert len(server.requests) == 1
    assert server.remaining == 1


async def test_cancel_before_the_response_headers(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(Reply(text="late", headers_delay_s=30))
    canceller = Canceller(CancellationToken())
    canceller.fire_once_asked(server)
    _, error, latency = await cancel_stream(config, canceller)
    assert latency < PROMPT_S
    assert error.partial == AssistantMessage(())
    async with asyncio.timeout(1):
        (disconnect,) = await server.wait_for_disconnects(1)
    assert disconnect.events_sent == 0
    assert canceller.at is not None and disconnect.time - canceller.at < PROMPT_S


async def test_token_cancelled_before_the_call_sends_nothing(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(Reply(text="never"))
    token = CancellationToken()
    token.cancel("turn over")
    with pytest.raises(StreamCancelled) as caught:
        await collect(config, token)
    assert caught.value.reason == "turn over"
    assert caught.value.partial == AssistantMessage(())
    assert server.requests == []


async def test_task_cancellation_propagates_and_closes_the_connection(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    reply = Reply(text=("Alpha", "Beta"))
    server.script(replace(reply, fault=Hang(events_through(provider, reply, "Alpha"))))
    stream = start_stream(config)
    got_text = asyncio.Event()

    async def consume() -> None:
        async with stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    got_text.set()

    task = asyncio.create_task(consume())
    async with asyncio.timeout(2):
        await got_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "closed" in repr(stream)
    async with asyncio.timeout(1):
        await server.wait_for_disconnects(1)


async def test_cancel_after_the_stream_finished_changes_nothing(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(Reply(text="done"))
    token = CancellationToken()
    events = await collect(config, token)
    assert token.cancel() is True
    assert isinstance(events[-1], Finished)
    assert events[-1].message.text == "done"
    assert server.disconnects == []


def _cancel_once_headers_arrived(token: CancellationToken) -> None:
    """Fire `token` in the loop iteration after the POST task finished (its response has
    arrived) and before the stream's task resumed with it."""
    watched: set[asyncio.Task[object]] = set()

    def poll() -> None:
        watched.update(
            t
            for t in asyncio.all_tasks()
            if type(t.get_coro()).__name__.endswith("RequestContextManager")
        )
        if any(t.done() for t in watched):
            token.cancel()
        else:
            asyncio.get_running_loop().call_soon(poll)

    asyncio.get_running_loop().call_soon(poll)


async def test_cancel_as_the_headers_arrive_is_still_prompt(
    server: ScriptedProvider, provider: str
) -> None:
    server.script(Reply(text="x", fault=Hang(0)))
    token = CancellationToken()
    _cancel_once_headers_arrived(token)
    outcome: BaseException | None = None
    try:
        async with asyncio.timeout(0.5):
            await collect(make_config(server, provider, read_timeout_s=1.0), token)
    except (StreamCancelled, TimeoutError) as exc:
        outcome = exc
    if not token.is_cancelled:
        pytest.fail("the poller never saw the POST task finish: the window was not hit")
    assert isinstance(outcome, StreamCancelled), "the cancel was not noticed within 0.5 s"


async def test_cancel_during_back_off_reports_only_what_the_caller_saw(
    server: ScriptedProvider,
) -> None:
    role, ghost, *_ = render_openai(Reply(text="ghost"))
    error = b'data: {"error":{"message":"boom","type":"server_error","param":null}}\n\n'
    server.script(Raw((role + ghost + error,)), Reply(text="never"))
    canceller = Canceller(CancellationToken())
    canceller.fire_once_asked(server, 0.1)
    config = make_config(server, "openai", retry_base_s=5.0, retry_max_s=5.0)
    events, cancelled, _ = await cancel_stream(config, canceller)
    assert events == []
    assert cancelled.partial == AssistantMessage(())
