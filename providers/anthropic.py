"""Anthropic Messages API, streaming."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from acp_fsm.providers.assemble import MessageBuilder
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.encoder import (
    MESSAGES,
    Encoded,
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
    ThinkingPart,
    ToolResultsMessage,
    Usage,
    UserMessage,
)

NAME = "anthropic"
API_VERSION = "2023-06-01"
STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "stop_sequence": StopReason.END_TURN,
    "pause_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "refusal": StopReason.REFUSAL,
}
TRANSIENT_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
NOT_RETRYABLE_MARKERS = ("enforced_spend_limit_reached",)
EMPTY_RESULT = "(no output)"
CACHED = {"type": "ephemeral"}  # a prompt-cache breakpoint
# Extended thinking: budget_tokens per reasoning level, on top of the answer's max_tokens.
THINKING_BUDGETS = {"low": 4096, "medium": 12288, "high": 20480}


def convert_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The neutral transcript as Messages API turns. Tool results open the next user turn (one
    `tool_result` per `tool_use`, non-empty), and consecutive user content is merged into it."""
    return encode_all(messages, _convert, _merge)


def _convert(message: Message) -> list[dict[str, Any]]:
    """One neutral message as a Messages API turn (see `convert_messages`)."""
    if isinstance(message, AssistantMessage):
        content = _assistant_blocks(message)
        return [{"role": "assistant", "content": content}] if content else []
    if isinstance(message, ToolResultsMessage):
        blocks = [
            {
                "type": "tool_result",
                "tool_use_id": r.call_id,
                "content": r.content or EMPTY_RESULT,
                "is_error": r.is_error,
            }
            for r in message.results
        ]
    else:
        blocks = _user_blocks(message)
    return [{"role": "user", "content": blocks}]


def _merge(last: dict[str, Any], turn: dict[str, Any]) -> bool:
    if last["role"] != "user" or turn["role"] != "user":
        return False
    last["content"].extend(turn["content"])
    return True


def _user_blocks(message: UserMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if part.text.strip():  # the API refuses text blocks with no visible text
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            blocks.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": part.mime_type, "data": part.data},
                }
            )
    return blocks or [{"type": "text", "text": "(empty message)"}]


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ThinkingPart):
            # Sent back unmodified; an unsigned block (cut by a cancel) cannot be sent at all.
            if part.redacted is not None:
                blocks.append({"type": "redacted_thinking", "data": part.redacted})
            elif part.signature:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, TextPart):
            if part.text.strip():  # e.g. a cancel after a first "\n\n" delta
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(
                {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
            )
    return blocks


class AnthropicWire:
    name = NAME

    def build(
        self, request: ModelRequest, config: ProviderConfig, scrub: Scrub | None = None
    ) -> tuple[str, dict[str, str], bytes]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        if config.api_key:
            headers["x-api-key"] = config.api_key
        headers.update(config.headers)
        encoded = encoder_of(request, NAME, lambda: Encoder(_convert, _merge)).encode(
            request.messages, scrub
        )
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "stream": True,
            MESSAGES: None,  # spliced in below, encoded once (providers.encoder)
        }
        # Prompt caching: breakpoints after the system prompt, the tools and the conversation
        # so far, so a repeated turn bills what it repeats as cached input (3 of the 4 allowed).
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": CACHED}]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
            body["tools"][-1]["cache_control"] = CACHED
            if request.answer_only:
                body["tool_choice"] = {"type": "none"}
        last = encoded.reopened()
        if last is not None and last["content"]:
            last["content"][-1]["cache_control"] = CACHED
        budget = THINKING_BUDGETS.get(request.reasoning or "")
        if budget and not _unthought_tool_loop(encoded):
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] = request.max_tokens + budget
        return f"{config.base_url}/v1/messages", headers, splice(body, encoded.json(), scrub)

    def parse_error(self, status: int, body: bytes) -> ProviderError:
        error_type, message = _error_fields(body)
        # The spend-limit marker may sit in the type, the message or error.details.error_code:
        # look for it anywhere in the body.
        text = body.decode("utf-8", "replace")
        retryable = status in RETRYABLE_STATUSES and not any(
            marker in text for marker in NOT_RETRYABLE_MARKERS
        )
        return ProviderError(
            NAME,
            message or f"HTTP {status}",
            status=status,
            error_type=error_type,
            retryable=retryable,
        )

    def parser(self) -> AnthropicParser:
        return AnthropicParser()


def _unthought_tool_loop(encoded: Encoded) -> bool:
    """Whether the request goes on with a tool loop whose assistant message has no thinking
    (thinking was off when it was made): the API then refuses thinking, so it stays off until
    the loop ends."""
    last = encoded.open
    if last is None or not encoded.last or last["content"][0]["type"] != "tool_result":
        return False
    return encoded.last[-1].first not in ("thinking", "redacted_thinking")


