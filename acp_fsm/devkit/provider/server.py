"""The scripted provider's HTTP server: one FIFO script of replies served on both APIs' routes.

Each request is recorded, checked against its API's rules (`rules`), answered from the script
in its API's wire format (`wire`), and timed and broken as its reply says; a client that goes
away mid-response is recorded at once (`handler_cancellation=True`). `GET /v1/models` lists the
server's models in the shape of the API the request's headers name (`models`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from acp_fsm.devkit.provider.anthropic_rules import AnthropicRules
from acp_fsm.devkit.provider.anthropic_wire import AnthropicWire
from acp_fsm.devkit.provider.local import Describe, LocalServer
from acp_fsm.devkit.provider.models import (
    MODELS_PATH,
    ModelList,
    anthropic_models,
    openai_models,
)
from acp_fsm.devkit.provider.openai_rules import OpenAiRules, ResponsesRules
from acp_fsm.devkit.provider.openai_wire import OpenAiWire, ResponsesWire
from acp_fsm.devkit.provider.rules import Rejection, estimate_tokens
from acp_fsm.devkit.provider.script import (
    DEFAULT_MODELS,
    DEFAULT_USAGE,
    SSE_CONTENT_TYPE,
    Disconnect,
    Drop,
    ErrorEvent,
    Fault,
    Hang,
    HttpError,
    Raw,
    RecordedRequest,
    Reply,
    Responder,
    Scripted,
    Served,
)
from acp_fsm.devkit.provider.wire import json_text, new_id

OPENAI_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
ANTHROPIC_PATH = "/v1/messages"
# The largest request body taken (aiohttp's default, 1 MiB, is far less than the real APIs
# take: a long session's request passes it).
MAX_BODY_BYTES = 32 * 1024 * 1024
# Grace period for in-flight handlers when the server stops (hangs are woken before that).
SHUTDOWN_TIMEOUT_S = 1.0


class Wire(Protocol):
    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]: ...
    def error_body(self, error: HttpError) -> dict[str, Any]: ...
    def error_event(self, fault: ErrorEvent) -> bytes: ...


class Rules(Protocol):
    def authenticate(self, headers: Mapping[str, str], key: str) -> None: ...
    def check_headers(self, headers: Mapping[str, str]) -> None: ...
    def validate(self, headers: Mapping[str, str], body: Any) -> None: ...
    def check_context(self, body: dict[str, Any], prompt: int, window: int) -> None: ...


@dataclass(frozen=True)
class Route:
    """One API: where it is served, its request-id header, its wire format, its rules and its
    model listing."""

    path: str
    request_id_header: str
    wire: Wire
    rules: Rules
    list_models: ModelList


OPENAI_ROUTE = Route(OPENAI_PATH, "x-request-id", OpenAiWire(), OpenAiRules(), openai_models)
ANTHROPIC_ROUTE = Route(
    ANTHROPIC_PATH, "request-id", AnthropicWire(), AnthropicRules(), anthropic_models
)
ROUTES = (OPENAI_ROUTE, ANTHROPIC_ROUTE)


def responses_route(reasons: bool = False) -> Route:
    """The Responses API, one per server: its rules check that what its wire served comes
    back (the reasoning item of each function call); with `reasons` every reply reasons."""
    wire = ResponsesWire(reasons)
    return Route(
        RESPONSES_PATH, "x-request-id", wire, ResponsesRules(wire.reasoning_of), openai_models
    )


class ScriptedProvider:
    """A real HTTP server answering model calls from a script (see the package docstring).

    `api_key`, when set, is required (401 in the API's shape otherwise). `fallback` answers
    when the script is empty; without it an empty script is a 500 saying so. `lanes` answers
    the model calls for the models it names, each with its entry (a reply, or a responder),
    every time and never from the script, so that calls beside the ones a test scripts (the
    agent's title call) take nothing of it; they are recorded in `lane_requests`, not
    `requests`, and checked like every call.

    `GET /v1/models` lists `models` after sleeping `models_delay_s` (cut short when the server
    stops), or answers `models_error` when set; these requests are recorded in
    `model_list_requests`, not `requests`. `context_window`, when set, refuses a model call
    whose `estimate_tokens` plus its output limit exceeds it, and a reply left at
    `DEFAULT_USAGE` then reports that estimate as its input tokens; `chars_per_token` is its
    tokenizer's (4; a local code model's counts JSON and paths at about 2.5). `reasons` gives every
    reply on the Responses route a reasoning item, as a reasoning model's (its summary empty
    unless the reply has thinking), which each of its function calls must come back with."""

    def __init__(
        self,
        *replies: Scripted | Responder,
        api_key: str | None = None,
        fallback: Scripted | Responder | None = None,
        models: Sequence[str] = DEFAULT_MODELS,
        models_error: HttpError | None = None,
        models_delay_s: float = 0.0,
        context_window: int | None = None,
        local: LocalServer | None = None,
        lanes: Mapping[str, Scripted | Responder] | None = None,
        reasons: bool = False,
        chars_per_token: float = 4.0,
    ) -> None:
        self.requests: list[RecordedRequest] = []
        self.lanes: dict[str, Scripted | Responder] = dict(lanes or {})  # model → its answer
        self.lane_requests: list[RecordedRequest] = []
        self.model_list_requests: list[RecordedRequest] = []
        self.served: list[Served] = []
        self.disconnects: list[Disconnect] = []
        self.events_written = 0  # SSE events (or raw parts) written, all responses together
        self.api_key = api_key
        self.fallback = fallback
        self.models = tuple(models)
        self.models_error = models_error
        self.models_delay_s = models_delay_s
        self.context_window = context_window
        self.local = local
        self.reasons = reasons
        self.chars_per_token = chars_per_token
        self.loaded: set[str] = set()  # models a local server has loaded (asked to answer)
        self.truncated: list[RecordedRequest] = []  # prompts cut to fit (Ollama)
        self._script: deque[Scripted | Responder] = deque(replies)
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        where = self._url or "stopped"
        return (
            f"<ScriptedProvider {where} requests={len(self.requests)} "
            f"remaining={len(self._script)} disconnects={len(self.disconnects)}>"
        )

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
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        for route in (*ROUTES, responses_route(self.reasons)):
            app.router.add_post(route.path, self._handler(route))
        app.router.add_get(MODELS_PATH, self._models)
        for path, describe in (self.local.endpoints() if self.local else {}).items():
            app.router.add_get(path, self._described(describe))
        runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S
        )
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

    def _handler(self, route: Route) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            record = await self._read(request)
            model = record.body.get("model") if isinstance(record.body, dict) else None
            lane = self.lanes.get(model) if isinstance(model, str) else None
            (self.requests if lane is None else self.lane_requests).append(record)
            if self.local is not None and (lacks := self.local.unserved(route.path)) is not None:
                return self._error_response(route, lacks)
            prompt = estimate_tokens(record.body, self.chars_per_token)
            try:
                self._authenticate(route, record)
                route.rules.validate(record.headers, record.body)
                if self.local is not None:
                    self.local.check(record.body, self.models)
                    self.loaded.add(str(record.body.get("model")))
                    if (over := self._overflow(record, prompt)) is not None:
                        self.served.append(Served(route.path, over, time.monotonic()))
                        return await self._respond(request, route, over, record.body)
                elif self.context_window is not None:
                    route.rules.check_context(record.body, prompt, self.context_window)
            except Rejection as rejection:
                return self._error_response(route, rejection.error)
            if lane is not None:
                reply = self._computed(lane, record)
            else:
                reply = self._next_reply(route, record)
                self.served.append(Served(route.path, reply, time.monotonic()))
            return await self._respond(request, route, self._charged(reply, prompt), record.body)

        return handle

    async def _models(self, request: web.Request) -> web.Response:
        """`GET /v1/models`: Anthropic's shape when the request carries `anthropic-version` or
        `x-api-key` (then the version is required, as on `/v1/messages`), else OpenAI's; a
        local server's own, whichever asks."""
        record = await self._record(request, self.model_list_requests)
        anthropic = "anthropic-version" in record.headers or "x-api-key" in record.headers
        route = ANTHROPIC_ROUTE if anthropic else OPENAI_ROUTE
        await self._sleep(self.models_delay_s, request.path, 0)
        try:
            self._authenticate(route, record)
            route.rules.check_headers(record.headers)
            if self.models_error is not None:
                return self._error_response(route, self.models_error)
            listing = (  # a local server has one listing, whichever API asks (llama.cpp)
                self.local.listing(self.models, self.context_window)
                if self.local is not None
                else route.list_models(self.models, request.query)
            )
        except Rejection as rejection:
            return self._error_response(route, rejection.error)
        return self._json_response(route, 200, json_text(listing).encode(), {})

    def _overflow(self, record: RecordedRequest, prompt: int) -> Scripted | None:
        """A local server's answer to a request over its window (taking no script entry);
        one that cuts the prompt to fit records it and answers from the script."""
        if self.local is None or self.context_window is None:
            return None
        if self.local.truncates:
            if prompt > self.context_window:
                self.truncated.append(record)
            return None
        return self.local.overflow(record.body, prompt, self.context_window)

    def _described(self, describe: Describe) -> Callable[[web.Request], Any]:
        """A local server's own endpoint stating its window."""

        async def handle(request: web.Request) -> web.Response:
            await self._record(request, self.model_list_requests)
            body = describe(self.models, self.context_window, self.loaded)
            return self._json_response(OPENAI_ROUTE, 200, json_text(body).encode(), {})

        return handle

    def _authenticate(self, route: Route, record: RecordedRequest) -> None:
        if self.api_key is not None:
            route.rules.authenticate(record.headers, self.api_key)

    def _charged(self, reply: Scripted, prompt: int) -> Scripted:
        """With a context window, a reply left at `DEFAULT_USAGE` reports the estimated prompt
        as its input tokens (at most the window, where the prompt was cut to fit it); an
        explicit usage is kept."""
        if (
            self.context_window is None
            or not isinstance(reply, Reply)
            or (reply.usage is not DEFAULT_USAGE)
        ):
            return reply
        counted = min(prompt, self.context_window)
        return replace(reply, usage=DEFAULT_USAGE._replace(input_tokens=counted))

    async def _record(self, request: web.Request, into: list[RecordedRequest]) -> RecordedRequest:
        record = await self._read(request)
        into.append(record)
        return record

    async def _read(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        record = RecordedRequest(
            request.path,
            CIMultiDictProxy(CIMultiDict(request.headers)),
            body,
            raw,
            time.monotonic(),
        )
        return record

    def _next_reply(self, route: Route, record: RecordedRequest) -> Scripted:
        entry = self._script.popleft() if self._script else self.fallback
        if entry is None:
            return HttpError(
                500,
                f"scripted provider: the script is empty, no reply left for "
                f"request #{len(self.requests)} (POST {route.path})",
            )
        return self._computed(entry, record)

    @staticmethod
    def _computed(entry: Scripted | Responder, record: RecordedRequest) -> Scripted:
        return entry if isinstance(entry, Reply | HttpError | Raw) else entry(record)

    def _error_response(self, route: Route, error: HttpError) -> web.Response:
        body = error.body
        if body is None:
            body = json_text(route.wire.error_body(error)).encode()
        return self._json_response(route, error.status, body, error.headers)

    @staticmethod
    def _json_response(
        route: Route, status: int, body: bytes, headers: Mapping[str, str]
    ) -> web.Response:
        headers = {
            "content-type": "application/json",
            route.request_id_header: new_id("req_"),
            **headers,
        }
        return web.Response(status=status, body=body, headers=headers)

    async def _respond(
        self, request: web.Request, route: Route, reply: Scripted, body: Any
    ) -> web.StreamResponse:
        if isinstance(reply, HttpError):
            return self._error_response(route, reply)
        if isinstance(reply, Raw):
            parts: Sequence[bytes | float] = reply.parts
            return await self._stream(request, route, parts, reply.status, reply.content_type)
        await self._sleep(reply.headers_delay_s, request.path, 0)
        reply = reply.as_sent()
        rendered = (
            self.local.render(reply, body)
            if self.local is not None and route is OPENAI_ROUTE
            else route.wire.render(reply, body)
        )
        parts = self._timed(rendered, reply, route)
        return await self._stream(request, route, parts, 200, SSE_CONTENT_TYPE, reply.fault)

    @staticmethod
    def _timed(events: list[bytes], reply: Reply, route: Route) -> list[bytes | float]:
        """Events with the reply's pauses, cut or extended by its fault."""
        fault = reply.fault
        if fault is not None:
            events = events[: fault.after]
            if isinstance(fault, ErrorEvent):
                events.append(route.wire.error_event(fault))
        timed: list[bytes | float] = []
        for i, event in enumerate(events):
            if i and reply.delay_s:
                timed.append(reply.delay_s)
            timed.append(event)
        return timed

    async def _stream(
        self,
        request: web.Request,
        route: Route,
        parts: Sequence[bytes | float],
        status: int,
        content_type: str,
        fault: Fault | None = None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            status=status,
            headers={
                "content-type": content_type,
                "cache-control": "no-cache",
                route.request_id_header: new_id("req_"),
            },
        )
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
        """Sleep `seconds` (None: without end), cut short when the server stops, recording a
        client disconnect meanwhile."""
        if seconds is not None and seconds <= 0:
            return
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await self._stopping.wait()
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
