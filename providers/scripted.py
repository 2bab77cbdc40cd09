"""A scripted LLM provider: a real aiohttp server that speaks both streaming wire formats.

`ScriptedProvider` serves `POST /v1/chat/completions` (OpenAI Chat Completions) and
`POST /v1/messages` (Anthropic Messages) from one FIFO script of replies. Each reply describes a
model turn neutrally (`Reply`) or an HTTP failure (`HttpError`) or exact bytes (`Raw`), and is
rendered in the wire format of the route it is served on, byte for byte as the real APIs stream
it. Before taking a reply the server checks the request the way the real APIs do (shape, the
tool-call pairing rules, the API key when one is configured) and answers a violation with the
API's own 4xx error body, so a client that would be rejected in production is rejected here.

Everything is recorded: `requests` (path, headers, parsed body, arrival time), `served` (which
reply answered which request) and `disconnects` (a client that went away mid-response, seen at
once thanks to `handler_cancellation=True`). Times are `time.monotonic()`.

Used by the provider tests, by end-to-end tests of the agent (point `OPENAI_BASE_URL` at
`openai_base_url` or `ANTHROPIC_BASE_URL` at `anthropic_base_url`) and by the offline demo:
`python -m acp_fsm.providers.scripted --port 8765`.

Fault replies count *wire events*: `render_openai` / `render_anthropic` return the list of
events a `Reply` is streamed as, and `Drop(after=n)`, `Hang(n)`, `Truncate(n)` and
`ErrorEvent(n)` act after the first `n` of them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Protocol

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from acp_fsm.providers.types import StopReason, Usage

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
# Grace period for in-flight handlers when the server stops (hangs are woken before that).
SHUTDOWN_TIMEOUT_S = 1.0
DEFAULT_USAGE = Usage(input_tokens=12, output_tokens=7)

# --------------------------------------------------------------------------- the script


@dataclass(frozen=True)
class Call:
    """One tool call of a `Reply`. `arguments` is the JSON text the model streams (it may be
    malformed on purpose); a sequence gives the exact fragments, a string is one fragment."""

    id: str
    name: str
    arguments: str | Sequence[str] = "{}"

    @property
    def fragments(self) -> tuple[str, ...]:
        return _pieces(self.arguments)


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
    `fault` breaks the stream after some events (`Drop`, `Hang`, `Truncate`, `ErrorEvent`)."""

    text: str | Sequence[str] = ""
    thinking: str | Sequence[str] = ""
    signature: str | None = None
    calls: tuple[Call, ...] = ()
    stop: StopReason | None = None
    usage: Usage | None = DEFAULT_USAGE
    delay_s: float = 0.0
    headers_delay_s: float = 0.0
    omit_done: bool = False
    fault: Fault | None = None

    @property
    def stop_reason(self) -> StopReason:
        if self.stop is not None:
            return self.stop
        return StopReason.TOOL_USE if self.calls else StopReason.END_TURN


@dataclass(frozen=True)
class HttpError:
    """A non-200 answer in the route's error shape (`body` replaces it with exact bytes).
    `error_type` defaults per status and format; `code` is OpenAI's `error.code`, `details`
    Anthropic's `error.details` (e.g. `{"error_code": "enforced_spend_limit_reached"}`)."""

    status: int
    message: str = "scripted failure"
    error_type: str | None = None
    code: str | None = None
    details: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None


@dataclass(frozen=True)
class Raw:
    """Exact bytes for parser edge cases: each `bytes` item is written as is (one HTTP chunk),
    each `float` item is a pause in seconds between writes."""

    parts: tuple[bytes | float, ...]
    status: int = 200
    content_type: str = SSE_CONTENT_TYPE


Scripted = Reply | HttpError | Raw


# ------------------------------------------------------------------------------ records


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


