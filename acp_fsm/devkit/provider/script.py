"""The script of a scripted provider: what each model call is answered with, and the records
of what the server saw. Nothing here knows a wire format: `Reply` describes a model turn
neutrally, and `acp_fsm.devkit.provider.wire` renders it per API."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from multidict import CIMultiDictProxy

from acp_fsm.providers.types import StopReason, Usage
from acp_fsm.providers.written_form import WRITE

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
DEFAULT_USAGE = Usage(input_tokens=12, output_tokens=7)
# Served by `GET /v1/models` unless the server is given its own list (newest first).
DEFAULT_MODELS = ("gpt-5", "gpt-5-mini", "claude-sonnet-4-5", "claude-haiku-4-5")


@dataclass(frozen=True)
class Call:
    """One tool call of a `Reply`. `arguments` is the JSON text the model streams (it may be
    malformed on purpose); a sequence gives the exact fragments, a string is one fragment.
    `custom`: a call of a free-form (`custom`) tool of the Responses API, `arguments` its
    plain-text input (other routes stream it as a function call's arguments)."""

    id: str
    name: str
    arguments: str | Sequence[str] = "{}"
    custom: bool = False

    @property
    def fragments(self) -> tuple[str, ...]:
        return pieces(self.arguments)


@dataclass(frozen=True)
class Drop:
    """Close the TCP connection abruptly after `after` events (an incomplete chunked body)."""

    after: int


@dataclass(frozen=True)
class Hang:
    """Stream `after` events, then send nothing more until the client disconnects."""

    after: int


@dataclass(frozen=True)
class Truncate:
    """End the body cleanly after `after` events (no finish reason, no `[DONE]`)."""

    after: int


@dataclass(frozen=True)
class ErrorEvent:
    """After `after` events, an error inside the 200 stream (OpenAI `{"error": …}` chunk,
    Anthropic `event: error`), then the end of the body. `error_type` defaults per format:
    OpenAI `server_error`, Anthropic `overloaded_error`."""

    after: int = 0
    error_type: str | None = None
    message: str = "Overloaded"


Fault = Drop | Hang | Truncate | ErrorEvent


@dataclass(frozen=True)
class Reply:
    """One model turn, rendered per route. `text` / `thinking`: a string is one delta, a
    sequence the exact deltas. `stop` defaults to tool_use when there are calls, else end_turn.
    `usage=None` streams no usage. `delay_s` is slept before every event but the first,
    `headers_delay_s` before the response headers. `omit_done` drops OpenAI's `[DONE]`.
    `fault` breaks the stream after some events (`Drop`, `Hang`, `Truncate`, `ErrorEvent`).
    On the Responses API, a reply not `encrypted` has its reasoning item come without
    `encrypted_content` although the request included it (as a compatible server's, or a
    proxy's that drops it): with `store: false` nothing can send that item back.
    `written` (a key of `providers.written_form.WRITE`) answers as an open model on a server
    that does not parse its calls: the calls are written after the text in that syntax,
    none comes native."""

    text: str | Sequence[str] = ""
    thinking: str | Sequence[str] = ""
    signature: str | None = None
    encrypted: bool = True
    calls: tuple[Call, ...] = ()
    stop: StopReason | None = None
    usage: Usage | None = DEFAULT_USAGE
    delay_s: float = 0.0
    headers_delay_s: float = 0.0
    omit_done: bool = False
    fault: Fault | None = None
    written: str | None = None

    @property
    def stop_reason(self) -> StopReason:
        if self.stop is not None:
            return self.stop
        return StopReason.TOOL_USE if self.calls else StopReason.END_TURN

    def as_sent(self) -> Reply:
        """The reply as its server streams it: with `written`, its calls in its text."""
        if self.written is None:
            return self
        write = WRITE[self.written]
        calls = [write(call.name, "".join(call.fragments)) for call in self.calls]
        text = "\n".join(t for t in ("".join(pieces(self.text)), *calls) if t)
        return replace(self, text=text, calls=(), written=None)


@dataclass(frozen=True)
class HttpError:
    """A non-200 answer in the route's error shape (`body` replaces it with exact bytes).
    `error_type` defaults per status and format; `code` and `param` are OpenAI's `error.code`
    and `error.param`, `details` Anthropic's `error.details` (e.g.
    `{"error_code": "enforced_spend_limit_reached"}`)."""

    status: int
    message: str = "scripted failure"
    error_type: str | None = None
    code: str | None = None
    details: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None
    param: str | None = None


@dataclass(frozen=True)
class Raw:
    """Exact bytes for parser edge cases: each `bytes` item is written as is (one HTTP chunk),
    each `float` item is a pause in seconds between writes."""

    parts: tuple[bytes | float, ...]
    status: int = 200
    content_type: str = SSE_CONTENT_TYPE


Scripted = Reply | HttpError | Raw


@dataclass(frozen=True)
class RecordedRequest:
    """A request as received: headers are case-insensitive; `body` is the parsed JSON (None when
    it was not JSON) and `raw` the bytes."""

    path: str
    headers: CIMultiDictProxy[str]
    body: Any
    raw: bytes
    time: float


@dataclass(frozen=True)
class Served:
    """A script entry taken to answer a request on `path` (rejected requests take none)."""

    path: str
    reply: Scripted
    time: float


@dataclass(frozen=True)
class Disconnect:
    """The client went away before the response was complete, after `events_sent` events."""

    path: str
    time: float
    events_sent: int


Responder = Callable[[RecordedRequest], Scripted]
"""A script entry computed from the request it answers (for demos and end-to-end tests)."""


def pieces(value: str | Sequence[str]) -> tuple[str, ...]:
    """A string as one delta (none when empty), a sequence as its exact deltas."""
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(value)
