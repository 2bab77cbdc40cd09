"""The conversation as stored and as sent: (de)serialisation and structural repair.

Invariant (docs/cancellation.md, "Transcript repair"): every assistant message with tool calls
is followed by one `ToolResultsMessage` answering each call, in order, before anything else.
`repair` restores it with synthetic results wherever a cancel or a crash left a call
unanswered, so no provider ever sees an orphaned tool call (both reject that with HTTP 400).
"""

from __future__ import annotations

from typing import Any

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

# Wordings of synthetic results, distinct per cause: the model must tell a denial from an
# interruption.
NOT_STARTED = "Cancelled before it started: the user cancelled the turn; the tool did not run."
INTERRUPTED = (
    "Interrupted while running: the user cancelled the turn; the tool may have partially run."
)
LOST = (
    "No result: the agent stopped before this call finished (it may have partially run). "
    "Check the state before retrying."
)

CANCELLED = "cancelled"  # stop reason stored on an assistant message cut by a cancel


# ------------------------------------------------------------------ serialisation


def part_to_json(part: Any) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "image", "data": part.data, "mimeType": part.mime_type}
    if isinstance(part, ThinkingPart):
        body: dict[str, Any] = {"type": "thinking", "text": part.text}
        if part.signature is not None:
            body["signature"] = part.signature
        if part.redacted is not None:
            body["redacted"] = part.redacted
        if part.item is not None:
            body["item"] = part.item
        if part.origin is not None:
            body["origin"] = part.origin
        return body
    if isinstance(part, ToolCallPart):
        body = {
            "type": "tool_call",
            "id": part.id,
            "name": part.name,
            "arguments": part.arguments,
            "raw": part.raw_arguments,
        }
        if part.error is not None:
            body["error"] = part.error
        return body
    raise TypeError(f"not a message part: {part!r}")


def part_from_json(body: dict[str, Any]) -> Any:
    kind = body["type"]
    if kind == "text":
        return TextPart(body["text"])
    if kind == "image":
        return ImagePart(body["data"], body["mimeType"])
    if kind == "thinking":
        return ThinkingPart(
            body["text"],
            body.get("signature"),
            body.get("redacted"),
            body.get("item"),
            body.get("origin"),
        )
    if kind == "tool_call":
        return ToolCallPart(
            body["id"],
            body["name"],
            body.get("arguments") or {},
            body.get("raw", ""),
            body.get("error"),
        )
    raise ValueError(f"unknown part type {kind!r}")


def assistant_body(
    message: AssistantMessage,
    stop_reason: str | None,
    views: dict[str, dict[str, Any]],
    message_ids: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The stored form of an assistant message, with the editor view of each tool call and
    the ids its text and its thought were shown with (`updates.message_id`), if it was."""
    parts = [part_to_json(p) for p in message.parts]
    body: dict[str, Any] = {"parts": parts, "stopReason": stop_reason, "views": views}
    shown = {kind: id_ for kind, id_ in (message_ids or {}).items() if _has(parts, kind)}
    if shown:
        body["messageIds"] = shown
    return body


def _has(parts: list[dict[str, Any]], kind: str) -> bool:
    return any(part["type"] == kind for part in parts)


_STOP_REASONS = {reason.value: reason for reason in StopReason}


def assistant_from_body(body: dict[str, Any]) -> AssistantMessage:
    stop = body.get("stopReason")
    return AssistantMessage(
        tuple([part_from_json(p) for p in body["parts"]]),
        _STOP_REASONS.get(stop) if isinstance(stop, str) else None,
    )


def result_body(result: ToolResultPart, view: dict[str, Any]) -> dict[str, Any]:
    """The stored form of one tool result, with the call's final editor view."""
    return {
        "callId": result.call_id,
        "content": result.content,
        "isError": result.is_error,
        "view": view,
    }


def result_from_body(body: dict[str, Any]) -> ToolResultPart:
    return ToolResultPart(body["callId"], body["content"], bool(body.get("isError")))


def message_to_json(message: Message) -> dict[str, Any]:
    """Any message, stored whole (a compaction keeps the latest ones this way)."""
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": [part_to_json(p) for p in message.parts]}
    if isinstance(message, AssistantMessage):
        stop = message.stop_reason.value if message.stop_reason is not None else None
        return {"role": "assistant", **assistant_body(message, stop, {})}
    return {"role": "results", "results": [result_body(r, {}) for r in message.results]}


def message_from_json(body: dict[str, Any]) -> Message:
    role = body["role"]
    if role == "user":
        return user_from_body(body)
    if role == "assistant":
        return assistant_from_body(body)
    if role == "results":
        return ToolResultsMessage(tuple(result_from_body(r) for r in body["results"]))
    raise ValueError(f"unknown message role {role!r}")


# ------------------------------------------------------------------------ repair


def needs_repair(messages: list[Message]) -> bool:
    """Whether some tool call in `messages` lacks its result (see `repair`): a scan, with no
    copy made (every load asks)."""
    waiting: set[str] = set()
    for message in messages:
        if isinstance(message, ToolResultsMessage):
            waiting.difference_update(r.call_id for r in message.results)
            continue
        if waiting:
            return True
        if isinstance(message, AssistantMessage):
            waiting = {call.id for call in message.tool_calls}
    return bool(waiting)


def repair(
    messages: list[Message], *, wording: str = LOST
) -> tuple[list[Message], list[ToolResultPart]]:
    """A structurally valid copy of `messages`, and the synthetic results it had to add.

    Results are matched to calls by id: missing ones are added (`wording`), duplicates and
    results for unknown calls are dropped, order follows the calls. A results message with
    no preceding assistant message is dropped.
    """
    fixed: list[Message] = []
    added: list[ToolResultPart] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, ToolResultsMessage):
            continue  # orphaned: its calls were handled with the assistant message before it
        fixed.append(message)
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        given: dict[str, ToolResultPart] = {}
        while i < len(messages) and isinstance(messages[i], ToolResultsMessage):
            results = messages[i]
            assert isinstance(results, ToolResultsMessage)
            for result in results.results:
                given.setdefault(result.call_id, result)
            i += 1
        answered = []
        for call in message.tool_calls:
            found = given.get(call.id)
            if found is None:
                found = ToolResultPart(call.id, wording, is_error=True)
                added.append(found)
            answered.append(found)
        fixed.append(ToolResultsMessage(tuple(answered)))
    return fixed, added


def group_results(messages: list[Message]) -> list[Message]:
    """Merge consecutive results messages (results are stored one at a time)."""
    grouped: list[Message] = []
    for message in messages:
        previous = grouped[-1] if grouped else None
        if isinstance(message, ToolResultsMessage) and isinstance(previous, ToolResultsMessage):
            grouped[-1] = ToolResultsMessage(previous.results + message.results)
        else:
            grouped.append(message)
    return grouped


def user_from_body(body: dict[str, Any]) -> UserMessage:
    return UserMessage(tuple(part_from_json(p) for p in body["parts"]))