class _Rejection(Exception):
    """A request the real API would refuse; carries the HttpError to answer with."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.message)
        self.error = error


def _reject(message: str, status: int = 400, error_type: str = "invalid_request_error",
            code: str | None = None) -> _Rejection:
    return _Rejection(HttpError(status, message, error_type, code))


# ----------------------------------------------------------------------------- helpers


def _pieces(value: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(value)


def _json(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else _json(data)
    return f"{head}data: {text}\n\n".encode()


_ids = count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}scripted"


def _mask(key: str) -> str:
    return f"{key[:3]}***{key[-4:]}" if len(key) > 8 else "***"


# ------------------------------------------------------------------------ wire: OpenAI

_OPENAI_FINISH = {
    StopReason.END_TURN: "stop",
    StopReason.TOOL_USE: "tool_calls",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
}
_OPENAI_DEFAULT_TYPES = {400: "invalid_request_error", 401: "invalid_request_error",
                         403: "permission_denied", 404: "invalid_request_error",
                         429: "requests"}


def render_openai(reply: Reply, model: str = "scripted", include_usage: bool = True
                  ) -> list[bytes]:
    """The SSE events of `reply` as Chat Completions chunks: a role chunk, reasoning, content,
    tool-call fragments (id and name on the first fragment of each index only), the finish
    chunk, the `choices: []` usage chunk (only with include_usage), then `[DONE]`."""
    base = {"id": _new_id("chatcmpl-"), "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model, "system_fingerprint": "fp_scripted"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        payload: dict[str, Any] = {**base, "choices": [choice]}
        if include_usage:
            payload["usage"] = None
        return _sse(payload)

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"reasoning_content": piece}) for piece in _pieces(reply.thinking)]
    events += [chunk({"content": piece}) for piece in _pieces(reply.text)]
    for index, call in enumerate(reply.calls):
        first = {"index": index, "id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": ""}}
        events.append(chunk({"tool_calls": [first]}))
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                   for piece in call.fragments]
    events.append(chunk({}, _OPENAI_FINISH[reply.stop_reason]))
    if include_usage and reply.usage is not None:
        events.append(_sse({**base, "choices": [], "usage": _openai_usage(reply.usage)}))
    if not reply.omit_done:
        events.append(_sse("[DONE]"))
    return events


def _openai_usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_tokens
    return {"prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens,
                                      "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}


def _openai_unanswered(ids: Sequence[str]) -> str:
    return ("An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(ids)}")


class _OpenAiRoute:
    path = OPENAI_PATH
    request_id_header = "x-request-id"

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        return render_openai(reply, str(body.get("model")), include)

    def error_body(self, error: HttpError) -> dict[str, Any]:
        error_type = error.error_type or _OPENAI_DEFAULT_TYPES.get(error.status, "server_error")
        return {"error": {"message": error.message, "type": error_type, "param": None,
                          "code": error.code}}

    def error_event(self, fault: ErrorEvent) -> bytes:
        error = HttpError(200, fault.message, fault.error_type or "server_error")
        return _sse(self.error_body(error))

    def authenticate(self, headers: Mapping[str, str], key: str) -> None:
        auth = headers.get("authorization", "")
        if not auth:
            raise _reject("You didn't provide an API key. You need to provide your API key in "
                          "an Authorization header using Bearer auth (i.e. Authorization: "
                          "Bearer YOUR_KEY).", 401)
        given = auth.removeprefix("Bearer ")
        if given != key:
            raise _reject(f"Incorrect API key provided: {_mask(given)}. You can find your API "
                          "key at https://platform.openai.com/account/api-keys.", 401,
                          code="invalid_api_key")

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        if not isinstance(body, dict):
            raise _reject("We could not parse the JSON body of your request.")
        if not body.get("model"):
            raise _reject("you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _reject("Missing required parameter: 'messages'.",
                          code="missing_required_parameter")
        if body.get("stream") is not True:
            raise _reject("this scripted provider only streams: set 'stream': true")
        self._check_pairing(messages)

    @staticmethod
    def _check_pairing(messages: list[Any]) -> None:
        pending: list[str] = []
        for message in messages:
            role = message.get("role") if isinstance(message, dict) else None
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    raise _reject("Invalid parameter: messages with role 'tool' must be a "
                                  "response to a preceeding message with 'tool_calls'.")
                pending.remove(call_id)
                continue
            if pending:
                raise _reject(_openai_unanswered(pending))
            if role == "assistant":
                pending = [str(c.get("id")) for c in message.get("tool_calls") or ()]
        if pending:
            raise _reject(_openai_unanswered(pending))


# --------------------------------------------------------------------- wire: Anthropic

_ANTHROPIC_DEFAULT_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                            403: "permission_error", 404: "not_found_error",
                            413: "request_too_large", 429: "rate_limit_error",
                            529: "overloaded_error"}


def render_anthropic(reply: Reply, model: str = "scripted") -> list[bytes]:
    """The SSE events of `reply` as Messages API events: `message_start`, then per block
    (thinking, text, each tool_use) `content_block_start` / deltas / `content_block_stop`, a
    `ping` after the first block start, `message_delta` (stop reason, cumulative usage) and
    `message_stop`."""
    usage = reply.usage
    start_usage: dict[str, Any] = {} if usage is None else {"usage": {
        "input_tokens": usage.input_tokens, "output_tokens": 1,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens}}
    message: dict[str, Any] = {
        "id": _new_id("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, **start_usage}
    events = [_sse({"type": "message_start", "message": message}, "message_start")]
    for index, (block, deltas) in enumerate(_anthropic_blocks(reply)):
        events.append(_sse({"type": "content_block_start", "index": index,
                            "content_block": block}, "content_block_start"))
        if index == 0:
            events.append(_sse({"type": "ping"}, "ping"))
        events += [_sse({"type": "content_block_delta", "index": index, "delta": delta},
                        "content_block_delta") for delta in deltas]
        events.append(_sse({"type": "content_block_stop", "index": index},
                           "content_block_stop"))
    final: dict[str, Any] = {"type": "message_delta", "delta": {
        "stop_reason": reply.stop_reason.value, "stop_sequence": None}}
    if usage is not None:
        final["usage"] = {"output_tokens": usage.output_tokens}
    events.append(_sse(final, "message_delta"))
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def _anthropic_blocks(reply: Reply) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    thinking = _pieces(reply.thinking)
    if thinking or reply.signature:
        deltas = [{"type": "thinking_delta", "thinking": t} for t in thinking]
        if reply.signature:
            deltas.append({"type": "signature_delta", "signature": reply.signature})
        yield {"type": "thinking", "thinking": "", "signature": ""}, deltas
    text = _pieces(reply.text)
    if text:
        yield {"type": "text", "text": ""}, [{"type": "text_delta", "text": t} for t in text]
    for call in reply.calls:
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        yield block, [{"type": "input_json_delta", "partial_json": f} for f in call.fragments]


def _anthropic_unanswered(index: int, ids: Sequence[str]) -> str:
    return (f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(ids)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message.")


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    if message.get("role") != "assistant":
        return []
    return [str(b.get("id")) for b in _blocks(message) if b.get("type") == "tool_use"]


class _AnthropicRoute:
    path = ANTHROPIC_PATH
    request_id_header = "request-id"

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]:
        return render_anthropic(reply, str(body.get("model")))

    def error_body(self, error: HttpError) -> dict[str, Any]:
        error_type = error.error_type or _ANTHROPIC_DEFAULT_TYPES.get(error.status, "api_error")
        fields: dict[str, Any] = {"type": error_type, "message": error.message}
        if error.details is not None:
            fields["details"] = dict(error.details)
        return {"type": "error", "error": fields, "request_id": _new_id("req_")}

    def error_event(self, fault: ErrorEvent) -> bytes:
        error = {"type": fault.error_type or "overloaded_error", "message": fault.message}
        return _sse({"type": "error", "error": error}, "error")

    def authenticate(self, headers: Mapping[str, str], key: str) -> None:
        given = headers.get("x-api-key")
        if given is None:
            raise _reject("x-api-key header is required", 401, "authentication_error")
        if given != key:
            raise _reject("invalid x-api-key", 401, "authentication_error")

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        if "anthropic-version" not in headers:
            raise _reject("anthropic-version: header is required")
        if not isinstance(body, dict):
            raise _reject("Invalid JSON in request body")
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                raise _reject(f"{name}: Field required")
        limit = body["max_tokens"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise _reject("max_tokens: Input should be a valid integer greater than 0")
        if body.get("stream") is not True:
            raise _reject("this scripted provider only streams: set 'stream': true")
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            raise _reject("messages: at least one message is required")
        self._check_roles(messages)
        for i, message in enumerate(messages):
            self._check_blocks(i, message)
            previous = messages[i - 1] if i else {}
            following = messages[i + 1] if i + 1 < len(messages) else {}
            if message["role"] == "user":
                self._check_results(i, message, previous)
            else:
                self._check_answered(i, message, following)

    @staticmethod
    def _check_roles(messages: list[Any]) -> None:
        previous = None
        for i, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                raise _reject(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            if i == 0 and role != "user":
                raise _reject('messages: first message must use the "user" role')
            if role == previous:
                raise _reject('messages: roles must alternate between "user" and "assistant", '
                              f'but found multiple "{role}" roles in a row')
            previous = role

    @staticmethod
    def _check_blocks(i: int, message: dict[str, Any]) -> None:
        for j, block in enumerate(_blocks(message)):
            kind = block.get("type")
            if kind == "thinking" and not block.get("signature"):
                raise _reject(f"messages.{i}.content.{j}.thinking.signature: Field required")
            if kind == "text" and not str(block.get("text", "")).strip():
                raise _reject(f"messages.{i}: text content blocks must contain non-whitespace "
                              "text")
            if kind == "tool_result" and not block.get("content"):
                raise _reject(f"messages.{i}.content.{j}.tool_result.content: a tool_result "
                              "must not be empty")
            if kind in ("thinking", "redacted_thinking", "tool_use") and message["role"] != (
                    "assistant"):
                raise _reject(f"messages.{i}.content.{j}: `{kind}` blocks are only allowed in "
                              "assistant messages")

    @staticmethod
    def _check_results(i: int, message: dict[str, Any], previous: dict[str, Any]) -> None:
        """Every tool_result of a user message answers a tool_use of the message before."""
        ids = _tool_use_ids(previous)
        for j, block in enumerate(_blocks(message)):
            use_id = str(block.get("tool_use_id"))
            if block.get("type") == "tool_result" and use_id not in ids:
                raise _reject(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                              f"`tool_result` blocks: {use_id}. Each `tool_result` block must "
                              "have a corresponding `tool_use` block in the previous message.")

    @staticmethod
    def _check_answered(i: int, message: dict[str, Any], following: dict[str, Any]) -> None:
        """Every tool_use of an assistant message needs a tool_result among the tool_result
        blocks that open the next message (a result after other content does not count)."""
        answered: list[str] = []
        for block in _blocks(following):
            if block.get("type") != "tool_result":
                break
            answered.append(str(block.get("tool_use_id")))
        missing = [use_id for use_id in _tool_use_ids(message) if use_id not in answered]
        if missing:
            raise _reject(_anthropic_unanswered(i, missing))


class _Route(Protocol):
    path: str
    request_id_header: str

    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]: ...
    def error_body(self, error: HttpError) -> dict[str, Any]: ...
    def error_event(self, fault: ErrorEvent) -> bytes: ...
    def authenticate(self, headers: Mapping[str, str], key: str) -> None: ...
    def validate(self, headers: Mapping[str, str], body: Any) -> None: ...


# ------------------------------------------------------------------------------ server


class ScriptedProvider:
    """A real HTTP server answering model calls from a script (see the module docstring).

    `api_key`, when set, is required (401 in the API's shape otherwise). `fallback` answers
    when the script is empty; without it an empty script is a 500 saying so."""

    def __init__(self, *replies: Scripted | Responder, api_key: str | None = None,
                 fallback: Scripted | Responder | None = None) -> None:
        self.requests: list[RecordedRequest] = []
        self.served: list[Served] = []
        self.disconnects: list[Disconnect] = []
        self.events_written = 0  # SSE events (or raw parts) written, all responses together
        self.api_key = api_key
        self.fallback = fallback
        self._script: deque[Scripted | Responder] = deque(replies)
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        where = self._url or "stopped"
        return (f"<ScriptedProvider {where} requests={len(self.requests)} "
                f"remaining={len(self._script)} disconnects={len(self.disconnects)}>")

    # ---- script

    def script(self, *replies: Scripted | Responder) -> None:
        """Append replies to the FIFO (shared by both routes)."""
        self._script.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._script)

    # ---- lifecycle

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError("the scripted provider is not started")
        return self._url

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> ScriptedProvider:
        app = web.Application()
        for route in (_OpenAiRoute(), _AnthropicRoute()):
            app.router.add_post(route.path, self._handler(route))
        runner = web.AppRunner(app, handler_cancellation=True, access_log=None,
                               shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        bound_host, bound_port = runner.addresses[0][:2]
        self._url = f"http://{bound_host}:{bound_port}"
        return self

    async def stop(self) -> None:
        """Wake hanging responses and shut the server down (idempotent)."""
        runner, self._runner = self._runner, None
        self._stopping.set()
        if runner is not None:
            await runner.cleanup()
        self._url = None
        self._stopping = asyncio.Event()

    async def __aenter__(self) -> ScriptedProvider:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_for_disconnects(self, count: int = 1) -> list[Disconnect]:
        """Wait until at least `count` client disconnects were recorded (bound it with
        `asyncio.timeout`)."""
        while len(self.disconnects) < count:
            self._changed.clear()
            await self._changed.wait()
        return self.disconnects

    # ---- handling

    def _handler(self, route: _Route) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            record = await self._record(request)
            try:
                if self.api_key is not None:
                    route.authenticate(record.headers, self.api_key)
                route.validate(record.headers, record.body)
            except _Rejection as rejection:
                return self._error_response(route, rejection.error)
            reply = self._next_reply(route, record)
            self.served.append(Served(route.path, reply, time.monotonic()))
            return await self._respond(request, route, reply, record.body)

        return handle

    async def _record(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        record = RecordedRequest(request.path, CIMultiDictProxy(CIMultiDict(request.headers)),
                                 body, raw, time.monotonic())
        self.requests.append(record)
        return record

    def _next_reply(self, route: _Route, record: RecordedRequest) -> Scripted:
        entry = self._script.popleft() if self._script else self.fallback
        if entry is None:
            return HttpError(500, f"scripted provider: the script is empty, no reply left for "
                             f"request #{len(self.requests)} (POST {route.path})")
        return entry if isinstance(entry, Reply | HttpError | Raw) else entry(record)

    def _error_response(self, route: _Route, error: HttpError) -> web.Response:
        body = error.body if error.body is not None else _json(route.error_body(error)).encode()
        headers = {"content-type": "application/json",
                   route.request_id_header: _new_id("req_"), **error.headers}
        return web.Response(status=error.status, body=body, headers=headers)

    async def _respond(self, request: web.Request, route: _Route, reply: Scripted, body: Any
                       ) -> web.StreamResponse:
        if isinstance(reply, HttpError):
            return self._error_response(route, reply)
        if isinstance(reply, Raw):
            parts: Sequence[bytes | float] = reply.parts
            return await self._stream(request, route, parts, reply.status, reply.content_type)
        await self._sleep(reply.headers_delay_s, request.path, 0)
        parts = self._timed(route.render(reply, body), reply, route)
        return await self._stream(request, route, parts, 200, SSE_CONTENT_TYPE, reply.fault)

    @staticmethod
    def _timed(events: list[bytes], reply: Reply, route: _Route) -> list[bytes | float]:
        """Events with the reply's pauses, cut or extended by its fault."""
        fault = reply.fault
        if fault is not None:
            events = events[: fault.after]
            if isinstance(fault, ErrorEvent):
                events.append(route.error_event(fault))
        timed: list[bytes | float] = []
        for i, event in enumerate(events):
            if i and reply.delay_s:
                timed.append(reply.delay_s)
            timed.append(event)
        return timed

    async def _stream(self, request: web.Request, route: _Route, parts: Sequence[bytes | float],
                      status: int, content_type: str, fault: Fault | None = None
                      ) -> web.StreamResponse:
        response = web.StreamResponse(status=status, headers={
            "content-type": content_type, "cache-control": "no-cache",
            route.request_id_header: _new_id("req_")})
        sent = 0
        try:
            await response.prepare(request)
            for part in parts:
                if isinstance(part, float | int):
                    await asyncio.sleep(part)
                    continue
                await response.write(part)  # waits while the client is not reading
                sent += 1
                self.events_written += 1
        except asyncio.CancelledError:
            self._disconnected(request.path, sent)
            raise
        except ConnectionError:
            self._disconnected(request.path, sent)
            return response
        if isinstance(fault, Drop):
            await self._drop(request)
        elif isinstance(fault, Hang):
            await self._sleep(None, request.path, sent)
        return response

    async def _sleep(self, seconds: float | None, path: str, sent: int) -> None:
        """Sleep (None: until the server stops), recording a client disconnect meanwhile."""
        try:
            if seconds is None:
                await self._stopping.wait()
            elif seconds > 0:
                await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            self._disconnected(path, sent)
            raise

    async def _drop(self, request: web.Request) -> None:
        """Close the connection without finishing the chunked body; aiohttp then cancels us."""
        transport = request.transport
        if transport is not None:
            transport.close()
        await self._stopping.wait()

    def _disconnected(self, path: str, sent: int) -> None:
        self.disconnects.append(Disconnect(path, time.monotonic(), sent))
        self._changed.set()


# -------------------------------------------------------------------------------- demo


def _last_user_text(request: RecordedRequest) -> str:
    """The text of the last user message, in either wire format."""
    messages = (request.body or {}).get("messages") or []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or () if b.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def _echo(request: RecordedRequest) -> Reply:
    text = f"(scripted) You said: {_last_user_text(request)}"
    return Reply(text=tuple(text[i : i + 8] for i in range(0, len(text), 8)), delay_s=0.03)


DEMO_SCRIPT: tuple[Scripted, ...] = (
    Reply(thinking=("The user greets me. ", "I should answer briefly."), signature="sig-demo",
          text=("Hello! ", "I am a scripted model ", "running offline."), delay_s=0.05),
)


async def _serve_forever(host: str, port: int) -> None:
    server = await ScriptedProvider(*DEMO_SCRIPT, fallback=_echo).start(host, port)
    try:
        print(f"scripted provider on {server.url}\n"
              f"  OPENAI_BASE_URL={server.openai_base_url}\n"
              f"  ANTHROPIC_BASE_URL={server.anthropic_base_url}\n"
              "Ctrl-C to stop.", file=sys.stderr, flush=True)
        await asyncio.Event().wait()
    finally:
        await server.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a scripted OpenAI/Anthropic endpoint.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_forever(args.host, args.port))


if __name__ == "__main__":
    main()
