"""Successful streams, both providers: the neutral events and the assembled message."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Raw, Reply, ScriptedProvider, Truncate, render_openai
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.providers import open_stream
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.types import (
    AssistantMessage,
    Event,
    Finished,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallPart,
    ToolCallStarted,
    Usage,
)
from acp_fsm.redact import Secrets
from tests.providers.conftest import (
    collect,
    collect_until_error,
    events_through,
    make_config,
    make_request,
    rendered,
    split,
    start_stream,
    usages,
    without_usage,
)

END = StopReason.END_TURN
TOOL = StopReason.TOOL_USE
USAGE = Usage(input_tokens=21, output_tokens=9)


def finished(
    *parts: TextPart | ThinkingPart | ToolCallPart, stop: StopReason = END, usage: Usage = USAGE
) -> Finished:
    return Finished(stop, AssistantMessage(parts, stop), usage)


# ------------------------------------------------------------------------------ text


async def test_plain_text_stream(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    server.script(Reply(text=("Hel", "lo ", "wörld"), usage=USAGE))
    events = await collect(config)
    deltas: list[Event] = [TextDelta("Hel"), TextDelta("lo "), TextDelta("wörld")]
    done = finished(TextPart("Hello wörld"))
    if provider == "openai":  # the usage chunk comes after the finish chunk
        assert events == [*deltas, USAGE, done]
    else:  # message_start carries the input count, message_delta the final output count
        assert events == [Usage(21, 1), *deltas, USAGE, done]
    assert len(server.requests) == 1
    assert server.remaining == 0


@pytest.mark.parametrize("stop", list(StopReason))
async def test_stop_reasons_are_normalized(
    server: ScriptedProvider, config: ProviderConfig, stop: StopReason
) -> None:
    server.script(Reply(text="x", stop=stop, usage=USAGE))
    events = await collect(config)
    assert events[-1] == finished(TextPart("x"), stop=stop)


def _raw_variant(blob: bytes, variant: str) -> bytes:
    """The same stream with other line ends, `data:` without its space, comments, a BOM."""
    blob = blob.replace(b"data: ", b"data:").replace(b"event: ", b"event:")
    blob = blob.replace(b"\n\n", b"\n: keep-alive comment\n\n")
    if variant == "crlf":
        blob = b"\xef\xbb\xbf" + blob.replace(b"\n", b"\r\n")
    elif variant == "cr":
        blob = blob.replace(b"\n", b"\r")
    return blob


def _split_points(blob: bytes) -> list[int]:
    """Cuts inside `data:`, inside both multibyte characters, mid-JSON and right after a
    line end (a lone \\r at the end of a chunk must wait for a possible \\n)."""
    second_data = blob.index(b"data:", blob.index(b"data:") + 1)
    umlaut = blob.index("ü".encode())
    emoji = blob.index("🎉".encode())
    first_end = blob.index(b"\r") if b"\r" in blob else blob.index(b"\n")
    return sorted(
        {
            second_data + 2,
            umlaut + 1,
            emoji + 1,
            emoji + 3,
            emoji - 10,
            first_end + 1,
            len(blob) - 3,
        }
    )


@pytest.mark.parametrize("variant", ["lf", "crlf", "cr"])
async def test_raw_chunks_split_inside_lines_prefixes_and_characters(
    server: ScriptedProvider, config: ProviderConfig, provider: str, variant: str
) -> None:
    reply = Reply(text=("Grüße ", "🎉 ", "done"), usage=USAGE)
    blob = _raw_variant(b"".join(rendered(provider, reply)), variant)
    parts: list[bytes | float] = []
    for piece in split(blob, _split_points(blob)):
        parts += [piece, 0.005]
    server.script(Raw(tuple(parts)))
    events = await collect(config)
    assert without_usage(events) == [
        TextDelta("Grüße "),
        TextDelta("🎉 "),
        TextDelta("done"),
        finished(TextPart("Grüße 🎉 done")),
    ]


# ------------------------------------------------------------------------------ tools

ARGS = '{"path": "/tmp/ü.txt", "limit": 10}'
READ_PART = ToolCallPart("call_1", "read_file", {"path": "/tmp/ü.txt", "limit": 10}, ARGS)


async def test_tool_call_split_over_many_chunks(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    fragments = tuple(ARGS[i : i + 3] for i in range(0, len(ARGS), 3))
    server.script(
        Reply(text="Reading.", calls=(Call("call_1", "read_file", fragments),), usage=USAGE)
    )
    events = await collect(config)
    assert without_usage(events) == [
        TextDelta("Reading."),
        ToolCallStarted("call_1", "read_file"),
        *[ToolCallArgsDelta("call_1", f) for f in fragments],
        ToolCallFinished(READ_PART),
        finished(TextPart("Reading."), READ_PART, stop=TOOL),
    ]


async def test_two_parallel_tool_calls(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    grep = ToolCallPart("call_2", "grep", {"pattern": "TODO"}, '{"pattern": "TODO"}')
    server.script(
        Reply(
            calls=(
                Call("call_1", "read_file", ('{"path": ', '"/tmp/ü.txt", ', '"limit": 10}')),
                Call("call_2", "grep", ('{"pattern"', ': "TODO"}')),
            ),
            usage=USAGE,
        )
    )
    events = without_usage(await collect(config))
    first: list[Event] = [
        ToolCallStarted("call_1", "read_file"),
        ToolCallArgsDelta("call_1", '{"path": '),
        ToolCallArgsDelta("call_1", '"/tmp/ü.txt", '),
        ToolCallArgsDelta("call_1", '"limit": 10}'),
    ]
    second: list[Event] = [
        ToolCallStarted("call_2", "grep"),
        ToolCallArgsDelta("call_2", '{"pattern"'),
        ToolCallArgsDelta("call_2", ': "TODO"}'),
    ]
    if provider == "openai":  # both calls are finished by the finish_reason chunk
        expected = [*first, *second, ToolCallFinished(READ_PART), ToolCallFinished(grep)]
    else:  # each tool_use block is finished by its content_block_stop
        expected = [*first, ToolCallFinished(READ_PART), *second, ToolCallFinished(grep)]
    assert events == [*expected, finished(READ_PART, grep, stop=TOOL)]


@pytest.mark.parametrize(
    ("arguments", "parsed", "error"),
    [
        (
            ('{"path": ', '"a.txt"'),
            {},
            "the arguments are not valid JSON (Expecting ',' delimiter: "
            "line 1 column 17 (char 16))",
        ),
        (('["a.txt"', "]"), {}, "the arguments must be a JSON object, got list"),
        ("", {}, None),  # a tool without parameters streams no argument text
    ],
)
async def test_malformed_tool_arguments_become_a_call_error(
    server: ScriptedProvider,
    config: ProviderConfig,
    arguments: tuple[str, ...] | str,
    parsed: dict[str, object],
    error: str | None,
) -> None:
    server.script(Reply(calls=(Call("call_9", "read_file", arguments),), usage=USAGE))
    events = await collect(config)
    raw = "".join(arguments)
    part = ToolCallPart("call_9", "read_file", parsed, raw, error)
    assert [e for e in events if isinstance(e, ToolCallFinished)] == [ToolCallFinished(part)]
    assert events[-1] == finished(part, stop=TOOL)


# --------------------------------------------------------------------------- thinking


async def test_thinking_with_signature(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    server.script(
        Reply(thinking=("Let me ", "think."), signature="sig-abc", text="Answer.", usage=USAGE)
    )
    events = without_usage(await collect(config))
    # OpenAI-compatible servers stream reasoning as delta.reasoning_content, never signed.
    signature = "sig-abc" if provider == "anthropic" else None
    assert events == [
        ThinkingDelta("Let me "),
        ThinkingDelta("think."),
        TextDelta("Answer."),
        finished(ThinkingPart("Let me think.", signature), TextPart("Answer.")),
    ]


def _anthropic_event(payload: dict[str, object]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


async def test_anthropic_redacted_thinking_is_kept_opaque(server: ScriptedProvider) -> None:
    blocks: list[dict[str, object]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "usage": {"input_tokens": 5, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]
    server.script(Raw(tuple(_anthropic_event(b) for b in blocks)))
    events = await collect(make_config(server, "anthropic"))
    assert events[-1] == finished(
        ThinkingPart("", None, "EmwKAhgBEgy3va3pzix"), TextPart("ok"), usage=Usage(5, 3)
    )


async def test_openai_refusal_is_text_with_a_refusal_stop(server: ScriptedProvider) -> None:
    role, *_ = render_openai(Reply())
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"refusal": piece}, "finish_reason": None}]}
        for piece in ("I can't ", "help with that.")
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    server.script(Raw((role, body, b"data: [DONE]\n\n")))
    events = await collect(make_config(server, "openai"))
    refusal = StopReason.REFUSAL
    assert events == [
        TextDelta("I can't "),
        TextDelta("help with that."),
        finished(TextPart("I can't help with that."), stop=refusal, usage=Usage()),
    ]


# ------------------------------------------------------------------------------ usage


async def test_usage_absent(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    server.script(Reply(text="hi", usage=None))
    events = await collect(config)
    # Anthropic's message_start always yields the (here empty) running count.
    assert usages(events) == ([] if provider == "openai" else [Usage()])
    assert events[-1] == finished(TextPart("hi"), usage=Usage())


async def test_usage_with_cache_reads(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    server.script(
        Reply(
            text="hi",
            usage=Usage(
                input_tokens=10, output_tokens=4, cache_read_tokens=30, cache_write_tokens=0
            ),
        )
    )
    done = (await collect(config))[-1]
    assert isinstance(done, Finished)
    assert done.usage.cache_read_tokens == 30
    assert done.usage.output_tokens == 4


# ----------------------------------------------------------------------- stream ends


async def test_openai_missing_done_after_a_finish_reason_is_fine(server: ScriptedProvider) -> None:
    server.script(Reply(text="hi", omit_done=True, usage=USAGE))
    events = await collect(make_config(server, "openai"))
    assert events[-1] == finished(TextPart("hi"))


async def test_stream_truncated_after_output_is_an_error(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    reply = Reply(text=("Partial", " answer"), delay_s=0.01)
    server.script(replace(reply, fault=Truncate(events_through(provider, reply, "Partial"))))
    events: list[Event] = []
    with pytest.raises(ProviderError) as caught:
        await collect_until_error(start_stream(config), events)
    assert without_usage(events) == [TextDelta("Partial")]
    expected = (
        "stream ended before [DONE] and without a finish reason (truncated)"
        if provider == "openai"
        else "stream ended before message_stop (truncated)"
    )
    error = caught.value
    assert (error.status, error.error_type, error.message) == (None, "truncated", expected)
    assert len(server.requests) == 1  # output reached the caller: never retried


async def test_an_empty_200_body_from_a_compatible_server_is_reported_not_retried(
    server: ScriptedProvider, config: ProviderConfig
) -> None:
    """llama-cpp-python's answer to a request over its window: the turn decides what to do."""
    server.script(Reply(text="lost", fault=Truncate(0)), Reply(text="ok", usage=USAGE))
    with pytest.raises(ProviderError) as caught:
        await collect(config)
    error = caught.value
    assert (error.status, error.error_type, error.retryable) == (200, "empty_stream", False)
    assert len(server.requests) == 1 and server.remaining == 1


# ------------------------------------------------------------------------------ scrub


async def test_each_event_of_a_chunk_is_scrubbed_alone(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    """The events of one network chunk are scrubbed before they are parsed: the delta that
    quotes a secret arrives redacted, those beside it as they were sent."""
    secret = "sk-scrubbed-in-the-stream-0123456789"
    deltas = ("plain ", f"quoting {secret} here", " after", f"{secret}")
    server.script(Raw(parts=(b"".join(rendered(provider, Reply(text=deltas))),)))
    scrub = Secrets([secret]).scrub
    async with open_stream(make_request(), CancellationToken(), config, scrub=scrub) as stream:
        texts = [event.text async for event in stream if isinstance(event, TextDelta)]
    assert texts == ["plain ", "quoting [redacted] here", " after", "[redacted]"]
