"""The scripted provider's model listing, context window and option rules (tool_choice,
reasoning effort, thinking), driven over real HTTP by a plain aiohttp client."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from acp_fsm.devkit.provider import (
    DEFAULT_MODELS,
    MODELS_PATH,
    OPENAI_PATH,
    HttpError,
    Reply,
    ScriptedProvider,
    estimate_tokens,
)
from acp_fsm.providers.types import Usage
from tests.harness import wait_until
from tests.providers.conftest import API_KEY
from tests.providers.test_scripted import (
    ANTHROPIC_BODY,
    ANTHROPIC_HEADERS,
    OPENAI_BODY,
    OPENAI_HEADERS,
    openai_text,
    post,
    sse_payloads,
)

ANTHROPIC_PATH = "/v1/messages"
CLAUDES = (
    "claude-opus-4-1",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "claude-3-7-sonnet-20250219",
    "claude-3-5-haiku-20241022",
)
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def list_models(
    client: aiohttp.ClientSession, server: ScriptedProvider, headers: dict[str, str], **params: str
) -> tuple[int, Any]:
    """GET /v1/models as each SDK builds it: OpenAI from its `/v1` base, Anthropic from the
    root."""
    anthropic = "anthropic-version" in headers or "x-api-key" in headers
    url = (
        f"{server.anthropic_base_url}/v1/models"
        if anthropic
        else f"{server.openai_base_url}/models"
    )
    async with client.get(url, headers=headers, params=params) as response:
        return response.status, json.loads(await response.read())


# ------------------------------------------------------------------------ model listing


async def test_openai_model_list(server: ScriptedProvider, client: aiohttp.ClientSession) -> None:
    async with client.get(f"{server.openai_base_url}/models", headers=OPENAI_HEADERS) as response:
        status, body = response.status, json.loads(await response.read())
        assert response.headers["x-request-id"].startswith("req_")
    assert status == 200
    assert set(body) == {"object", "data"}
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == list(DEFAULT_MODELS)
    for model in body["data"]:
        assert set(model) == {"id", "object", "created", "owned_by"}
        assert (model["object"], model["owned_by"]) == ("model", "system")
        assert isinstance(model["created"], int)
    created = [m["created"] for m in body["data"]]
    assert created == sorted(created, reverse=True)  # listed newest first
    # recorded apart from the model calls, which tests index
    assert (server.requests, len(server.model_list_requests)) == ([], 1)
    recorded = server.model_list_requests[0]
    assert (recorded.path, recorded.body) == (MODELS_PATH, None)
    assert recorded.headers["authorization"] == f"Bearer {API_KEY}"


async def test_anthropic_model_list_pages(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(api_key=API_KEY, models=CLAUDES) as server:
        status, first = await list_models(client, server, ANTHROPIC_HEADERS, limit="2")
        assert status == 200
        assert set(first) == {"data", "has_more", "first_id", "last_id"}
        assert first["data"][0] == {
            "type": "model",
            "id": "claude-opus-4-1",
            "display_name": "Claude Opus 4.1",
            "created_at": first["data"][0]["created_at"],
        }
        assert all(RFC3339.match(m["created_at"]) for m in first["data"])
        assert first["data"][1]["display_name"] == "Claude Sonnet 4.5"
        assert (first["has_more"], first["first_id"], first["last_id"]) == (
            True,
            "claude-opus-4-1",
            "claude-sonnet-4-5",
        )
        _, second = await list_models(
            client, server, ANTHROPIC_HEADERS, limit="2", after_id=first["last_id"]
        )
        assert [m["id"] for m in second["data"]] == list(CLAUDES[2:4])
        assert second["has_more"] is True
        _, last = await list_models(
            client, server, ANTHROPIC_HEADERS, limit="2", after_id=second["last_id"]
        )
        assert ([m["id"] for m in last["data"]], last["has_more"]) == ([CLAUDES[4]], False)
        assert (last["first_id"], last["last_id"]) == (CLAUDES[4], CLAUDES[4])
        _, back = await list_models(
            client, server, ANTHROPIC_HEADERS, limit="2", before_id=CLAUDES[4]
        )
        assert ([m["id"] for m in back["data"]], back["has_more"]) == (list(CLAUDES[2:4]), True)
        _, front = await list_models(
            client, server, ANTHROPIC_HEADERS, limit="2", before_id=back["first_id"]
        )
        assert ([m["id"] for m in front["data"]], front["has_more"]) == (list(CLAUDES[:2]), False)
        _, everything = await list_models(client, server, ANTHROPIC_HEADERS)  # limit 20
        assert ([m["id"] for m in everything["data"]], everything["has_more"]) == (
            list(CLAUDES),
            False,
        )
        dates = [m["created_at"] for m in everything["data"]]
        assert dates == sorted(dates, reverse=True)
        assert len(server.model_list_requests) == 6


async def test_anthropic_empty_page(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(models=CLAUDES[:1]) as server:
        _, page = await list_models(client, server, ANTHROPIC_HEADERS, after_id=CLAUDES[0])
    assert page == {"data": [], "has_more": False, "first_id": None, "last_id": None}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": "0"}, "limit: Input should be greater than or equal to 1"),
        ({"limit": "1001"}, "limit: Input should be less than or equal to 1000"),
        (
            {"limit": "ten"},
            "limit: Input should be a valid integer, unable to parse string as an integer",
        ),
        ({"after_id": "gpt-5.9"}, "after_id: no model with id 'gpt-5.9'"),
    ],
)
async def test_anthropic_model_list_refuses_bad_pages(
    server: ScriptedProvider, client: aiohttp.ClientSession, params: dict[str, str], message: str
) -> None:
    status, body = await list_models(client, server, ANTHROPIC_HEADERS, **params)
    assert status == 400
    assert body["error"] == {"type": "invalid_request_error", "message": message}


async def test_anthropic_model_list_needs_the_version(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    status, body = await list_models(client, server, {"x-api-key": API_KEY})
    assert status == 400
    assert body["type"] == "error"
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "anthropic-version: header is required",
    }


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        (
            {},
            {
                "message": "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                "YOUR_KEY).",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            },
        ),
        (
            {"authorization": "Bearer sk-wrong-0000"},
            {
                "message": "Incorrect API key provided: sk-***0000. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            },
        ),
        (
            {"anthropic-version": "2023-06-01"},
            {"type": "authentication_error", "message": "x-api-key header is required"},
        ),
        (
            {"x-api-key": "wrong", "anthropic-version": "2023-06-01"},
            {"type": "authentication_error", "message": "invalid x-api-key"},
        ),
    ],
)
async def test_model_list_needs_the_key(
    server: ScriptedProvider,
    client: aiohttp.ClientSession,
    headers: dict[str, str],
    error: dict[str, Any],
) -> None:
    status, body = await list_models(client, server, headers)
    assert (status, body["error"]) == (401, error)
    assert len(server.model_list_requests) == 1


async def test_model_list_without_a_configured_key(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(models=("only-model",)) as server:
        status, body = await list_models(client, server, {})
    assert (status, [m["id"] for m in body["data"]]) == (200, ["only-model"])


async def test_models_error_in_each_shape(client: aiohttp.ClientSession) -> None:
    error = HttpError(503, "models are down", headers={"retry-after": "7"})
    async with ScriptedProvider(api_key=API_KEY, models_error=error) as server:
        async with client.get(
            f"{server.openai_base_url}/models", headers=OPENAI_HEADERS
        ) as response:
            assert (response.status, response.headers["retry-after"]) == (503, "7")
            assert json.loads(await response.read()) == {
                "error": {
                    "message": "models are down",
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
        status, body = await list_models(client, server, ANTHROPIC_HEADERS)
        assert (status, body["type"]) == (503, "error")
        assert body["error"] == {"type": "api_error", "message": "models are down"}
        assert (server.remaining, len(server.model_list_requests)) == (0, 2)


async def test_models_delay_times_out_a_client(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(models_delay_s=30) as server:
        with pytest.raises(TimeoutError):
            await client.get(
                f"{server.openai_base_url}/models", timeout=aiohttp.ClientTimeout(total=0.2)
            )
        async with asyncio.timeout(2):
            (disconnect,) = await server.wait_for_disconnects(1)
        assert (disconnect.path, disconnect.events_sent) == (MODELS_PATH, 0)


async def test_models_delay_is_slept_then_answered(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(models_delay_s=0.3) as server:
        started = time.monotonic()
        status, _ = await list_models(client, server, {})
        assert status == 200
        assert time.monotonic() - started >= 0.3


async def test_models_delay_wakes_when_the_server_stops(client: aiohttp.ClientSession) -> None:
    server = await ScriptedProvider(models_delay_s=30).start()
    listing = asyncio.create_task(list_models(client, server, {}))
    await wait_until(lambda: server.model_list_requests, "the model list request")
    await server.stop()
    status, _ = await listing
    assert status == 200
    # woken and answered, not cancelled when the shutdown grace (SHUTDOWN_TIMEOUT_S) ran out
    assert server.disconnects == []


# ----------------------------------------------------------------------- context window


def test_estimate_tokens_is_a_quarter_of_the_json_text() -> None:
    # '[{"role":"user","content":"hi"}]' is 32 characters
    assert estimate_tokens({"model": "m", "messages": [{"role": "user", "content": "hi"}]}) == 8
    # plus '"é"' (3 characters, not escaped) and '[]': 37 -> ceil(37 / 4)
    assert (
        estimate_tokens(
            {
                "system": "é",
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [],
                "max_tokens": 999_999,
            }
        )
        == 10
    )
    assert estimate_tokens(None) == 0


def _openai(**changes: Any) -> dict[str, Any]:
    return {**OPENAI_BODY, **changes}


def _anthropic_body(**changes: Any) -> dict[str, Any]:
    return {**ANTHROPIC_BODY, **changes}


PROMPT = estimate_tokens(OPENAI_BODY)
ANTHROPIC_PROMPT = estimate_tokens(ANTHROPIC_BODY)


@pytest.mark.parametrize(
    ("window", "body", "message"),
    [
        (
            PROMPT + 99,
            _openai(max_tokens=100),
            f"This model's maximum context length is {PROMPT + 99} tokens. However, you requested "
            f"{PROMPT + 100} tokens ({PROMPT} in the messages, 100 in the completion). "
            "Please reduce the length of the messages or completion.",
        ),
        (
            PROMPT + 99,
            _openai(max_completion_tokens=100, max_tokens=1),  # the newer name wins
            f"This model's maximum context length is {PROMPT + 99} tokens. However, you requested "
            f"{PROMPT + 100} tokens ({PROMPT} in the messages, 100 in the completion). "
            "Please reduce the length of the messages or completion.",
        ),
        (
            PROMPT - 1,
            _openai(),
            f"This model's maximum context length is {PROMPT - 1} tokens. However, your messages "
            f"resulted in {PROMPT} tokens. Please reduce the length of the messages.",
        ),
    ],
)
async def test_openai_context_length_exceeded(
    client: aiohttp.ClientSession, window: int, body: dict[str, Any], message: str
) -> None:
    async with ScriptedProvider(Reply(text="unused"), context_window=window) as server:
        status, _, raw = await post(client, server, OPENAI_PATH, body, {})
        assert status == 400
        assert json.loads(raw) == {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
        assert (len(server.requests), server.remaining) == (1, 1)


@pytest.mark.parametrize(
    ("window", "max_tokens", "message"),
    [
        (
            ANTHROPIC_PROMPT - 1,
            1,
            f"prompt is too long: {ANTHROPIC_PROMPT} tokens > {ANTHROPIC_PROMPT - 1} maximum",
        ),
        (
            ANTHROPIC_PROMPT + 63,
            64,
            f"input length and `max_tokens` exceed context limit: {ANTHROPIC_PROMPT} + 64 > "
            f"{ANTHROPIC_PROMPT + 63}, decrease input length or `max_tokens` and try again",
        ),
    ],
)
async def test_anthropic_context_length_exceeded(
    client: aiohttp.ClientSession, window: int, max_tokens: int, message: str
) -> None:
    async with ScriptedProvider(Reply(text="unused"), context_window=window) as server:
        status, _, raw = await post(
            client,
            server,
            ANTHROPIC_PATH,
            _anthropic_body(max_tokens=max_tokens),
            ANTHROPIC_HEADERS,
        )
        assert status == 400
        assert json.loads(raw)["error"] == {"type": "invalid_request_error", "message": message}
        assert (len(server.requests), server.remaining) == (1, 1)


async def test_a_request_that_just_fits_is_served(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(fallback=Reply(text="ok"), context_window=PROMPT + 100) as server:
        status, _, _ = await post(client, server, OPENAI_PATH, _openai(max_tokens=100), {})
        assert status == 200
        server.context_window = ANTHROPIC_PROMPT + 64
        status, _, _ = await post(client, server, ANTHROPIC_PATH, ANTHROPIC_BODY, ANTHROPIC_HEADERS)
        assert status == 200


def _anthropic_usage(raw: bytes) -> tuple[int, int]:
    events = sse_payloads(raw)
    return (
        events[0][1]["message"]["usage"]["input_tokens"],
        events[-2][1]["usage"]["output_tokens"],
    )


def _openai_usage(raw: bytes) -> tuple[int, int]:
    usage = [data for _, data in sse_payloads(raw) if data != "[DONE]"][-1]["usage"]
    return usage["prompt_tokens"], usage["completion_tokens"]


async def test_usage_reports_the_estimate_with_a_context_window(
    client: aiohttp.ClientSession,
) -> None:
    long_body = _anthropic_body(messages=[{"role": "user", "content": "x" * 400}])
    async with ScriptedProvider(
        Reply(text="a"), Reply(text="b"), Reply(text="c", usage=Usage(3, 4)), context_window=100_000
    ) as server:
        _, _, raw = await post(client, server, ANTHROPIC_PATH, long_body, ANTHROPIC_HEADERS)
        assert _anthropic_usage(raw) == (estimate_tokens(long_body), 7)
        assert estimate_tokens(long_body) > 100
        _, _, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, {})
        assert _openai_usage(raw) == (PROMPT, 7)
        _, _, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, {})
        assert _openai_usage(raw) == (3, 4)  # an explicit usage is kept


async def test_usage_is_as_scripted_without_a_context_window(client: aiohttp.ClientSession) -> None:
    async with ScriptedProvider(Reply(text="a")) as server:
        _, _, raw = await post(client, server, ANTHROPIC_PATH, ANTHROPIC_BODY, ANTHROPIC_HEADERS)
    assert _anthropic_usage(raw) == (12, 7)


# ------------------------------------------------------------------ OpenAI option rules

OPENAI_TOOLS = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
ONLY_WITH_TOOLS = (
    "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
)

OPENAI_OPTION_REJECTIONS = [
    (_openai(tool_choice="none"), ONLY_WITH_TOOLS, "tool_choice", None),
    (
        _openai(tool_choice={"type": "function", "function": {"name": "t"}}),
        ONLY_WITH_TOOLS,
        "tool_choice",
        None,
    ),
    (
        _openai(tools=OPENAI_TOOLS, tool_choice="any"),
        "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'.",
        "tool_choice",
        "invalid_value",
    ),
    (
        _openai(tools=OPENAI_TOOLS, tool_choice={"type": "tool", "name": "t"}),
        "Invalid value: 'tool'. Supported values are: 'function'.",
        "tool_choice.type",
        "invalid_value",
    ),
    (
        _openai(tools=OPENAI_TOOLS, tool_choice={"type": "function", "function": {}}),
        "Missing required parameter: 'tool_choice.function.name'.",
        "tool_choice.function.name",
        "missing_required_parameter",
    ),
    (
        _openai(reasoning_effort="max"),
        "Invalid value: 'max'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', "
        "and 'xhigh'.",
        "reasoning_effort",
        "invalid_value",
    ),
]


@pytest.mark.parametrize(("body", "message", "param", "code"), OPENAI_OPTION_REJECTIONS)
async def test_openai_option_rules(
    server: ScriptedProvider,
    client: aiohttp.ClientSession,
    body: dict[str, Any],
    message: str,
    param: str,
    code: str | None,
) -> None:
    server.script(Reply(text="unused"))
    status, _, raw = await post(client, server, OPENAI_PATH, body, OPENAI_HEADERS)
    assert status == 400
    assert json.loads(raw)["error"] == {
        "message": message,
        "type": "invalid_request_error",
        "param": param,
        "code": code,
    }
    assert (len(server.requests), server.remaining) == (1, 1)


@pytest.mark.parametrize(
    "body",
    [
        *(_openai(tools=OPENAI_TOOLS, tool_choice=c) for c in ("none", "auto", "required")),
        _openai(tools=OPENAI_TOOLS, tool_choice={"type": "function", "function": {"name": "t"}}),
        _openai(tool_choice=None, reasoning_effort=None),
        *(
            _openai(reasoning_effort=e)
            for e in ("none", "minimal", "low", "medium", "high", "xhigh")
        ),
    ],
)
async def test_openai_valid_options_are_served(
    server: ScriptedProvider, client: aiohttp.ClientSession, body: dict[str, Any]
) -> None:
    server.script(Reply(text="ok"))
    status, _, _ = await post(client, server, OPENAI_PATH, body, OPENAI_HEADERS)
    assert (status, server.remaining) == (200, 0)


# --------------------------------------------------------------- Anthropic option rules

ANTHROPIC_TOOLS = [{"name": "t", "input_schema": {"type": "object"}}]
USER = {"role": "user", "content": "go"}
THINKING = {"type": "thinking", "thinking": "let me see", "signature": "sig"}
REDACTED = {"type": "redacted_thinking", "data": "opaque"}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}
THINK = {"type": "enabled", "budget_tokens": 1024}
ADAPTIVE = {"type": "adaptive"}  # Claude 4.6 on: no budget, the model decides
THINKING_DOCS = (
    "Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


def _loop(*assistant: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A request continuing a tool loop: the assistant's blocks, then the tool result."""
    messages = [
        USER,
        {"role": "assistant", "content": list(assistant)},
        {"role": "user", "content": [RESULT]},
    ]
    return _anthropic_body(messages=messages, tools=ANTHROPIC_TOOLS, **changes)


