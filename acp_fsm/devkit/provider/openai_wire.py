"""OpenAI's wire formats, as the scripted provider streams them: Chat Completions
(`render_openai`, `OpenAiWire`) and the Responses API (`render_responses`, `ResponsesWire`,
its reasoning sealed for the model that made it); `wire` says what a wire format is."""

from __future__ import annotations

import time
from itertools import count
from typing import Any

from acp_fsm.devkit.provider.script import ErrorEvent, HttpError, Reply, pieces
from acp_fsm.devkit.provider.wire import new_id, sse
from acp_fsm.providers.types import StopReason, Usage

_OPENAI_FINISH = {
    StopReason.END_TURN: "stop",
    StopReason.TOOL_USE: "tool_calls",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
}
_OPENAI_DEFAULT_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_denied",
    404: "invalid_request_error",
    429: "requests",
}


def render_openai(reply: Reply, model: str = "scripted", include_usage: bool = True) -> list[bytes]:
    """The SSE events of `reply` as Chat Completions chunks: a role chunk, reasoning, content,
    tool-call fragments (id and name on the first fragment of each index only), the finish
    chunk, the `choices: []` usage chunk (only with include_usage), then `[DONE]`."""
    base = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_scripted",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        payload: dict[str, Any] = {**base, "choices": [choice]}
        if include_usage:
            payload["usage"] = None
        return sse(payload)

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"reasoning_content": piece}) for piece in pieces(reply.thinking)]
    events += [chunk({"content": piece}) for piece in pieces(reply.text)]
    for index, call in enumerate(reply.calls):
        first = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in call.fragments
        ]
    events.append(chunk({}, _OPENAI_FINISH[reply.stop_reason]))
    if include_usage and reply.usage is not None:
        events.append(sse({**base, "choices": [], "usage": _openai_usage(reply.usage)}))
    if not reply.omit_done:
        events.append(sse("[DONE]"))
    return events


def _openai_usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": usage.thought_tokens, "audio_tokens": 0},
    }


class OpenAiWire:
    """Chat Completions: `render` follows the request's `stream_options.include_usage`."""

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        return render_openai(reply, str(body.get("model")), include)

    def error_body(self, error: HttpError) -> dict[str, Any]:
        error_type = error.error_type or _OPENAI_DEFAULT_TYPES.get(error.status, "server_error")
        return {
            "error": {
                "message": error.message,
                "type": error_type,
                "param": error.param,
                "code": error.code,
            }
        }

    def error_event(self, fault: ErrorEvent) -> bytes:
        error = HttpError(200, fault.message, fault.error_type or "server_error")
        return sse(self.error_body(error))


# ---------------------------------------------------------------------------- Responses


ENCRYPTED_REASONING = "reasoning.encrypted_content"  # what a request `include`s to get it
SEALED = "gAAAA|"  # how the scripted encrypted content begins


def sealed(reasoning_id: str, model: str) -> str:
    """The scripted encrypted content of a reasoning item: readable by `model` only, as the
    real API's (`unsealed`)."""
    return f"{SEALED}{reasoning_id}|{model}"


def unsealed(content: str) -> str | None:
    """The model a scripted encrypted content was made by (None: not one of ours)."""
    return content.rsplit("|", 1)[1] if content.startswith(SEALED) else None


