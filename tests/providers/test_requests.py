"""What goes on the wire: request bodies and headers field by field, and the tool-pairing rule
the real APIs enforce (checked by the scripted server with the APIs' own 400)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.openai import OpenAiWire
from acp_fsm.providers.types import (
    AssistantMessage,
    ImagePart,
    Message,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    UserMessage,
)
from tests.providers.conftest import (
    API_KEY,
    READ_FILE,
    collect,
    collect_until_error,
    make_config,
    make_request,
    start_stream,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5Erk"
HISTORY: tuple[Message, ...] = (
    UserMessage((TextPart("Look at this"), ImagePart(PNG, "image/png"))),
    AssistantMessage(
        (
            ThinkingPart("I should read both.", "sig-1"),
            TextPart("Reading both."),
            ToolCallPart("call_1", "read_file", {"path": "a.txt"}, '{"path":"a.txt"}'),
            ToolCallPart("call_2", "read_file", {"path": "b.txt"}),
        ),
        StopReason.TOOL_USE,
    ),
    ToolResultsMessage(
        (ToolResultPart("call_1", "alpha"), ToolResultPart("call_2", "", is_error=True))
    ),
    UserMessage((TextPart("Also check c.txt"),)),
    AssistantMessage(
        (
            ThinkingPart("cut short by a cancel"),
            ThinkingPart("", redacted="EmwKAhgBEgy3va3pzix"),
            TextPart("Both read."),
        ),
        StopReason.END_TURN,
    ),
    UserMessage((TextPart("Thanks"),)),
)
FULL_REQUEST = make_request(*HISTORY, system="Be brief.", max_tokens=1024)

OPENAI_MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look at this"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Reading both.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "b.txt"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "alpha"},
    {"role": "tool", "tool_call_id": "call_2", "content": "(no output)"},
    {"role": "user", "content": "Also check c.txt"},
    {"role": "assistant", "content": "Both read."},
    {"role": "user", "content": "Thanks"},
]
ANTHROPIC_MESSAGES = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look at this"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should read both.", "signature": "sig-1"},
            {"type": "text", "text": "Reading both."},
            {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "call_2", "name": "read_file", "input": {"path": "b.txt"}},
        ],
    },
    {
        "role": "user",
        "content": [  # tool results first, then the user's own words
            {"type": "tool_result", "tool_use_id": "call_1", "content": "alpha", "is_error": False},
            {
                "type": "tool_result",
                "tool_use_id": "call_2",
                "content": "(no output)",
                "is_error": True,
            },
            {"type": "text", "text": "Also check c.txt"},
        ],
    },
    {
        "role": "assistant",
        "content": [  # the unsigned thinking block is dropped
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Both read."},
        ],
    },
    {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
]
CACHED = {"type": "ephemeral"}  # a prompt-cache breakpoint: after system, tools, conversation


async def sent_body(
    server: ScriptedProvider, config: ProviderConfig, *messages: Message, **fields: Any
) -> dict[str, Any]:
    """Make one successful call and return the JSON body the server received."""
    server.script(Reply(text="ok"))
    await collect(config, request=make_request(*messages, **fields))
    (request,) = server.requests
    assert isinstance(request.body, dict)
    return request.body


async def test_openai_request_body(server: ScriptedProvider) -> None:
    server.script(Reply(text="ok"))
    await collect(make_config(server, "openai"), request=FULL_REQUEST)
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].body == {
        "model": "m",
        "messages": OPENAI_MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 1024,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a text file",
                    "parameters": READ_FILE.input_schema,
                },
            }
        ],
    }


async def test_anthropic_request_body(server: ScriptedProvider) -> None:
    server.script(Reply(text="ok"))
    await collect(make_config(server, "anthropic"), request=FULL_REQUEST)
    assert server.requests[0].path == "/v1/messages"
    assert server.requests[0].body == {
        "model": "m",
        "max_tokens": 1024,
        "stream": True,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": CACHED}],
        "messages": [
            *ANTHROPIC_MESSAGES[:-1],
            {
                "role": "user",
                "content": [{"type": "text", "text": "Thanks", "cache_control": CACHED}],
            },
        ],
        "tools": [
            {
                "name": "read_file",
                "description": "Read a text file",
                "input_schema": READ_FILE.input_schema,
                "cache_control": CACHED,
            }
        ],
    }


async def test_headers_with_a_key(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    await sent_body(server, config)
    headers = server.requests[0].headers
    assert headers["Content-Type"] == "application/json"
    assert headers["accept"] == "text/event-stream"
    if provider == "openai":
        assert headers["authorization"] == f"Bearer {API_KEY}"
        assert "x-api-key" not in headers
        assert "anthropic-version" not in headers
    else:
        assert headers["X-Api-Key"] == API_KEY
        assert headers["anthropic-version"] == "2023-06-01"
        assert "authorization" not in headers


async def test_no_auth_header_without_a_key(server: ScriptedProvider, provider: str) -> None:
    server.api_key = None  # a local model server needs no key
    await sent_body(server, make_config(server, provider, api_key=None))
    headers = server.requests[0].headers
    assert "authorization" not in headers
    assert "x-api-key" not in headers


async def test_no_tools_and_no_system(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    body = await sent_body(server, config, tools=())
    assert "tools" not in body
    assert "system" not in body
    first = body["messages"][0]
    assert first == (
        {"role": "user", "content": "hi"}
        if provider == "openai"
        else {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CACHED}]}
    )


def test_openai_max_tokens_key_depends_on_the_server() -> None:
    request = make_request(max_tokens=77)
    for base_url, key in (
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("http://localhost:11434/v1", "max_tokens"),
    ):
        config = ProviderConfig(provider="openai", model="m", base_url=base_url)
        url, _, body = OpenAiWire().build(request, config)
        assert url == f"{base_url}/chat/completions"
        assert key.encode() + b'": 77' in body
        other = "max_tokens" if key == "max_completion_tokens" else "max_completion_tokens"
        assert f'"{other}"'.encode() not in body


async def test_anthropic_empty_assistant_turn_is_dropped_and_users_merged(
    server: ScriptedProvider,
) -> None:
    """A turn cancelled during thinking leaves only unsigned thinking: nothing to send; the
    user messages around it merge so roles still alternate (the server would 400 otherwise)."""
    body = await sent_body(
        server,
        make_config(server, "anthropic"),
        UserMessage((TextPart("first"),)),
        AssistantMessage((ThinkingPart("half"),)),
        UserMessage((TextPart("second"),)),
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second", "cache_control": CACHED},
            ],
        }
    ]


async def test_openai_keeps_separate_user_text_parts_apart(server: ScriptedProvider) -> None:
    body = await sent_body(
        server,
        make_config(server, "openai"),
        UserMessage((TextPart("Look at this"), TextPart("notes.md"))),
    )
    assert body["messages"][0]["content"] in (
        [{"type": "text", "text": "Look at this"}, {"type": "text", "text": "notes.md"}],
        "Look at this\nnotes.md",
        "Look at this\n\nnotes.md",
    )


# ------------------------------------------------------------------------ pairing rules

ORPHANED_CALL: tuple[Message, ...] = (
    UserMessage((TextPart("read a.txt"),)),
    AssistantMessage(
        (ToolCallPart("call_1", "read_file", {"path": "a.txt"}),), StopReason.TOOL_USE
    ),
    UserMessage((TextPart("never mind"),)),
)
PAIRING_ERRORS = {
    "openai": (
        "invalid_request_error",
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        "response messages: call_1",
    ),
    "anthropic": (
        "invalid_request_error",
        "messages.1: `tool_use` ids were found without `tool_result` blocks "
        "immediately after: call_1. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message.",
    ),
}


async def test_orphaned_tool_call_is_a_400_not_retried(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    server.script(Reply(text="never"))
    with pytest.raises(ProviderError) as caught:
        await collect_until_error(start_stream(config, request=make_request(*ORPHANED_CALL)), [])
    error = caught.value
    assert (error.status, error.retryable) == (400, False)
    assert (error.error_type, error.message) == PAIRING_ERRORS[provider]
    assert len(server.requests) == 1
    assert server.remaining == 1  # rejected before a reply was taken


async def test_answered_tool_calls_pass_the_pairing_rule(
    server: ScriptedProvider, config: ProviderConfig, provider: str
) -> None:
    results = ToolResultsMessage((ToolResultPart("call_1", "contents of a.txt"),))
    body = await sent_body(server, config, *ORPHANED_CALL[:2], results)
    assert body["messages"][-1] == (
        {"role": "tool", "tool_call_id": "call_1", "content": "contents of a.txt"}
        if provider == "openai"
        else {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": "contents of a.txt",
                    "is_error": False,
                    "cache_control": CACHED,
                }
            ],
        }
    )


def test_anthropic_never_sends_whitespace_only_text() -> None:
    """The Messages API refuses text blocks without visible text: a cancel after a first
    "\\n\\n" delta must not poison the history."""
    from acp_fsm.providers.anthropic import convert_messages
    from acp_fsm.providers.types import AssistantMessage, TextPart, UserMessage

    history = (
        UserMessage((TextPart("hi"),)),
        AssistantMessage((TextPart("\n\n"),)),
        UserMessage((TextPart("  "), TextPart("go on"))),
    )
    converted = convert_messages(history)
    assert [m["role"] for m in converted] == ["user"]  # the empty assistant turn is dropped
    assert [b["text"] for b in converted[0]["content"]] == ["hi", "go on"]


@pytest.mark.parametrize(
    ("api", "base_url", "sent"),
    [
        ("chat", "https://api.openai.com/v1", "session-1"),
        ("chat", "http://127.0.0.1:1/v1", None),  # a compatible server may refuse the field
        ("responses", "http://127.0.0.1:1/v1", "session-1"),  # a field of the API itself
        ("responses", "https://api.openai.com/v1", "session-1"),
    ],
)
def test_the_prompt_cache_key_is_the_sessions(api: str, base_url: str, sent: str | None) -> None:
    from acp_fsm.providers import wire_format

    config = ProviderConfig("openai", "m", base_url, api=api)
    _, _, body = wire_format("openai", api).build(make_request(cache_key="session-1"), config)
    assert json.loads(body).get("prompt_cache_key") == sent
    _, _, body = wire_format("openai", api).build(make_request(), config)
    assert "prompt_cache_key" not in json.loads(body)
    _, _, body = wire_format("openai", api).build(make_request(cache_key="k" * 80), config)
    assert json.loads(body).get("prompt_cache_key") == (sent and "k" * 64)  # OpenAI's limit


@pytest.mark.parametrize(
    ("model", "base_url", "included"),
    [
        ("gpt-5", "https://api.openai.com/v1", True),
        ("o4-mini", "https://api.openai.com/v1", True),
        ("gpt-4.1", "https://api.openai.com/v1", False),  # OpenAI refuses it for this model
        ("gpt-5-chat-latest", "https://api.openai.com/v1", False),
        ("llama3.2", "http://127.0.0.1:1/v1", True),  # a server's models are its own
    ],
)
def test_encrypted_reasoning_is_asked_of_models_that_reason(
    model: str, base_url: str, included: bool
) -> None:
    from acp_fsm.providers.responses import ResponsesWire, origin_of

    config = ProviderConfig("openai", model, base_url, api="responses")
    item = '{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}'
    made = origin_of(config, model)
    answered = AssistantMessage((ThinkingPart("", item=item, origin=made), TextPart("hello")))
    request = make_request(UserMessage((TextPart("hi"),)), answered, model=model, memo={})
    sent = json.loads(ResponsesWire().build(request, config)[2])
    assert ("include" in sent) is included
    # its reasoning items go back only to a model that reasons
    assert [i["type"] for i in sent["input"]] == [
        "message",
        *(["reasoning"] if included else []),
        "message",
    ]


@pytest.mark.parametrize(
    "sealed", [{}, {"encrypted_content": None}, {"encrypted_content": ""}], ids=repr
)
def test_a_reasoning_item_without_encrypted_content_is_left_out(sealed: dict[str, Any]) -> None:
    """With `store: false` the API resolves a reasoning item by its encrypted content only."""
    from acp_fsm.providers.responses import ResponsesWire, origin_of

    config = ProviderConfig("openai", "gpt-5", "https://api.openai.com/v1", api="responses")
    origin = origin_of(config, "gpt-5")
    bare = json.dumps({"type": "reasoning", "id": "rs_1", "summary": [], **sealed})
    whole = json.dumps({"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e"})
    answered = AssistantMessage(
        (
            ThinkingPart("a thought", item=bare, origin=origin),
            TextPart("hello"),
            ThinkingPart("another", item=whole, origin=origin),
            TextPart("again"),
        )
    )
    request = make_request(UserMessage((TextPart("hi"),)), answered, model="gpt-5", memo={})
    sent = json.loads(ResponsesWire().build(request, config)[2])["input"]
    assert [(i["type"], i.get("id")) for i in sent] == [
        ("message", None),
        ("message", None),
        ("reasoning", "rs_2"),
        ("message", None),
    ]
