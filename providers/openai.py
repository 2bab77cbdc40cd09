"""OpenAI Chat Completions, streaming (also Ollama, vLLM, llama.cpp and other compatibles)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from acp_fsm.providers.assemble import MessageBuilder
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.encoder import (
    MESSAGES,
    Encoder,
    Scrub,
    encode_all,
    encoder_of,
    splice,
)
from acp_fsm.providers.errors import ProviderError, truncated
from acp_fsm.providers.http import RETRYABLE_STATUSES
from acp_fsm.providers.sse import SseEvent, json_data
from acp_fsm.providers.types import (
    AssistantMessage,
    Event,
    Finished,
    ImagePart,
    Message,
    ModelRequest,
    StopReason,
    TextPart,
    ToolCallPart,
    Usage,
    UserMessage,
)

NAME = "openai"
STOP_REASONS = {
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.REFUSAL,
}
# Error types inside a 200 stream that a later attempt may not hit.
TRANSIENT_TYPES = frozenset(
    {
        "server_error",
        "internal_error",
        "rate_limit_exceeded",
        "timeout",
        "overloaded_error",
        "service_unavailable",
    }
)
EMPTY_RESULT = "(no output)"
CACHE_KEY = "prompt_cache_key"  # routes a conversation's calls to the cache of its prefix
CACHE_KEY_MAX = 64  # characters OpenAI takes in it
MAX_ERROR_CHARS = 4000  # of an error body that is not one of the known shapes


def convert_messages(system: str | None, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The neutral transcript as Chat Completions messages: every assistant tool call is
    answered by its `role: "tool"` message before anything else, and user messages in a row
    are one (strict chat templates, Gemma's and Mistral's, refuse two in a row; a turn that
    got no answer and a compaction's summary both leave one before the next)."""
    head: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    return head + encode_all(messages, _convert, _merge)


def _convert(message: Message) -> list[dict[str, Any]]:
    """One neutral message as Chat Completions messages (see `convert_messages`)."""
    if isinstance(message, UserMessage):
        return [{"role": "user", "content": _user_content(message)}]
    if isinstance(message, AssistantMessage):
        converted = _assistant(message)
        return [] if converted is None else [converted]
    return [
        {"role": "tool", "tool_call_id": r.call_id, "content": r.content or EMPTY_RESULT}
        for r in message.results
    ]


def _merge(last: dict[str, Any], wire: dict[str, Any]) -> bool:
    """A user message into the user message before it: texts joined by a blank line, or the
    parts in order when one holds an image."""
    if last["role"] != "user" or wire["role"] != "user":
        return False
    last["content"] = [*_as_parts(last["content"]), *_as_parts(wire["content"])]
    if all(part["type"] == "text" for part in last["content"]):  # plain text stays a string
        last["content"] = "\n\n".join(part["text"] for part in last["content"])
    return True


def _as_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if len(message.parts) == 1 and isinstance(message.parts[0], TextPart):
        return message.parts[0].text
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = f"data:{part.mime_type};base64,{part.data}"
            content.append({"type": "image_url", "image_url": {"url": url}})
    return content


def made_up_call_id() -> str:
    """The id of a tool call a server sent without one: unique in the session (ACP)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def arguments_of(call: ToolCallPart) -> str:
    """The call's arguments as sent back: the model's own text when it was valid JSON."""
    return (
        call.raw_arguments
        if call.error is None and call.raw_arguments
        else json.dumps(call.arguments)
    )


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_of(c)}}
        for c in message.tool_calls
    ]
    text = "\n\n".join(p.text for p in message.parts if isinstance(p, TextPart) and p.text)
    if not text.strip() and not calls:
        return None  # nothing to send (a turn cancelled before any text, an empty answer)
    # Text or "" beside tool calls: llama-cpp-python refuses `null` (HTTP 500, "Input should
    # be a valid string"), and no server refuses "".
    converted: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        converted["tool_calls"] = calls
    return converted


class OpenAiWire:
    name = NAME

    def build(
        self, request: ModelRequest, config: ProviderConfig, scrub: Scrub | None = None
    ) -> tuple[str, dict[str, str], bytes]:
        headers = bearer_headers(config)
        body: dict[str, Any] = {
            "model": request.model,
            MESSAGES: None,  # spliced in below, encoded once (providers.encoder)
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens);
        # compatible servers know max_tokens.
        limit_key = "max_completion_tokens" if "api.openai.com" in config.base_url else "max_tokens"
        body[limit_key] = request.max_tokens
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in request.tools
            ]
            if request.answer_only:
                body["tool_choice"] = "none"
        if request.reasoning:
            body["reasoning_effort"] = request.reasoning
        if request.cache_key and config.official:  # compatible servers may refuse the field
            body[CACHE_KEY] = request.cache_key[:CACHE_KEY_MAX]
        encoded = encoder_of(request, NAME, lambda: Encoder(_convert, _merge)).encode(
            request.messages, scrub
        )
        system = (
            [json.dumps({"role": "system", "content": request.system})] if request.system else []
        )
        return (
            f"{config.base_url}/chat/completions",
            headers,
            splice(body, encoded.json(system), scrub),
        )

    def parse_error(self, status: int, body: bytes) -> ProviderError:
        return http_error(NAME, status, body)

    def parser(self) -> OpenAiParser:
        return OpenAiParser()


def bearer_headers(config: ProviderConfig) -> dict[str, str]:
    """The headers of a streamed call to an OpenAI API: JSON in, SSE out, the key as Bearer."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if config.api_key:
        headers["authorization"] = f"Bearer {config.api_key}"
    headers.update(config.headers)
    return headers