def render_responses(
    reply: Reply,
    model: str = "scripted",
    reasoning_of: dict[str, tuple[str, str]] | None = None,
    encrypted: bool = True,
    reasons: bool = False,
) -> list[bytes]:
    """The SSE events of `reply` as the Responses API streams them: `response.created`, then
    per output item (a reasoning item with its summary, and its `encrypted_content` when
    `encrypted`, the request's `include` asked for it, unless the reply is not `encrypted`; a
    message; each function call, or custom tool call)
    `response.output_item.added`, its part opened, its deltas, its part closed with the whole
    text (the arguments), and `response.output_item.done`, then
    `response.completed` (or `response.incomplete` at max_tokens) with the usage.
    `reasoning_of` learns which reasoning item (of which model) each function call came with
    (what the rules check comes back), when that item can come back (its encrypted content).
    A reply without thinking has no reasoning item, unless `reasons` (a reasoning model's,
    its summary empty)."""
    response: dict[str, Any] = {
        "id": new_id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
        "usage": None,
    }
    seq = count()

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

    events = [event("response.created", response=response)]
    output: list[dict[str, Any]] = []

    def item(index: int, done: dict[str, Any], added: dict[str, Any], deltas: list[bytes]) -> None:
        events.append(event("response.output_item.added", output_index=index, item=added))
        events.extend(deltas)
        events.append(event("response.output_item.done", output_index=index, item=done))
        output.append(done)

    def part(
        kind: str, where: dict[str, Any], body: dict[str, Any], deltas: list[bytes]
    ) -> list[bytes]:
        """A part's events (`kind`: "content" or "reasoning_summary"): added, its deltas,
        its whole text, done."""
        text = "response.output_text.done" if kind == "content" else f"response.{kind}_text.done"
        return [
            event(f"response.{kind}_part.added", **where, part={**body, "text": ""}),
            *deltas,
            event(text, **where, text=body["text"]),
            event(f"response.{kind}_part.done", **where, part=body),
        ]

    thinking = pieces(reply.thinking)
    reasoning_id = new_id("rs_") if thinking or reply.signature or reasons else None
    sealed_reasoning = encrypted and reply.encrypted  # else no one can send it back
    if reasoning_id is not None:
        summary = "".join(thinking)
        where = {"item_id": reasoning_id, "output_index": 0, "summary_index": 0}
        deltas = [
            event("response.reasoning_summary_text.delta", **where, delta=piece)
            for piece in thinking
        ]
        if summary:
            summary_part = {"type": "summary_text", "text": summary}
            deltas = part("reasoning_summary", where, summary_part, deltas)
        done: dict[str, Any] = {
            "id": reasoning_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": summary}] if summary else [],
            "encrypted_content": (reply.signature or sealed(reasoning_id, model))
            if sealed_reasoning
            else None,
        }
        item(len(output), done, {**done, "summary": [], "encrypted_content": None}, deltas)
    text = pieces(reply.text)
    if text:
        message_id = new_id("msg_")
        index = len(output)
        where = {"item_id": message_id, "output_index": index, "content_index": 0}
        content = {"type": "output_text", "text": "".join(text), "annotations": []}
        deltas = part(
            "content",
            where,
            content,
            [event("response.output_text.delta", **where, delta=piece) for piece in text],
        )
        done = {
            "id": message_id,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [content],
        }
        item(index, done, {**done, "status": "in_progress", "content": []}, deltas)
    for call in reply.calls:
        index = len(output)
        arguments = "".join(call.fragments)
        # a function call streams its JSON arguments; a custom tool's call, its free text
        kind, field, stream = (
            ("custom_tool_call", "input", "custom_tool_call_input")
            if call.custom
            else ("function_call", "arguments", "function_call_arguments")
        )
        call_item = new_id("ctc_" if call.custom else "fc_")
        where = {"item_id": call_item, "output_index": index}
        deltas = [
            *(event(f"response.{stream}.delta", **where, delta=piece) for piece in call.fragments),
            event(f"response.{stream}.done", **where, **{field: arguments}),
        ]
        done = {
            "id": call_item,
            "type": kind,
            "status": "completed",
            "call_id": call.id,
            "name": call.name,
            field: arguments,
        }
        item(index, done, {**done, "status": "in_progress", field: ""}, deltas)
        if reasoning_of is not None and reasoning_id is not None and sealed_reasoning:
            reasoning_of[call.id] = (reasoning_id, model)
    incomplete = reply.stop_reason is StopReason.MAX_TOKENS
    final = {
        **response,
        "status": "incomplete" if incomplete else "completed",
        "output": output,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "usage": None if reply.usage is None else _responses_usage(reply.usage),
    }
    events.append(
        event("response.incomplete" if incomplete else "response.completed", response=final)
    )
    return events


def _responses_usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.thought_tokens},
        "total_tokens": prompt + usage.output_tokens,
    }


class ResponsesWire:
    """The Responses API; `reasoning_of` (shared with its rules) maps each function call's
    `call_id` to the reasoning item it came with and the model; with `reasons` every reply
    has one."""

    def __init__(self, reasons: bool = False) -> None:
        self.reasoning_of: dict[str, tuple[str, str]] = {}
        self.reasons = reasons

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        encrypted = ENCRYPTED_REASONING in (body.get("include") or ())
        model = str(body.get("model"))
        return render_responses(reply, model, self.reasoning_of, encrypted, self.reasons)

    def error_body(self, error: HttpError) -> dict[str, Any]:
        return OpenAiWire().error_body(error)

    def error_event(self, fault: ErrorEvent) -> bytes:
        error = {
            "type": "error",
            "code": fault.error_type or "server_error",
            "message": fault.message,
            "param": None,
        }
        return sse(error, "error")