def _thinking(**changes: Any) -> dict[str, Any]:
    return _anthropic_body(max_tokens=2048, thinking=THINK, **changes)


def _unthought(found: str) -> str:
    return (
        f"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{found}`. When `thinking` is enabled, a final `assistant` message must start "
        "with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` "
        "blocks). We recommend you include thinking blocks from previous turns. To avoid "
        f"this requirement, disable `thinking`. {THINKING_DOCS}"
    )


ANTHROPIC_OPTION_REJECTIONS = [
    (
        _anthropic_body(tools=ANTHROPIC_TOOLS, tool_choice="auto"),
        "tool_choice: Input should be a valid dictionary or object to extract fields from",
    ),
    (
        _anthropic_body(tools=ANTHROPIC_TOOLS, tool_choice={"type": "required"}),
        "tool_choice: Input tag 'required' found using 'type' does not match any of the expected "
        "tags: 'auto', 'any', 'tool', 'none'",
    ),
    (
        _anthropic_body(tools=ANTHROPIC_TOOLS, tool_choice={"type": "tool"}),
        "tool_choice.tool.name: Field required",
    ),
    (
        _anthropic_body(thinking={"type": "on"}),
        "thinking: Input tag 'on' found using 'type' does not match any of the expected tags: "
        "'enabled', 'disabled', 'adaptive'",
    ),
    (
        _anthropic_body(thinking={"type": "enabled"}),
        "thinking.enabled.budget_tokens: Field required",
    ),
    (  # an enabled thinking's budget is checked before forced tool use
        _anthropic_body(
            thinking={"type": "enabled"}, tools=ANTHROPIC_TOOLS, tool_choice={"type": "any"}
        ),
        "thinking.enabled.budget_tokens: Field required",
    ),
    (
        _anthropic_body(max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 1023}),
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    ),
    (
        _anthropic_body(max_tokens=1024, thinking=THINK),
        "`max_tokens` must be greater than `thinking.budget_tokens`. "
        f"{THINKING_DOCS}#max-tokens-and-context-window-size",
    ),
    (
        _thinking(tools=ANTHROPIC_TOOLS, tool_choice={"type": "any"}),
        "Thinking may not be enabled when tool_choice forces tool use.",
    ),
    (
        _thinking(tools=ANTHROPIC_TOOLS, tool_choice={"type": "tool", "name": "t"}),
        "Thinking may not be enabled when tool_choice forces tool use.",
    ),
    (
        _thinking(temperature=0.5),
        "`temperature` may only be set to 1 when thinking is enabled. "
        f"{THINKING_DOCS}#important-considerations-when-using-extended-thinking",
    ),
    (
        _anthropic_body(thinking=ADAPTIVE, tools=ANTHROPIC_TOOLS, tool_choice={"type": "any"}),
        "Thinking may not be enabled when tool_choice forces tool use.",
    ),
    (
        _anthropic_body(thinking=ADAPTIVE, temperature=0.5),
        "`temperature` may only be set to 1 when thinking is enabled. "
        f"{THINKING_DOCS}#important-considerations-when-using-extended-thinking",
    ),
    (_loop(TOOL_USE, max_tokens=2048, thinking=THINK), _unthought("tool_use")),
    (
        _loop({"type": "text", "text": "I will look"}, TOOL_USE, max_tokens=2048, thinking=THINK),
        _unthought("text"),
    ),
    (
        {**_loop(THINKING, TOOL_USE), "tools": []},
        "Requests which include `tool_use` or `tool_result` blocks must define tools.",
    ),
    (
        _anthropic_body(
            messages=[
                USER,
                {"role": "assistant", "content": [TOOL_USE]},
                {"role": "user", "content": [RESULT]},
                {"role": "assistant", "content": "ok"},
                USER,
            ]
        ),
        "Requests which include `tool_use` or `tool_result` blocks must define tools.",
    ),
]