def detail(usage: dict[str, Any], section: str, key: str) -> int:
    """A count of a usage object's details (`prompt_tokens_details.cached_tokens`, say); 0
    when the server leaves it out."""
    details = usage.get(section)
    return int(details.get(key) or 0) if isinstance(details, dict) else 0


def http_error(name: str, status: int, body: bytes) -> ProviderError:
    """The error of a non-200 answer from an OpenAI API (or a compatible server's)."""
    error_type, message, code = _error_fields(body)
    retryable = status in RETRYABLE_STATUSES and code != "insufficient_quota"
    return ProviderError(
        name,
        message or f"HTTP {status}",
        status=status,
        error_type=code or error_type,
        retryable=retryable,
    )


def stream_error(name: str, payload: dict[str, Any]) -> ProviderError:
    """The error an error object inside a 200 stream stands for (its message quoted)."""
    error_type, message, code = _error_fields(json.dumps(payload).encode())
    kind = code or error_type
    return ProviderError(
        name, message or "error in stream", error_type=kind, retryable=kind in TRANSIENT_TYPES
    )


def _error_fields(body: bytes) -> tuple[str | None, str, str | None]:
    """The type, message and code of an error body, in the shapes compatible servers answer:
    OpenAI's `{"error": {...}}` (also llama.cpp, llama-cpp-python, Ollama), a bare
    `{"error": "text"}` (LM Studio), vLLM's flat `{"object": "error", "message": ...}` and
    FastAPI's `{"detail": ...}` (a validation failure)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None, body.decode("utf-8", "replace")[:MAX_ERROR_CHARS].strip(), None
    if not isinstance(payload, dict):
        return None, json.dumps(payload)[:MAX_ERROR_CHARS], None
    error = payload.get("error", payload)
    if isinstance(error, str):
        return None, error, None
    if not isinstance(error, dict) or not ("message" in error or "detail" in error):
        return None, json.dumps(payload)[:MAX_ERROR_CHARS], None
    code = error.get("code")
    detail = error.get("detail")
    message = error.get("message") or (detail if isinstance(detail, str) else json.dumps(detail))
    error_type = error.get("type")
    return (
        error_type if isinstance(error_type, str) else None,
        str(message or ""),
        code if isinstance(code, str) else None,
    )


class OpenAiParser:
    """Chat Completions chunks → events. Tool calls are assembled by `index`."""

    def __init__(self) -> None:
        self.builder = MessageBuilder()
        self._finish: StopReason | None = None
        self._done = False
        self._usage = Usage()
        self._keys: dict[int, tuple[int, str]] = {}

    def feed(self, event: SseEvent) -> list[Event]:
        if event.data == "[DONE]":
            self._done = True
            return []
        try:
            chunk = json_data(event)
        except ValueError:
            raise ProviderError(NAME, f"malformed stream chunk: {event.data[:200]!r}") from None
        if not isinstance(chunk, dict):
            return []
        if "error" in chunk:
            raise stream_error(NAME, chunk)
        events: list[Event] = []
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                events.extend(self._choice(choice))
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                cache_read_tokens=detail(usage, "prompt_tokens_details", "cached_tokens"),
                thought_tokens=detail(usage, "completion_tokens_details", "reasoning_tokens"),
            )
            events.append(self._usage)
        return events

    def _choice(self, choice: dict[str, Any]) -> list[Event]:
        delta = choice.get("delta") or {}
        text = delta.get("content")
        if len(delta) == 1 and text and isinstance(text, str) and not choice.get("finish_reason"):
            return [self.builder.text(text)]  # nearly every chunk: one piece of the answer
        events: list[Event] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            events.append(self.builder.thinking(reasoning))
        for key in ("content", "refusal"):
            text = delta.get(key)
            if isinstance(text, str) and text:
                if key == "refusal":
                    self._finish = StopReason.REFUSAL
                events.append(self.builder.text(text))
        for call in delta.get("tool_calls") or ():
            events.extend(self._tool_fragment(call))
        reason = choice.get("finish_reason")
        if reason:
            if self._finish is not StopReason.REFUSAL:
                self._finish = STOP_REASONS.get(reason, StopReason.END_TURN)
            events.extend(self.builder.finish_tools())
        return events

    def _tool_fragment(self, call: dict[str, Any]) -> list[Event]:
        """Fragments are matched by `index`; a new `id` at a used index (some compatible
        servers reuse index 0) starts a new call."""
        index = call.get("index", 0)
        call_id = call.get("id")
        key = self._keys.get(index)
        events: list[Event] = []
        if key is None or (call_id and call_id != key[1]):
            # A server that sends no id gets a made-up one, unique in the session (ACP).
            key = (index, call_id or made_up_call_id())
            self._keys[index] = key
            function = call.get("function") or {}
            events.append(self.builder.tool_start(key, key[1], function.get("name") or ""))
        fragment = (call.get("function") or {}).get("arguments")
        if isinstance(fragment, str) and fragment:
            events.append(self.builder.tool_args(key, fragment))
        return events

    def end(self) -> list[Event]:
        if self._finish is None and not self._done:
            raise truncated(NAME, "[DONE] and without a finish reason")
        events: list[Event] = list(self.builder.finish_tools())
        stop = self._finish
        if stop is None:
            stop = StopReason.TOOL_USE if self.builder.message().tool_calls else StopReason.END_TURN
        events.append(Finished(stop, self.builder.message(stop), self._usage))
        return events
