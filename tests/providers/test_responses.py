"""The Responses API adapter against the scripted provider's `/v1/responses`, and that
route's rules (what the real API refuses), over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from acp_fsm.devkit.provider import Call, HttpError, Raw, Reply, ScriptedProvider
from acp_fsm.devkit.provider.wire import sse
from acp_fsm.providers.config import ConfigError, load_config
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.responses import ResponsesParser
from acp_fsm.providers.sse import SseEvent
from acp_fsm.providers.types import (
    AssistantMessage,
    Finished,
    StopReason,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallFinished,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from acp_fsm.transcript import part_from_json, part_to_json
from tests.providers.conftest import API_KEY, collect, make_config, make_request
from tests.providers.test_scripted import OPENAI_HEADERS, post, sse_payloads

PATH = "/v1/responses"
HI = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "input": [HI, *items], "stream": True, "store": False}


def test_the_provider_names_select_the_api() -> None:
    env = {"OPENAI_API_KEY": API_KEY}
    assert load_config({**env, "ACP_FSM_PROVIDER": "openai-responses"}).api == "responses"
    responses = load_config(
        {**env, "ACP_FSM_PROVIDER": "openai", "ACP_FSM_OPENAI_API": "responses"}
    )
    assert (responses.provider, responses.api) == ("openai", "responses")
    assert load_config({**env, "ACP_FSM_PROVIDER": "openai"}).api == "chat"
    with pytest.raises(ConfigError, match="ACP_FSM_OPENAI_API"):
        load_config({**env, "ACP_FSM_OPENAI_API": "soap"})


async def test_reasoning_text_calls_and_usage(server: ScriptedProvider) -> None:
    server.script(
        Reply(
            thinking=("Think", "ing"),
            text="Reading.",
            calls=(Call("c1", "read_file", ('{"pa', 'th": "a"}')),),
            usage=Usage(10, 5, 4, thought_tokens=3),
        )
    )
    config = make_config(server, "openai", api="responses")

    events = await collect(config, request=make_request(max_tokens=99, reasoning="high"))

    sent = server.requests[-1]
    assert sent.path == PATH
    assert sent.body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert sent.body["max_output_tokens"] == 99
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["Think", "ing"]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [f.call.arguments for f in finished] == [{"path": "a"}]
    last = events[-1]
    assert isinstance(last, Finished) and last.stop_reason is StopReason.TOOL_USE
    assert last.usage == Usage(
        input_tokens=14, output_tokens=5, cache_read_tokens=4, thought_tokens=3
    )
    thinking, text, call = last.message.parts
    assert isinstance(thinking, ThinkingPart) and thinking.text == "Thinking"
    assert thinking.item is not None and json.loads(thinking.item)["encrypted_content"]
    assert part_from_json(part_to_json(thinking)) == thinking  # stored, loaded the same
    assert text == TextPart("Reading.") and isinstance(call, ToolCallPart)


async def test_the_reasoning_item_goes_back_before_its_calls(server: ScriptedProvider) -> None:
    config = make_config(server, "openai", api="responses")
    server.script(Reply(thinking="t", calls=(Call("c1", "read_file", '{"path": "a"}'),)))
    first = await collect(config)
    message = first[-1]
    assert isinstance(message, Finished)
    results = ToolResultsMessage((ToolResultPart("c1", "A"),))
    history = (UserMessage((TextPart("hi"),)), message.message, results)
    server.script(Reply(text="done"))

    await collect(config, request=make_request(*history))

    kinds = [i["type"] for i in server.requests[-1].body["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    # without it the server refuses the call, as the API does with store: false
    stripped = AssistantMessage(message.message.parts[1:], message.message.stop_reason)
    with pytest.raises(ProviderError, match="without its required 'reasoning' item"):
        await collect(config, request=make_request(history[0], stripped, results))


async def test_an_http_error_is_quoted(server: ScriptedProvider) -> None:
    server.script(HttpError(400, "Unsupported parameter: 'temperature'."))
    with pytest.raises(ProviderError, match="Unsupported parameter: 'temperature'"):
        await collect(make_config(server, "openai", api="responses"))


async def test_the_stream_ends_with_response_completed(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    server.script(Reply(text="hi"))
    status, _, raw = await post(client, server, PATH, body(), OPENAI_HEADERS)
    names = [name for name, _ in sse_payloads(raw)]
    assert status == 200
    assert names == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]


async def test_the_parts_of_a_reasoning_summary_stream_a_blank_line_apart(
    server: ScriptedProvider,
) -> None:
    parts = ["**Reading**\n\nFirst the file.", "**Answering**\n\nThen the answer."]
    summary = [{"type": "summary_text", "text": text} for text in parts]
    item = {"id": "rs_1", "type": "reasoning", "summary": summary, "encrypted_content": "e"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.added", "item": {**item, "summary": []}},
        *(
            event
            for index, text in enumerate(parts)
            for event in (
                {"type": "response.reasoning_summary_part.added", "summary_index": index},
                {"type": "response.reasoning_summary_text.delta", "delta": text},
            )
        ),
        {"type": "response.output_item.done", "item": item},
        {"type": "response.completed", "response": {"status": "completed", "output": [item]}},
    ]
    server.script(Raw(tuple(sse(event, str(event["type"])) for event in events)))

    found = await collect(make_config(server, "openai", api="responses"))

    streamed = [e.text for e in found if isinstance(e, ThinkingDelta)]
    assert streamed == [parts[0], "\n\n", parts[1]]
    last = found[-1]
    assert isinstance(last, Finished)
    [thought] = last.message.parts
    assert isinstance(thought, ThinkingPart) and thought.text == "\n\n".join(parts)
    assert thought.item is not None and json.loads(thought.item) == item


@pytest.mark.parametrize("include", [["reasoning.encrypted_content"], []])
async def test_the_encrypted_reasoning_comes_when_it_is_included(
    server: ScriptedProvider, client: aiohttp.ClientSession, include: list[str]
) -> None:
    server.script(Reply(thinking="t", text="hi"))
    _, _, raw = await post(client, server, PATH, {**body(), "include": include}, OPENAI_HEADERS)
    [item] = [
        data["item"]
        for name, data in sse_payloads(raw)
        if name == "response.output_item.done" and data["item"]["type"] == "reasoning"
    ]
    assert bool(item["encrypted_content"]) == bool(include)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"type": "bogus"}], "Invalid value: 'bogus'"),
        (
            [{"type": "function_call", "call_id": "x", "name": "n", "arguments": "{}"}],
            "No tool output found for function call x.",
        ),
        (
            [{"type": "function_call_output", "call_id": "y", "output": "o"}],
            "No tool call found for function call output with call_id y.",
        ),
        (
            [{"type": "custom_tool_call", "call_id": "z", "name": "n", "input": "text"}],
            "No tool output found for function call z.",
        ),
        (
            [{"type": "custom_tool_call_output", "call_id": "w", "output": "o"}],
            "No tool call found for custom tool call output with call_id w.",
        ),
        (
            [
                {"type": "function_call", "call_id": "v", "name": "n", "arguments": "{}"},
                {"type": "custom_tool_call_output", "call_id": "u", "output": "o"},
            ],
            "No tool call found for custom tool call output with call_id u.",
        ),
        ([{"type": "reasoning", "id": "rs_1", "summary": []}], "Items are not persisted"),
        (
            [{"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e"}],
            "of type 'reasoning' was provided without its required following item",
        ),
    ],
)
async def test_what_the_api_refuses(
    server: ScriptedProvider, client: aiohttp.ClientSession, items: list[Any], message: str
) -> None:
    status, _, raw = await post(client, server, PATH, body(*items), OPENAI_HEADERS)
    assert status == 400
    assert message in json.loads(raw)["error"]["message"]


async def test_a_custom_tool_call_streams_its_input_and_its_output_answers_it(
    server: ScriptedProvider, client: aiohttp.ClientSession
) -> None:
    """A free-form tool's call: `custom_tool_call` with its text input, streamed as
    `response.custom_tool_call_input.*`; sent back with a `custom_tool_call_output`."""
    patch = ("*** Begin Patch\n", "*** End Patch\n")
    server.script(
        Reply(calls=(Call("call_p", "apply_patch", patch, custom=True),)), Reply(text="ok")
    )
    status, _, raw = await post(client, server, PATH, body(), OPENAI_HEADERS)
    events = sse_payloads(raw)
    assert status == 200
    deltas = [
        data["delta"] for name, data in events if name == "response.custom_tool_call_input.delta"
    ]
    [done] = [data for name, data in events if name == "response.custom_tool_call_input.done"]
    [item] = [data["item"] for name, data in events if name == "response.output_item.done"]
    assert deltas == list(patch) and done["input"] == "".join(patch)
    assert item["id"].startswith("ctc_") and done["item_id"] == item["id"]
    assert {k: item[k] for k in ("type", "call_id", "name", "input", "status")} == {
        "type": "custom_tool_call",
        "call_id": "call_p",
        "name": "apply_patch",
        "input": "".join(patch),
        "status": "completed",
    }
    answered = body(
        item, {"type": "custom_tool_call_output", "call_id": "call_p", "output": "done"}
    )
    status, _, raw = await post(client, server, PATH, answered, OPENAI_HEADERS)
    assert (status, server.remaining) == (200, 0), raw


def test_a_refusal_is_the_answer() -> None:
    parser = ResponsesParser()
    for event in (
        {"type": "response.output_item.added", "item": {"type": "message", "id": "msg_1"}},
        {"type": "response.refusal.delta", "item_id": "msg_1", "delta": "I can't "},
        {"type": "response.refusal.delta", "item_id": "msg_1", "delta": "help with that."},
        {"type": "response.output_item.done", "item": {"type": "message", "id": "msg_1"}},
        {"type": "response.completed", "response": {"status": "completed"}},
    ):
        parser.feed(SseEvent(str(event["type"]), json.dumps(event)))
    [finished] = parser.end()
    assert isinstance(finished, Finished) and finished.stop_reason is StopReason.END_TURN
    assert finished.message.text == "I can't help with that."


@pytest.mark.parametrize(
    ("events", "thought"),
    [
        (  # vLLM and Ollama stream gpt-oss's own reasoning
            [{"type": "response.reasoning_text.delta", "item_id": "rs_1", "delta": "raw"}],
            "raw",
        ),
        ([], "S1\n\nS2"),  # a server that sends the item whole
    ],
)
def test_a_thought_from_a_compatible_server(events: list[dict[str, Any]], thought: str) -> None:
    summary = [{"type": "summary_text", "text": t} for t in ("S1", "S2")]
    item = {"type": "reasoning", "id": "rs_1", "summary": [] if events else summary}
    parser = ResponsesParser()
    shown: list[str] = []
    for event in (
        {"type": "response.output_item.added", "item": {**item, "summary": []}},
        *events,
        {"type": "response.output_item.done", "item": item},
        {"type": "response.completed", "response": {"status": "completed"}},
    ):
        found = parser.feed(SseEvent(str(event["type"]), json.dumps(event)))
        shown += [e.text for e in found if isinstance(e, ThinkingDelta)]
    [finished] = parser.end()
    assert "".join(shown) == thought
    assert isinstance(finished, Finished)
    [part] = finished.message.parts
    assert isinstance(part, ThinkingPart) and part.text == thought and part.item is not None
