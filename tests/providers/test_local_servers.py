"""Local OpenAI-compatible servers at the providers' boundary: what is sent so that every
server accepts it, how their errors read, and what each says of its context window."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from acp_fsm.compatible import probe
from acp_fsm.devkit.provider import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    LM_STUDIO,
    OLLAMA,
    VLLM,
    HttpError,
    LocalServer,
    Raw,
    Reply,
    ScriptedProvider,
)
from acp_fsm.model_listing import server_info
from acp_fsm.providers import http
from acp_fsm.providers.config import load_config
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.openai import OpenAiWire, convert_messages
from acp_fsm.providers.types import (
    AssistantMessage,
    ImagePart,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    UserMessage,
)
from tests.providers.conftest import collect, make_config, make_request

RECORDED = Path(__file__).parents[1] / "recorded" / "llama-cpp-python"


@pytest.fixture(autouse=True)
async def _client_session() -> AsyncIterator[None]:
    """Each test has its own event loop: the shared client session goes with it."""
    yield
    await http.close_client_session()


CALL = ToolCallPart("call_1", "read_file", {"path": "a.txt"}, '{"path": "a.txt"}')
TOOL_TURN = (
    UserMessage((TextPart("read a.txt"),)),
    AssistantMessage((CALL,), StopReason.TOOL_USE),
    ToolResultsMessage((ToolResultPart("call_1", "hello"),)),
)


def test_an_assistant_message_with_tool_calls_and_no_text_has_an_empty_string() -> None:
    """llama-cpp-python refuses `null` (HTTP 500); every server takes ""."""
    [_, assistant, _] = convert_messages(None, TOOL_TURN)
    assert assistant["content"] == "" and assistant["tool_calls"][0]["id"] == "call_1"


def test_user_messages_in_a_row_are_merged_so_roles_alternate() -> None:
    """A turn that got no answer, or a compaction's summary before the next prompt: strict
    chat templates refuse two user messages in a row."""
    sent = convert_messages(
        "system",
        (
            UserMessage((TextPart("first"),)),
            AssistantMessage((TextPart("  "),)),
            UserMessage((TextPart("second"),)),
            UserMessage((TextPart("see"), TextPart("this"))),
        ),
    )
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["content"] == "first\n\nsecond\n\nsee\n\nthis"
    [_, with_image] = convert_messages(
        "system", (UserMessage((TextPart("look"),)), UserMessage((ImagePart("AAAA", "image/png"),)))
    )
    assert with_image["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]


async def test_a_tool_turn_is_accepted_by_llama_cpp_python(tmp_path: Path) -> None:
    async with ScriptedProvider(Reply(text="it says hello"), local=LLAMA_CPP_PYTHON) as server:
        events = await collect(
            make_config(server, "openai", api_key=None), request=make_request(*TOOL_TURN)
        )
    assert any(getattr(e, "text", None) == "it says hello" for e in events)


async def test_llama_cpp_python_refuses_a_null_content_as_it_really_does() -> None:
    """The scripted server holds the rule (so the agent's tests would catch a regression) and
    words it as the recorded answer does."""
    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "r"},
        ],
    }
    recorded = json.loads((RECORDED / "assistant_content_null.500.json").read_bytes())
    async with (
        ScriptedProvider(local=LLAMA_CPP_PYTHON) as server,
        aiohttp.ClientSession() as client,
        client.post(f"{server.openai_base_url}/chat/completions", json=body) as response,
    ):
        answer = await response.json()
    assert response.status == 500
    assert answer["error"]["type"] == recorded["error"]["type"] == "internal_server_error"
    assert "Input should be a valid string" in answer["error"]["message"]
    assert answer["error"]["message"].splitlines()[0] == "7 validation errors:"
    assert recorded["error"]["message"].splitlines()[0] == "7 validation errors:"


def test_a_long_error_is_one_short_line_with_the_whole_message_in_details() -> None:
    recorded = (RECORDED / "assistant_content_null.500.json").read_bytes()
    error = OpenAiWire().parse_error(500, recorded)
    assert str(error).startswith("openai HTTP 500 internal_server_error: 7 validation errors:")
    assert len(str(error)) < 300 and "\n" not in str(error)
    assert error.details is not None and "Input should be a valid string" in error.details
    short = ProviderError("openai", "Overloaded", status=529)
    assert short.details is None and short.brief == "Overloaded"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b'{"object":"error","message":"This model\'s maximum context length is 4096 tokens.",'
            b'"type":"BadRequestError","param":null,"code":400}',
            ("BadRequestError", "This model's maximum context length is 4096 tokens."),
        ),  # vLLM
        (
            b'{"error":"The number of tokens to keep from the initial prompt is greater than the '
            b'context length."}',
            (
                None,
                "The number of tokens to keep from the initial prompt is "
                "greater than the context length.",
            ),
        ),  # LM Studio
        (b'{"detail":"Not Found"}', (None, "Not Found")),  # FastAPI
        (
            b'{"detail":[{"loc":["body","messages"],"msg":"field required"}]}',
            (None, '[{"loc": ["body", "messages"], "msg": "field required"}]'),
        ),
    ],
)
def test_the_error_shapes_of_compatible_servers(
    body: bytes, expected: tuple[str | None, str]
) -> None:
    error = OpenAiWire().parse_error(400, body)
    assert (error.error_type, error.message) == expected


async def test_lm_studio_s_error_in_a_200_stream_is_a_refusal_for_length() -> None:
    window, prompt = 4096, 9000
    over = LM_STUDIO.overflow({}, prompt, window)
    assert isinstance(over, Raw)
    async with ScriptedProvider(over) as server:
        with pytest.raises(ProviderError) as caught:
            await collect(make_config(server, "openai"))
    assert caught.value.context_exceeded and caught.value.context_sizes == (prompt, window)


@pytest.mark.parametrize("local", [LLAMA_CPP, VLLM])
def test_a_refusal_for_length_states_the_sizes(local: LocalServer) -> None:
    over = local.overflow({"max_tokens": 100}, 5000, 4096)
    assert isinstance(over, HttpError) and over.body is not None
    error = OpenAiWire().parse_error(over.status, over.body)
    prompt, maximum = error.context_sizes
    assert error.context_exceeded and maximum == 4096 and prompt in (5000, 5100)


@pytest.mark.parametrize(
    ("provider", "overrides", "path", "said"),
    [
        (
            "anthropic",
            {},
            "/v1/messages",
            "does not serve Anthropic's Messages API (POST {url}/v1/messages): set "
            "ACP_FSM_PROVIDER=openai and OPENAI_BASE_URL={url}/v1 to use its OpenAI-compatible",
        ),
        (
            "openai",
            {"api": "responses"},
            "/v1/responses",
            "does not serve OpenAI's Responses API (POST {url}/v1/responses): set "
            "ACP_FSM_OPENAI_API=chat",
        ),
        (
            "openai",
            {"base_url": "{url}"},  # without /v1: nothing is served at /chat/completions
            "/chat/completions",
            "does not serve Chat Completions at this URL (POST {url}/chat/completions): "
            "OPENAI_BASE_URL should end with /v1, as local servers serve it ({url}/v1)",
        ),
    ],
    ids=["messages", "responses", "no-v1"],
)
async def test_an_api_the_server_lacks_is_named_with_what_to_set_instead(
    provider: str, overrides: dict[str, str], path: str, said: str
) -> None:
    """llama-cpp-python serves Chat Completions alone: its 404 said only "Not Found"."""
    async with ScriptedProvider(Reply(text="never"), local=LLAMA_CPP_PYTHON) as server:
        config = make_config(
            server, provider, api_key=None, max_retries=0,
            **{k: v.format(url=server.url) for k, v in overrides.items()},
        )  # fmt: skip
        with pytest.raises(ProviderError) as caught:
            await collect(config)
        error, url = caught.value, server.url
    assert error.status == 404 and not error.retryable and server.remaining == 1
    assert error.advice is not None and said.format(url=url) in str(error)
    assert str(error).startswith(f"{provider} HTTP 404: ") and "\n" not in str(error)
    assert [r.path for r in server.requests] == ([path] if path.startswith("/v1") else [])


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (  # OpenAI
            404,
            b'{"error":{"message":"The model `m` does not exist or you do not have access to '
            b'it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}',
        ),
        (  # vLLM
            404,
            b'{"object":"error","message":"The model `m` does not exist.","type":"NotFoundError",'
            b'"param":null,"code":404}',
        ),
        (404, b'{"error":{"message":"unknown: m","type":"not_found_error"}}'),  # names it
        (400, b'{"detail":"Not Found"}'),  # not a 404
    ],
    ids=["openai", "vllm", "named", "not-404"],
)
async def test_a_model_the_server_does_not_have_keeps_its_own_message(
    status: int, body: bytes
) -> None:
    async with ScriptedProvider(HttpError(status, body=body)) as server:
        with pytest.raises(ProviderError) as caught:
            await collect(make_config(server, "openai", max_retries=0))
    assert caught.value.advice is None and caught.value.status == status


async def test_ollama_s_unknown_model_keeps_its_own_message() -> None:
    async with ScriptedProvider(local=OLLAMA, models=("qwen2.5-coder:7b",)) as server:
        with pytest.raises(ProviderError) as caught:
            await collect(make_config(server, "openai", max_retries=0))
    assert caught.value.advice is None
    said = 'openai HTTP 404 api_error: model "m" not found, try pulling it first'
    assert str(caught.value) == said


def test_only_the_providers_own_hosts_are_official() -> None:
    def official(url: str) -> bool:
        return load_config({"ACP_FSM_PROVIDER": "openai", "OPENAI_BASE_URL": url}).official

    assert official("https://api.openai.com/v1")
    assert not official("http://localhost:8080/v1")
    assert not official("http://proxy.example/api.openai.com/v1")


@pytest.mark.parametrize(
    ("local", "stated"),
    [
        (LLAMA_CPP_PYTHON, (None, None)),  # states none: ACP_FSM_CONTEXT_WINDOW is the way
        (LLAMA_CPP, (6000, 6000)),  # /props, for the one model it serves
        (VLLM, (6000, 6000)),  # max_model_len of each listed model
        (OLLAMA, (None, None)),  # /api/ps: loaded models only
        (LM_STUDIO, (None, None)),  # /api/v0/models: loaded models only
    ],
)
async def test_what_each_server_states_of_its_window(
    local: LocalServer, stated: tuple[int | None, int | None]
) -> None:
    async with ScriptedProvider(
        local=local, context_window=6000, models=("coder", "tiny")
    ) as server:
        config = make_config(server, "openai")
        async with aiohttp.ClientSession() as client:
            info = await probe(client, config, {})
            server.loaded.add("coder")  # a model call loaded it
            loaded = await probe(client, config, {})
    assert info.models == ["coder", "tiny"]
    assert (info.window("coder"), info.windows.get("tiny", info.every_model)) == stated
    if local in (OLLAMA, LM_STUDIO):
        assert info.loaded_only == {"coder", "tiny"}
        assert (loaded.window("coder"), loaded.window("tiny")) == (6000, None)
        assert loaded.loaded_only == {"tiny"}
    else:
        assert info.loaded_only == frozenset() and loaded == info


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_llama_cpp_states_its_window_to_either_api(provider: str) -> None:
    """llama.cpp's server speaks Anthropic's Messages API too: its list and its `/props` are
    read on that route as on the OpenAI-compatible one."""
    async with ScriptedProvider(local=LLAMA_CPP, context_window=6000, models=("coder",)) as server:
        info = await server_info(make_config(server, provider, api_key=None))
        asked = sorted(r.path for r in server.model_list_requests)
    assert info.models == ["coder"] and info.window("coder") == 6000
    assert asked == ["/props", "/v1/models"]
