"""Provider-neutral conversation and stream events.

The turn engine keeps the transcript in these types and consumes these events; each provider
adapter converts the transcript to its wire format in one place and its stream back into events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class StopReason(StrEnum):
    """Why the model stopped, normalized across providers."""

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"


# ------------------------------------------------------------------ transcript parts


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image from the user (base64 data)."""

    data: str
    mime_type: str


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """Model reasoning. Anthropic requires it echoed back unmodified: `signature` for a thinking
    block, `redacted` (opaque data) for a redacted_thinking block."""

    text: str
    signature: str | None = None
    redacted: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A complete tool call. `error` is set when the model's arguments were not a JSON object;
    `arguments` is then empty and `raw_arguments` keeps what the model sent."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The result of one tool call, fed back to the model (never empty on the wire)."""

    call_id: str
    content: str
    is_error: bool = False


UserPart = TextPart | ImagePart
AssistantPart = TextPart | ThinkingPart | ToolCallPart


@dataclass(frozen=True, slots=True)
class UserMessage:
    parts: tuple[UserPart, ...]


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    parts: tuple[AssistantPart, ...]
    stop_reason: StopReason | None = None

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


@dataclass(frozen=True, slots=True)
class ToolResultsMessage:
    """The results of the previous assistant message's tool calls, one per call, in order."""

    results: tuple[ToolResultPart, ...]


Message = UserMessage | AssistantMessage | ToolResultsMessage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: name, description and a JSON Schema for its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 8192


# ------------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    id: str
    fragment: str


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    call: ToolCallPart


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts so far for this model call (cumulative, not increments). `input_tokens`
    counts every prompt token, cached ones included, for every provider."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Finished:
    """The stream ended normally; `message` is the whole assistant message."""

    stop_reason: StopReason
    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)


Event = (
    TextDelta | ThinkingDelta | ToolCallStarted | ToolCallArgsDelta | ToolCallFinished | Usage
    | Finished
)
