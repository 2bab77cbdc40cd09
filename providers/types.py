"""Provider-neutral conversation and stream events.

The turn engine keeps the transcript in these types and consumes these events; each provider
adapter converts the transcript to its wire format in one place and its stream back into events.
They are immutable NamedTuples: a session's first `session/new` imports this module, and on a
small machine creating these ~20 classes as dataclasses costs ~20 ms of the startup budget
(namedtuples ~2 ms). Compare them with `isinstance`, not by tuple equality across kinds.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple


class StopReason(StrEnum):
    """Why the model stopped, normalized across providers."""

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"


# ------------------------------------------------------------------ transcript parts


class TextPart(NamedTuple):
    text: str


class ImagePart(NamedTuple):
    """An image from the user (base64 data)."""

    data: str
    mime_type: str


class ThinkingPart(NamedTuple):
    """Model reasoning. Anthropic requires it echoed back unmodified: `signature` for a thinking
    block, `redacted` (opaque data) for a redacted_thinking block; `item` is the OpenAI
    Responses API's reasoning item as received (its JSON, with `encrypted_content`), sent back
    in place so the model goes on with its reasoning; `origin` the server and model that made
    it (only they can read it back)."""

    text: str
    signature: str | None = None
    redacted: str | None = None
    item: str | None = None
    origin: str | None = None


class ToolCallPart(NamedTuple):
    """A complete tool call. `error` is set when the model's arguments were not a JSON object;
    `arguments` is then empty and `raw_arguments` keeps what the model sent."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    error: str | None = None


class ToolResultPart(NamedTuple):
    """The result of one tool call, fed back to the model (never empty on the wire)."""

    call_id: str
    content: str
    is_error: bool = False


UserPart = TextPart | ImagePart
AssistantPart = TextPart | ThinkingPart | ToolCallPart


class UserMessage(NamedTuple):
    parts: tuple[UserPart, ...]


class AssistantMessage(NamedTuple):
    parts: tuple[AssistantPart, ...]
    stop_reason: StopReason | None = None

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


class ToolResultsMessage(NamedTuple):
    """The results of the previous assistant message's tool calls, one per call, in order."""

    results: tuple[ToolResultPart, ...]


Message = UserMessage | AssistantMessage | ToolResultsMessage


class ToolSpec(NamedTuple):
    """A tool the model may call: name, description and a JSON Schema for its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


class ModelRequest(NamedTuple):
    """One model call. `reasoning` ("low", "medium" or "high") asks for extended thinking
    (Anthropic) or sets the reasoning effort (OpenAI); `answer_only` declares the tools (the
    transcript has calls of them) but lets the model call none."""

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 8192
    reasoning: str | None = None
    answer_only: bool = False
    # What the wire formats keep of this conversation's earlier requests, to encode only
    # what is new (`providers.encoder`; one per session); None: everything is encoded.
    memo: dict[str, Any] | None = None
    # Routes the calls of one conversation to the provider's cache of its prefix (OpenAI's
    # `prompt_cache_key`): the session's id; None: no key is sent.
    cache_key: str | None = None
    # The call syntax of a model that writes its calls as text (`providers.written_form`):
    # its tools go in the system prompt, its calls and results as text; None: the API's own.
    calls_written: str | None = None


# ------------------------------------------------------------------------ events


class TextDelta(NamedTuple):
    text: str


class ThinkingDelta(NamedTuple):
    text: str


class ToolCallStarted(NamedTuple):
    id: str
    name: str


class ToolCallArgsDelta(NamedTuple):
    id: str
    fragment: str


class ToolCallFinished(NamedTuple):
    call: ToolCallPart


class Usage(NamedTuple):
    """Token counts so far for this model call (cumulative, not increments). `input_tokens`
    counts every prompt token, cached ones included, for every provider; `output_tokens`
    every token the model wrote, its reasoning included, of which `thought_tokens` are the
    reasoning ones where the provider tells (OpenAI's `reasoning_tokens`)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    thought_tokens: int = 0

    def plus(self, other: Usage) -> Usage:
        """The counts of both (of two model calls, say)."""
        return Usage(*(a + b for a, b in zip(self, other, strict=True)))


class Finished(NamedTuple):
    """The stream ended normally; `message` is the whole assistant message."""

    stop_reason: StopReason
    message: AssistantMessage
    usage: Usage = Usage()


Event = (
    TextDelta
    | ThinkingDelta
    | ToolCallStarted
    | ToolCallArgsDelta
    | ToolCallFinished
    | Usage
    | Finished
)
