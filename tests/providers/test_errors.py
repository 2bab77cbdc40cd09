"""Failures, both providers: HTTP errors, errors inside a 200 stream, retries, broken
connections and timeouts."""

from __future__ import annotations

import time
from dataclasses import replace
from itertools import pairwise

import pytest

from acp_fsm.devkit.provider import (
    Drop,
    ErrorEvent,
    Hang,
    HttpError,
    Raw,
    Reply,
    ScriptedProvider,
    render_anthropic,
)
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.providers import http
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.types import Event, Finished, TextDelta
from tests.providers.conftest import (
    API_KEY,
    collect,
    collect_until_error,
    events_through,
    make_config,
    start_stream,
    without_usage,
)
from tests.timing import INTERRUPTED_S

# The error type each provider uses for a transient failure inside a 200 stream.
STREAM_ERROR_TYPES = {"openai": "server_error", "anthropic": "overloaded_error"}


async def fail(config: ProviderConfig, events: list[Event] | None = None) -> ProviderError:
    """Run one call that must fail; return its ProviderError."""
    with pytest.raises(ProviderError) as caught:
        await collect_until_error(start_stream(config), [] if events is None else events)
    return caught.value


def gaps(server: ScriptedProvider) -> list[float]:
    times = [r.time for r in server.requests]
    return [b - a for a, b in pairwise(times)]


def assert_ok(events: list[Event], text: str) -> None:
    assert isinstance(events[-1], Finished)
    assert events[-1].message.text == text


# ------------------------------------------------------------ errors inside a 200 stream


async def test_error_event_after_output_is_raised_not_retried(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    reply = Reply(text=("Alpha", "Beta"), delay_s=0.02)
    after = events_through(provider, reply, "Alpha")
    server.script(replace(reply, fault=ErrorEvent(after, message="Overloaded")), Reply(text="x"))
    events: list[Event] = []
    error = await fail(config, events)
    assert without_usage(events) == [TextDelta("Alpha")]
    kind = STREAM_ERROR_TYPES[provider]
    assert (error.status, error.error_type, error.message, error.retryable) == (
        None,
        kind,
        "Overloaded",
        True,
    )
    assert str(error) == f"{provider} stream {kind}: Overloaded"
    assert len(server.requests) == 1


async def test_error_event_as_the_first_thing_is_retried(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(Reply(text="lost", fault=ErrorEvent(0)), Reply(text="ok"))
    assert_ok(await collect(config), "ok")
    assert len(server.requests) == 2


async def test_openai_error_chunk_after_the_role_chunk_is_retried(server: ScriptedProvider) -> None:
    server.script(Reply(text="lost", fault=ErrorEvent(1)), Reply(text="ok"))
    assert_ok(await collect(make_config(server, "openai")), "ok")
    assert len(server.requests) == 2


async def test_non_transient_error_event_is_not_retried(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(
        Reply(fault=ErrorEvent(0, "invalid_request_error", "prompt is too long")),
        Reply(text="never"),
    )
    error = await fail(config)
    assert (error.error_type, error.message, error.retryable) == (
        "invalid_request_error",
        "prompt is too long",
        False,
    )
    assert len(server.requests) == 1


_OVERLOADED = (
    b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
    b'"message":"Overloaded"}}\n\n'
)


async def test_anthropic_error_after_message_start_in_one_chunk_is_retried(
    server: ScriptedProvider,
) -> None:
    start, block, *_ = render_anthropic(Reply(text="x"))
    server.script(Raw((start + block + _OVERLOADED,)), Reply(text="ok"))
    assert_ok(await collect(make_config(server, "anthropic")), "ok")
    assert len(server.requests) == 2


async def test_anthropic_error_after_message_start_in_two_chunks_is_retried(
    server: ScriptedProvider,
) -> None:
    start, block, *_ = render_anthropic(Reply(text="x"))
    server.script(Raw((start, 0.05, block + _OVERLOADED)), Reply(text="ok"))
    assert_ok(await collect(make_config(server, "anthropic")), "ok")
    assert len(server.requests) == 2


# ------------------------------------------------------------------- HTTP errors, retries


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after-ms": "200"},
        {"retry-after": "0.2"},
        {"retry-after-ms": "200", "retry-after": "30"},  # the millisecond header wins
    ],
    ids=["retry-after-ms", "retry-after", "both"],
)
async def test_429_honours_the_retry_headers(
    server: ScriptedProvider, config: ProviderConfig, headers: dict[str, str]
) -> None:
    server.script(HttpError(429, "Rate limit reached", headers=headers), Reply(text="ok"))
    assert_ok(await collect(config), "ok")
    assert len(server.requests) == 2
    assert 0.2 <= gaps(server)[0] < 1.0


async def test_anthropic_529_overloaded_then_success(server: ScriptedProvider) -> None:
    server.script(HttpError(529, "Overloaded"), HttpError(529, "Overloaded"), Reply(text="ok"))
    assert_ok(await collect(make_config(server, "anthropic")), "ok")
    assert len(server.requests) == 3
    assert all(gap >= 0.0075 for gap in gaps(server))  # back-off: 0.75 x retry_base_s at least


@pytest.mark.parametrize(
    ("provider", "failure", "expected"),
    [
        (
            "openai",
            HttpError(
                500, "The server had an error while processing your request.", "server_error"
            ),
            "openai HTTP 500 server_error: The server had an error while processing your request.",
        ),
        (
            "openai",
            HttpError(
                429,
                "Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM).",
                "tokens",
                code="rate_limit_exceeded",
            ),
            "openai HTTP 429 rate_limit_exceeded: Rate limit reached for gpt-5 in organization "
            "org-x on tokens per min (TPM).",
        ),
        (
            "anthropic",
            HttpError(529, "Overloaded", "overloaded_error"),
            "anthropic HTTP 529 overloaded_error: Overloaded",
        ),
        (
            "anthropic",
            HttpError(429, "This request would exceed the rate limit.", "rate_limit_error"),
            "anthropic HTTP 429 rate_limit_error: This request would exceed the rate limit.",
        ),
    ],
)
async def test_retries_exhausted(
    server: ScriptedProvider, provider: str, failure: HttpError, expected: str
) -> None:
    server.script(failure, failure, failure, Reply(text="never"))
    error = await fail(make_config(server, provider))
    assert str(error) == expected
    assert error.status == failure.status
    assert error.retryable is True
    assert len(server.requests) == 3  # max_retries=2
    assert server.remaining == 1


async def test_no_retry_when_max_retries_is_zero(server: ScriptedProvider, provider: str) -> None:
    server.script(HttpError(503, "busy"), Reply(text="never"))
    error = await fail(make_config(server, provider, max_retries=0))
    assert error.status == 503
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "retried"),
    [
        (400, False),
        (403, False),
        (404, False),
        (413, False),
        (422, False),
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (529, True),
    ],
)
async def test_which_statuses_are_retried(
    server: ScriptedProvider, config: ProviderConfig, status: int, retried: bool
) -> None:
    server.script(HttpError(status, "scripted"), Reply(text="ok"))
    if retried:
        assert_ok(await collect(config), "ok")
    else:
        error = await fail(config)
        assert (error.status, error.message, error.retryable) == (status, "scripted", False)
    assert len(server.requests) == (2 if retried else 1)


