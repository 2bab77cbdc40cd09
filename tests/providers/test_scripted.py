"""The scripted provider itself, driven by a plain aiohttp client: wire rendering, the real
APIs' request checks and error shapes, recording, faults and the runnable demo."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from acp_fsm.devkit.provider import (
    OPENAI_PATH,
    SHUTDOWN_TIMEOUT_S,
    Call,
    Hang,
    HttpError,
    Raw,
    RecordedRequest,
    Reply,
    ScriptedProvider,
)
from acp_fsm.providers.types import StopReason, Usage
from tests.providers.conftest import API_KEY

PROJECT_ROOT = Path(__file__).resolve().parents[2]
OPENAI_HEADERS = {"authorization": f"Bearer {API_KEY}"}
ANTHROPIC_HEADERS = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01"}
HI = [{"role": "user", "content": "hi"}]
OPENAI_BODY = {
    "model": "m",
    "messages": HI,
    "stream": True,
    "stream_options": {"include_usage": True},
}
ANTHROPIC_BODY = {"model": "m", "max_tokens": 64, "messages": HI, "stream": True}


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(
    client: aiohttp.ClientSession,
    server: ScriptedProvider,
    path: str,
    body: Any,
    headers: dict[str, str],
) -> tuple[int, aiohttp.ClientResponse, bytes]:
    async with client.post(f"{server.url}{path}", json=body, headers=headers) as response:
        return response.status, response, await response.read()


def sse_payloads(raw: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per event of a canonical stream (no [DONE] parsing)."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        data = fields["data"]
        events.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
    return events


def openai_text(raw: bytes) -> str:
    chunks = [data for _, data in sse_payloads(raw) if data != "[DONE]"]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


# ------------------------------------------------------------------------- rendering


async def test_openai_stream_rendering(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    server.script(
        Reply(
            thinking="hmm",
            text=("Hi", "!"),
            usage=Usage(10, 3, 4),
            calls=(Call("call_1", "read_file", ('{"p', '": 1}')),),
        )
    )
    status, response, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
    assert (status, response.headers["content-type"]) == (200, "text/event-stream; charset=utf-8")
    events = [data for _, data in sse_payloads(raw)]
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}
    for chunk in chunks:
        assert set(chunk) == {
            "id",
            "object",
            "created",
            "model",
            "system_fingerprint",
            "choices",
            "usage",
        }
        assert (chunk["object"], chunk["model"]) == ("chat.completion.chunk", "m")
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas == [
        {"role": "assistant", "content": "", "refusal": None},
        {"reasoning_content": "hmm"},
        {"content": "Hi"},
        {"content": "!"},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"p'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '": 1}'}}]},
        {},
    ]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes == [None] * 7 + ["tool_calls"]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 14,
        "completion_tokens": 3,
        "total_tokens": 17,
        "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    assert all(c["usage"] is None for c in chunks[:-1])


async def test_openai_usage_only_when_asked(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    server.script(Reply(text="x"))
    body = {**OPENAI_BODY, "stream_options": {"include_usage": False}}
    _, _, raw = await post(client, server, OPENAI_PATH, body, OPENAI_HEADERS)
    chunks = [data for _, data in sse_payloads(raw)][:-1]
    assert all("usage" not in c and c["choices"] for c in chunks)


async def test_anthropic_stream_rendering(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    server.script(
        Reply(
            thinking=("a", "b"),
            signature="sig",
            text="Hi",
            calls=(Call("toolu_1", "grep", ('{"q"', ": 1}")),),
            stop=StopReason.TOOL_USE,
            usage=Usage(10, 3, 4, 2),
        )
    )
    status, response, raw = await post(
        client, server, "/v1/messages", ANTHROPIC_BODY, ANTHROPIC_HEADERS
    )
    assert (status, response.headers["content-type"]) == (200, "text/event-stream; charset=utf-8")
    assert "request-id" in response.headers
    events = sse_payloads(raw)
    assert all(name == data["type"] for name, data in events)
    start = events[0][1]["message"]
    assert (start["role"], start["content"], start["model"], start["stop_reason"]) == (
        "assistant",
        [],
        "m",
        None,
    )
    assert start["usage"] == {
        "input_tokens": 10,
        "output_tokens": 1,
        "cache_creation_input_tokens": 2,
        "cache_read_input_tokens": 4,
    }
    assert [data for _, data in events[1:]] == [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {"type": "ping"},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "a"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "b"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "sig"},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"q"'},
        },
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": ": 1}"},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    ]


async def test_raw_bytes_are_sent_verbatim(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    server.script(Raw((b'data:{"a"', 0.01, b":1}\r\n\r\n", b": c\r"), content_type="x/y"))
    _, response, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
    assert raw == b'data:{"a":1}\r\n\r\n: c\r'
    assert response.headers["content-type"] == "x/y"


# ------------------------------------------------------------------- errors and checks


async def test_http_error_shapes(server: ScriptedProvider, client: aiohttp.ClientSession) -> None:
    server.script(
        HttpError(429, "slow down", code="rate_limit_exceeded", headers={"retry-after": "3"}),
        HttpError(529, "Overloaded"),
    )
    status, response, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
    assert (status, response.headers["retry-after"]) == (429, "3")
    assert json.loads(raw) == {
        "error": {
            "message": "slow down",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    status, response, raw = await post(
        client, server, "/v1/messages", ANTHROPIC_BODY, ANTHROPIC_HEADERS
    )
    body = json.loads(raw)
    assert status == 529
    assert body["type"] == "error"
    assert body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert body["request_id"].startswith("req_")


def _tool_use(i: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "t", "input": {}}


def _result(i: str, content: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": content}


def _anthropic(*messages: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**ANTHROPIC_BODY, "messages": list(messages), **changes}


USER = {"role": "user", "content": "go"}
CALLS = {"role": "assistant", "content": [_tool_use("toolu_1"), _tool_use("toolu_2")]}
ANTHROPIC_REJECTIONS = [
    ({"x-api-key": API_KEY}, _anthropic(USER), "anthropic-version: header is required"),
    (
        ANTHROPIC_HEADERS,
        {"model": "m", "messages": [USER], "stream": True},
        "max_tokens: Field required",
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic({"role": "assistant", "content": "hi"}),
        'messages: first message must use the "user" role',
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic(USER, USER),
        'messages: roles must alternate between "user" and "assistant", but found multiple '
        '"user" roles in a row',
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic(USER, CALLS, {"role": "user", "content": [_result("toolu_1")]}),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the "
        "next message.",
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic(
            USER,
            CALLS,
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first"},
                    _result("toolu_1"),
                    _result("toolu_2"),
                ],
            },
        ),
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1, toolu_2. Each `tool_use` block must have a corresponding `tool_result` block "
        "in the next message.",
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic({"role": "user", "content": [_result("toolu_9")]}),
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
        "message.",
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic(
            USER, CALLS, {"role": "user", "content": [_result("toolu_1"), _result("toolu_2", "")]}
        ),
        "messages.2.content.1.tool_result.content: a tool_result must not be empty",
    ),
    (
        ANTHROPIC_HEADERS,
        _anthropic(USER, {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]}),
        "messages.1.content.0.thinking.signature: Field required",
    ),
]
OPENAI_REJECTIONS = [
    ({"messages": HI, "stream": True}, "you must provide a model parameter"),
    ({"model": "m", "stream": True}, "Missing required parameter: 'messages'."),
    ({"model": "m", "messages": HI}, "this scripted provider only streams: set 'stream': true"),
    (
        {
            **OPENAI_BODY,
            "messages": [*HI, {"role": "tool", "tool_call_id": "call_1", "content": "x"}],
        },
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'.",
    ),
    (
        {
            **OPENAI_BODY,
            "messages": [
                *HI,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "t", "arguments": "{}"},
                        }
                    ],
                },
            ],
        },
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        "call_1",
    ),
]


@pytest.mark.parametrize(("headers", "body", "message"), ANTHROPIC_REJECTIONS)
async def test_anthropic_request_checks(
    server: ScriptedProvider,
    client: aiohttp.ClientSession,
    headers: dict[str, str],
    body: dict[str, Any],
    message: str,
) -> None:
    server.script(Reply(text="unused"))
    status, _, raw = await post(client, server, "/v1/messages", body, headers)
    assert status == 400
    assert json.loads(raw)["error"] == {"type": "invalid_request_error", "message": message}
    assert server.remaining == 1


@pytest.mark.parametrize(("body", "message"), OPENAI_REJECTIONS)
async def test_openai_request_checks(
    server: ScriptedProvider, client: aiohttp.ClientSession, body: dict[str, Any], message: str
) -> None:
    server.script(Reply(text="unused"))
    status, _, raw = await post(client, server, OPENAI_PATH, body, OPENAI_HEADERS)
    assert status == 400
    error = json.loads(raw)["error"]
    assert (error["message"], error["type"], error["param"]) == (
        message,
        "invalid_request_error",
        None,
    )
    assert server.remaining == 1


async def test_empty_script_is_a_clear_500(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    status, _, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
    assert status == 500
    assert json.loads(raw)["error"]["message"] == (
        "scripted provider: the script is empty, no reply left for request #1 "
        "(POST /v1/chat/completions)"
    )
    status, _, raw = await post(client, server, "/v1/messages", ANTHROPIC_BODY, ANTHROPIC_HEADERS)
    assert status == 500
    assert json.loads(raw)["error"]["type"] == "api_error"


# ------------------------------------------------------------ records and dynamic replies


async def test_requests_and_served_replies_are_recorded(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    seen: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply(text=f"you sent {len(request.body['messages'])} message(s)")

    first = Reply(text="one")
    server.script(first, answer)
    before = time.monotonic()
    await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
    _, _, raw = await post(client, server, "/v1/messages", ANTHROPIC_BODY, ANTHROPIC_HEADERS)
    assert b"you sent 1 message(s)" in raw
    one, two = server.requests
    assert (one.path, two.path) == ("/v1/chat/completions", "/v1/messages")
    assert one.body == OPENAI_BODY
    assert two.headers["X-API-KEY"] == API_KEY  # case-insensitive
    assert before <= one.time <= two.time <= time.monotonic()
    assert seen == [two]
    assert server.served[0].reply is first
    assert [s.path for s in server.served] == ["/v1/chat/completions", "/v1/messages"]


async def test_fallback_answers_when_the_script_is_empty(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    server.fallback = Reply(text="fallback")
    for _ in range(2):
        _, _, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
        assert b'"content":"fallback"' in raw


async def test_hang_until_disconnect_and_stop_is_prompt(client: aiohttp.ClientSession) -> None:
    server = await ScriptedProvider(
        Reply(text="x", fault=Hang(1)), Reply(text="y", fault=Hang(1))
    ).start()
    async with client.post(f"{server.url}{OPENAI_PATH}", json=OPENAI_BODY) as response:
        await response.content.readuntil(b"\n\n")
        response.close()
    async with asyncio.timeout(1):
        (disconnect,) = await server.wait_for_disconnects(1)
    assert (disconnect.path, disconnect.events_sent) == (OPENAI_PATH, 1)
    async with client.post(f"{server.url}{OPENAI_PATH}", json=OPENAI_BODY) as response:
        await response.content.readuntil(b"\n\n")
        started = time.monotonic()
        await server.stop()
        assert time.monotonic() - started < SHUTDOWN_TIMEOUT_S  # woken, not waited out
        assert await response.content.read() == b""  # ended cleanly, without [DONE]
    assert repr(server).startswith("<ScriptedProvider stopped requests=2")


# ----------------------------------------------------------------------------- the demo


async def test_runnable_demo_serves_both_formats(client: aiohttp.ClientSession) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_fsm.devkit.provider",
        "--port",
        "0",
        stderr=asyncio.subprocess.PIPE,
        cwd=PROJECT_ROOT,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(15):
            banner = (await process.stderr.readline()).decode()
            openai_line = (await process.stderr.readline()).decode()
        assert banner.startswith("scripted provider on http://127.0.0.1:")
        base = openai_line.strip().removeprefix("OPENAI_BASE_URL=")
        texts = []
        for _ in range(2):
            async with client.post(f"{base}/chat/completions", json=OPENAI_BODY) as response:
                texts.append(openai_text(await response.read()))
        assert texts == [
            "Hello! I am a scripted model running offline.",
            "(scripted) You said: hi",
        ]  # then the echo fallback
    finally:
        process.send_signal(signal.SIGINT)
        async with asyncio.timeout(10):
            assert await process.wait() == 0
