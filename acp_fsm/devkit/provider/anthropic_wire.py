"""Anthropic's Messages API as the scripted provider streams it (`render_anthropic`,
`AnthropicWire`); `wire` says what a wire format is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from acp_fsm.devkit.provider.script import ErrorEvent, HttpError, Reply, pieces
from acp_fsm.devkit.provider.wire import new_id, sse

_ANTHROPIC_DEFAULT_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def render_anthropic(reply: Reply, model: str = "scripted") -> list[bytes]:
    """The SSE events of `reply` as Messages API events: `message_start`, then per block
    (thinking, text, each tool_use) `content_block_start` / deltas / `content_block_stop`, a
    `ping` after the first block start, `message_delta` (stop reason, cumulative usage) and
    `message_stop`."""
    usage = reply.usage
    start_usage: dict[str, Any] = (
        {}
        if usage is None
        else {
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": 1,
                "cache_creation_input_tokens": usage.cache_write_tokens,
                "cache_read_input_tokens": usage.cache_read_tokens,
            }
        }
    )
    message: dict[str, Any] = {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        **start_usage,
    }
    events = [sse({"type": "message_start", "message": message}, "message_start")]
    for index, (block, deltas) in enumerate(_anthropic_blocks(reply)):
        events.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": block},
                "content_block_start",
            )
        )
        if index == 0:
            events.append(sse({"type": "ping"}, "ping"))
        events += [
            sse(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
            for delta in deltas
        ]
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    final: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason.value, "stop_sequence": None},
    }
    if usage is not None:
        final["usage"] = {"output_tokens": usage.output_tokens}
    events.append(sse(final, "message_delta"))
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_blocks(reply: Reply) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    thinking = pieces(reply.thinking)
    if thinking or reply.signature:
        deltas = [{"type": "thinking_delta", "thinking": t} for t in thinking]
        if reply.signature:
            deltas.append({"type": "signature_delta", "signature": reply.signature})
        yield {"type": "thinking", "thinking": "", "signature": ""}, deltas
    text = pieces(reply.text)
    if text:
        yield {"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in text]
    for call in reply.calls:
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        yield block, [{"type": "input_json_delta", "partial_json": f} for f in call.fragments]


class AnthropicWire:
    """The Messages API."""

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        return render_anthropic(reply, str(body.get("model")))

    def error_body(self, error: HttpError) -> dict[str, Any]:
        error_type = error.error_type or _ANTHROPIC_DEFAULT_TYPES.get(error.status, "api_error")
        fields: dict[str, Any] = {"type": error_type, "message": error.message}
        if error.details is not None:
            fields["details"] = dict(error.details)
        return {"type": "error", "error": fields, "request_id": new_id("req_")}

    def error_event(self, fault: ErrorEvent) -> bytes:
        error = {"type": fault.error_type or "overloaded_error", "message": fault.message}
        return sse({"type": "error", "error": error}, "error")