@pytest.mark.parametrize(("body", "message"), ANTHROPIC_OPTION_REJECTIONS)
async def test_anthropic_option_rules(
    server: ScriptedProvider, client: aiohttp.ClientSession, body: dict[str, Any], message: str
) -> None:
    server.script(Reply(text="unused"))
    status, _, raw = await post(client, server, ANTHROPIC_PATH, body, ANTHROPIC_HEADERS)
    assert status == 400
    assert json.loads(raw)["error"] == {"type": "invalid_request_error", "message": message}
    assert (len(server.requests), server.remaining) == (1, 1)


@pytest.mark.parametrize(
    "body",
    [
        *(
            _anthropic_body(tools=ANTHROPIC_TOOLS, tool_choice={"type": t})
            for t in ("auto", "any", "none")
        ),
        _anthropic_body(tools=ANTHROPIC_TOOLS, tool_choice={"type": "tool", "name": "t"}),
        _anthropic_body(thinking={"type": "disabled"}, temperature=0.2),
        _thinking(temperature=1, tools=ANTHROPIC_TOOLS, tool_choice={"type": "auto"}),
        _thinking(tools=ANTHROPIC_TOOLS, tool_choice={"type": "none"}),
        _loop(THINKING, TOOL_USE, max_tokens=2048, thinking=THINK),
        _loop(REDACTED, TOOL_USE, max_tokens=2048, thinking=THINK),
        _anthropic_body(thinking=ADAPTIVE),  # no budget: max_tokens 64 is fine
        _loop(THINKING, TOOL_USE, thinking=ADAPTIVE, tool_choice={"type": "auto"}),
        _loop(TOOL_USE, thinking=ADAPTIVE),  # the model may skip thinking: no block is owed
        _loop(TOOL_USE),  # no thinking, no requirement
        _loop(TOOL_USE, thinking={"type": "disabled"}),
        _anthropic_body(tool_choice=None, thinking=None),
    ],
)
async def test_anthropic_valid_options_are_served(
    server: ScriptedProvider, client: aiohttp.ClientSession, body: dict[str, Any]
) -> None:
    server.script(Reply(text="ok"))
    status, _, raw = await post(client, server, ANTHROPIC_PATH, body, ANTHROPIC_HEADERS)
    assert (status, server.remaining) == (200, 0), raw