async def test_non_json_error_body(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    page = HttpError(502, body=b"<html><body>502 Bad Gateway</body></html>\n")
    server.script(page, page, page)
    error = await fail(config)
    assert str(error) == f"{provider} HTTP 502: <html><body>502 Bad Gateway</body></html>"
    assert error.error_type is None


# ------------------------------------------------------------------ keys and quotas

_UNAUTHORIZED = {
    "openai": (
        "invalid_api_key",
        "Incorrect API key provided: sk-***7890. You can find your "
        "API key at https://platform.openai.com/account/api-keys.",
    ),
    "anthropic": ("authentication_error", "invalid x-api-key"),
}


async def test_401_is_not_retried_and_never_shows_the_key(
    server: ScriptedProvider, provider: str
) -> None:
    wrong = "sk-wrong-key-1234567890"
    config = make_config(server, provider, api_key=wrong)
    stream = start_stream(config)
    server.script(Reply(text="never"))
    with pytest.raises(ProviderError) as caught:
        await collect_until_error(stream, [])
    error = caught.value
    assert (error.status, error.retryable) == (401, False)
    assert (error.error_type, error.message) == _UNAUTHORIZED[provider]
    assert len(server.requests) == 1
    for text in (str(error), repr(error), repr(stream), repr(config), str(config)):
        assert wrong not in text
        assert API_KEY not in text


async def test_missing_key_gives_a_clear_401(server: ScriptedProvider, provider: str) -> None:
    error = await fail(make_config(server, provider, api_key=None))
    assert error.status == 401
    assert (
        error.message
        == {
            "openai": "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer "
            "YOUR_KEY).",
            "anthropic": "x-api-key header is required",
        }[provider]
    )


async def test_openai_insufficient_quota_is_not_retried(server: ScriptedProvider) -> None:
    quota = HttpError(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        code="insufficient_quota",
    )
    server.script(quota, Reply(text="never"))
    error = await fail(make_config(server, "openai"))
    assert (error.status, error.error_type, error.retryable) == (429, "insufficient_quota", False)
    assert len(server.requests) == 1


async def test_anthropic_spend_limit_is_not_retried(server: ScriptedProvider) -> None:
    limit = HttpError(
        429,
        "You have reached your API usage limits: your organization has "
        "crossed its monthly API usage threshold.",
        "rate_limit_error",
        details={"error_code": "enforced_spend_limit_reached"},
    )
    server.script(limit, Reply(text="never"))
    error = await fail(make_config(server, "anthropic"))
    assert (error.status, error.retryable) == (429, False)
    assert len(server.requests) == 1


# ------------------------------------------------------------ connections and timeouts


async def test_connection_dropped_after_output(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    reply = Reply(text=("Alpha", "Beta"), delay_s=0.02)
    server.script(
        replace(reply, fault=Drop(events_through(provider, reply, "Alpha"))), Reply(text="never")
    )
    events: list[Event] = []
    error = await fail(config, events)
    assert without_usage(events) == [TextDelta("Alpha")]
    assert (error.status, error.error_type, error.retryable) == (None, "connection_error", True)
    assert error.message.startswith("connection failed: ClientPayloadError: ")
    assert len(server.requests) == 1


async def test_connection_dropped_before_output_is_retried(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(Reply(text="lost", fault=Drop(0)), Reply(text="ok"))
    assert_ok(await collect(config), "ok")
    assert len(server.requests) == 2


async def test_connection_refused_is_retried_then_raised(provider: str) -> None:
    closed = await ScriptedProvider().start()
    config = make_config(closed, provider, max_retries=1)
    await closed.stop()
    started = time.monotonic()
    try:
        error = await fail(config)
    finally:
        await http.close_client_session()
    assert (error.status, error.error_type, error.retryable) == (None, "connection_error", True)
    assert error.message.startswith("connection failed: ClientConnectorError: ")
    assert time.monotonic() - started < INTERRUPTED_S  # no connect timeout waited out


async def test_idle_read_timeout(server: ScriptedProvider, provider: str) -> None:
    reply = Reply(text=("Alpha", "Beta"))
    server.script(replace(reply, fault=Hang(events_through(provider, reply, "Alpha"))))
    events: list[Event] = []
    started = time.monotonic()
    error = await fail(make_config(server, provider, read_timeout_s=0.3), events)
    elapsed = time.monotonic() - started
    assert without_usage(events) == [TextDelta("Alpha")]
    assert (error.status, error.error_type, error.retryable) == (None, "timeout", True)
    assert error.message == "timed out: Timeout on reading data from socket"
    assert 0.3 <= elapsed < INTERRUPTED_S  # the read bound, not the endless hang
    assert len(server.requests) == 1
    await server.wait_for_disconnects(1)  # the client closed the stalled connection


async def test_idle_read_timeout_before_output_is_retried(
    server: ScriptedProvider, provider: str
) -> None:
    server.script(Reply(text="lost", fault=Hang(0)), Reply(text="ok"))
    events = await collect(make_config(server, provider, read_timeout_s=0.3))
    assert_ok(events, "ok")
    assert len(server.requests) == 2


# ---------------------------------------------------------------------- the stream object


async def test_stream_repr_shows_state(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    server.script(Reply(text="ok"))
    stream = start_stream(config)
    assert repr(stream) == f"<ModelStream {provider} m open attempt=0 yielded=False>"
    async with stream:
        async for _ in stream:
            pass
    assert repr(stream) == f"<ModelStream {provider} m closed attempt=1 yielded=True>"


async def test_a_finished_stream_stays_finished(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    server.script(Reply(text="ok"), Reply(text="must not be requested"))
    stream = start_stream(config)
    await collect_until_error(stream, [])
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert len(server.requests) == 1


@pytest.mark.parametrize("how", ["after_error", "after_aclose"])
async def test_a_closed_stream_sends_no_more_requests(
    server: ScriptedProvider, config: ProviderConfig, how: str
) -> None:
    server.script(HttpError(400, "bad request"), Reply(text="must not be requested"))
    stream = start_stream(config, CancellationToken())
    if how == "after_error":
        with pytest.raises(ProviderError):
            await collect_until_error(stream, [])
    else:
        await stream.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert len(server.requests) == (1 if how == "after_error" else 0)
