"""MessageBuilder: turns streamed deltas into events and into the final assistant message.

Both adapters feed it; it owns the rules that must not differ between providers: consecutive
deltas of one block form one part, tool-call arguments are concatenated and parsed once at the
end (malformed JSON becomes a `ToolCallPart.error`, never an exception), and a partial message
(after a cancel) keeps text and thinking but drops a tool call whose arguments were incomplete.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from acp_fsm.providers.types import (
    AssistantMessage,
    AssistantPart,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallPart,
    ToolCallStarted,
)

# A NamedTuple made with tuple.__new__ is the same value, without the Python function its
# class calls to make one: that call cost as much as the rest of a delta's assembly.
_new = tuple.__new__


@dataclass(slots=True)
class _Block:
    kind: str  # "text" | "thinking" | "tool"
    chunks: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted: str | None = None
    item: str | None = None
    origin: str | None = None
    tool_id: str = ""
    tool_name: str = ""
    done: ToolCallPart | None = None  # a finished tool call
    closed: bool = False


class MessageBuilder:
    """Accumulates one assistant message from stream deltas."""

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._tools: dict[Hashable, _Block] = {}

    def _open(self, kind: str) -> _Block:
        last = self._blocks[-1] if self._blocks else None
        if last is not None and last.kind == kind and not last.closed:
            return last
        block = _Block(kind)
        self._blocks.append(block)
        return block

    def text(self, delta: str) -> TextDelta:
        self._open("text").chunks.append(delta)
        return _new(TextDelta, (delta,))  # one per delta: see `_new`

    def thinking(self, delta: str) -> ThinkingDelta:
        self._open("thinking").chunks.append(delta)
        return _new(ThinkingDelta, (delta,))

    def signature(self, signature: str) -> None:
        """Set the signature of the current thinking block (Anthropic sends it whole)."""
        self._open("thinking").signature = signature

    def redacted_thinking(self, data: str) -> None:
        block = _Block("thinking", redacted=data, closed=True)
        self._blocks.append(block)

    def reasoning_item(self, item: str, origin: str) -> None:
        """The Responses API's reasoning item (JSON) ended, made by `origin`: it closes the
        thinking block its summary streamed into, or is one of its own (no summary)."""
        last = self._blocks[-1] if self._blocks else None
        if last is None or last.kind != "thinking" or last.closed:
            last = _Block("thinking")
            self._blocks.append(last)
        last.item, last.origin, last.closed = item, origin, True

    def close_block(self) -> None:
        """The current text/thinking block ended; the next delta starts a new part."""
        if self._blocks and self._blocks[-1].kind != "tool":
            self._blocks[-1].closed = True

    def tool_start(self, key: Hashable, call_id: str, name: str) -> ToolCallStarted:
        self.close_block()
        block = _Block("tool", tool_id=call_id, tool_name=name)
        self._blocks.append(block)
        self._tools[key] = block
        return ToolCallStarted(call_id, name)

    def has_tool(self, key: Hashable) -> bool:
        return key in self._tools

    def tool_args(self, key: Hashable, fragment: str) -> ToolCallArgsDelta:
        block = self._tools[key]
        block.chunks.append(fragment)
        return ToolCallArgsDelta(block.tool_id, fragment)

    def tool_finish(self, key: Hashable) -> ToolCallFinished | None:
        """Parse the tool call's arguments; None if it was already finished."""
        block = self._tools[key]
        if block.done is not None:
            return None
        raw = "".join(block.chunks)
        arguments: dict[str, Any] = {}
        error = None
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            error = f"the arguments are not valid JSON ({exc})"
        else:
            if isinstance(parsed, dict):
                arguments = parsed
            else:
                error = f"the arguments must be a JSON object, got {type(parsed).__name__}"
        block.done = ToolCallPart(block.tool_id, block.tool_name, arguments, raw, error)
        return ToolCallFinished(block.done)

    def finish_tools(self) -> list[ToolCallFinished]:
        """Finish every tool call still open (streams that end without per-call stops)."""
        return [e for key in list(self._tools) if (e := self.tool_finish(key)) is not None]

    def message(self, stop_reason: StopReason | None = None) -> AssistantMessage:
        """The message so far: text and thinking as streamed, finished tool calls only."""
        parts: list[AssistantPart] = []
        for block in self._blocks:
            if block.kind == "text":
                text = "".join(block.chunks)
                if text:
                    parts.append(TextPart(text))
            elif block.kind == "thinking":
                parts.append(
                    ThinkingPart(
                        "".join(block.chunks),
                        block.signature,
                        block.redacted,
                        block.item,
                        block.origin,
                    )
                )
            elif block.done is not None:
                parts.append(block.done)
        return AssistantMessage(tuple(parts), stop_reason)