# ---------------------------------------------------------------------------------- lanes


async def test_a_lane_answers_its_model_and_takes_nothing_of_the_script(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    """Calls for a model of `lanes` get their lane's answer every time, are recorded apart and
    checked like any call; the script's replies stay for the others."""
    server.lanes["side"] = lambda request: Reply(text=f"side {len(server.lane_requests)}")
    server.script(Reply(text="scripted"))
    side = {**OPENAI_BODY, "model": "side"}
    for _ in range(2):
        status, _response, raw = await post(client, server, OPENAI_PATH, side, OPENAI_HEADERS)
        assert status == 200
    assert openai_text(raw) == "side 2"
    status, _response, raw = await post(client, server, OPENAI_PATH, OPENAI_BODY, OPENAI_HEADERS)
    assert (status, openai_text(raw)) == (200, "scripted")
    assert [r.body["model"] for r in server.lane_requests] == ["side", "side"]
    assert [r.body["model"] for r in server.requests] == ["m"]
    assert len(server.served) == 1 and server.remaining == 0

    server.lanes["side"] = HttpError(503, "lane down")
    bad = {**ANTHROPIC_BODY, "model": "side", "max_tokens": None}
    status, _response, raw = await post(client, server, ANTHROPIC_PATH, bad, ANTHROPIC_HEADERS)
    assert status == 400  # the API's rules hold on a lane too
    status, _response, raw = await post(
        client, server, ANTHROPIC_PATH, {**ANTHROPIC_BODY, "model": "side"}, ANTHROPIC_HEADERS
    )
    assert status == 503 and b"lane down" in raw
    assert len(server.lane_requests) == 4 and len(server.requests) == 1