def _error_fields(body: bytes) -> tuple[str | None, str]:
    try:
        payload = json.loads(body)
    except ValueError:
        return None, body.decode("utf-8", "replace")[:500].strip()
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return None, json.dumps(payload)[:500]
    return error.get("type"), str(error.get("message") or "")


class AnthropicParser:
    """Messages stream events → neutral events. Blocks are keyed by their `index`."""

    def __init__(self) -> None:
        self.builder = MessageBuilder()
        self._stop: StopReason | None = None
        self._done = False
        self._tool_blocks: set[int] = set()
        self._usage = Usage()
        self._counts = dict.fromkeys(
            (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ),
            0,
        )

    def feed(self, event: SseEvent) -> list[Event]:
        try:
            data = json_data(event)
        except ValueError:
            raise ProviderError(NAME, f"malformed stream event: {event.data[:200]!r}") from None
        if not isinstance(data, dict):
            return []
        handler = _EVENTS.get(str(data.get("type") or event.event))
        return handler(self, data) if handler is not None else []  # unknown events are ignored

    def _on_message_start(self, data: dict[str, Any]) -> list[Event]:
        usage = (data.get("message") or {}).get("usage") or {}
        return [self._update_usage(usage)]

    def _on_content_block_start(self, data: dict[str, Any]) -> list[Event]:
        index = data.get("index", 0)
        block = data.get("content_block") or {}
        kind = block.get("type")
        self.builder.close_block()
        if kind == "tool_use":
            self._tool_blocks.add(index)
            return [self.builder.tool_start(index, block.get("id", ""), block.get("name", ""))]
        if kind == "redacted_thinking":
            self.builder.redacted_thinking(block.get("data", ""))
        elif kind == "text" and block.get("text"):
            return [self.builder.text(block["text"])]
        elif kind == "thinking" and block.get("thinking"):
            return [self.builder.thinking(block["thinking"])]
        return []

    def _on_content_block_delta(self, data: dict[str, Any]) -> list[Event]:
        delta = data.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta":
            return [self.builder.text(delta.get("text", ""))]
        if kind == "thinking_delta":
            return [self.builder.thinking(delta.get("thinking", ""))]
        if kind == "signature_delta":
            self.builder.signature(delta.get("signature", ""))
        elif kind == "input_json_delta" and data.get("index", 0) in self._tool_blocks:
            return [self.builder.tool_args(data.get("index", 0), delta.get("partial_json", ""))]
        return []

    def _on_content_block_stop(self, data: dict[str, Any]) -> list[Event]:
        index = data.get("index", 0)
        if index in self._tool_blocks:
            finished = self.builder.tool_finish(index)
            return [finished] if finished is not None else []
        self.builder.close_block()
        return []

    def _on_message_delta(self, data: dict[str, Any]) -> list[Event]:
        reason = (data.get("delta") or {}).get("stop_reason")
        if reason:
            self._stop = STOP_REASONS.get(reason, StopReason.END_TURN)
        usage = data.get("usage")
        return [self._update_usage(usage)] if isinstance(usage, dict) else []

    def _on_message_stop(self, data: dict[str, Any]) -> list[Event]:
        self._done = True
        return []

    def _on_error(self, data: dict[str, Any]) -> list[Event]:
        error = data.get("error") or {}
        error_type = error.get("type")
        raise ProviderError(
            NAME,
            str(error.get("message") or "error in stream"),
            error_type=error_type,
            retryable=error_type in TRANSIENT_TYPES,
        )

    def _update_usage(self, usage: dict[str, Any]) -> Usage:
        """Anthropic's counts are cumulative and a field absent from an update keeps its value.
        Its `input_tokens` excludes cached tokens; `Usage.input_tokens` counts all of them."""
        for key in self._counts:
            value = usage.get(key)
            if isinstance(value, int):
                self._counts[key] = value
        counts = self._counts
        read, write = counts["cache_read_input_tokens"], counts["cache_creation_input_tokens"]
        self._usage = Usage(
            input_tokens=counts["input_tokens"] + read + write,
            output_tokens=counts["output_tokens"],
            cache_read_tokens=read,
            cache_write_tokens=write,
        )
        return self._usage

    def end(self) -> list[Event]:
        if not self._done:
            raise truncated(NAME, "message_stop")
        stop = self._stop or (
            StopReason.TOOL_USE if self.builder.message().tool_calls else StopReason.END_TURN
        )
        events: list[Event] = list(self.builder.finish_tools())
        events.append(Finished(stop, self.builder.message(stop), self._usage))
        return events


# The stream's event types and what the parser does with each (any other is ignored).
_EVENTS: dict[str, Callable[[AnthropicParser, dict[str, Any]], list[Event]]] = {
    "message_start": AnthropicParser._on_message_start,
    "content_block_start": AnthropicParser._on_content_block_start,
    "content_block_delta": AnthropicParser._on_content_block_delta,
    "content_block_stop": AnthropicParser._on_content_block_stop,
    "message_delta": AnthropicParser._on_message_delta,
    "message_stop": AnthropicParser._on_message_stop,
    "error": AnthropicParser._on_error,
}
