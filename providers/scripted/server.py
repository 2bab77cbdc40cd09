"""The scripted provider's HTTP server: one FIFO script of replies served on both APIs' routes.

Each request is recorded, checked against its API's rules (`rules`), answered from the script
in its API's wire format (`wire`), and timed and broken as its reply says; a client that goes
away mid-response is recorded at once (`handler_cancellation=True`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from acp_fsm.providers.scripted.rules import AnthropicRules, OpenAiRules, Rejection
from acp_fsm.providers.scripted.script import (
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
from acp_fsm.providers.scripted.wire import AnthropicWire, OpenAiWire, json_text, new_id

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
# Grace period for in-flight handlers when the server stops (hangs are woken before that).
SHUTDOWN_TIMEOUT_S = 1.0


class Wire(Protocol):
    def render(self, reply: Reply, body: dict[str, Any]) -> list[bytes]: ...
    def error_body(self, error: HttpError) -> dict[str, Any]: ...
    def error_event(self, fault: ErrorEvent) -> bytes: ...


class Rules(Protocol):
    def authenticate(self, headers: Mapping[str, str], key: str) -> None: ...
    def validate(self, headers: Mapping[str, str], body: Any) -> None: ...


@dataclass(frozen=True)
class Route:
    """One API: where it is served, its request-id header, its wire format and its rules."""

    path: str
    request_id_header: str
    wire: Wire
    rules: Rules


ROUTES = (Route(OPENAI_PATH, "x-request-id", OpenAiWire(), OpenAiRules()),
          Route(ANTHROPIC_PATH, "request-id", AnthropicWire(), AnthropicRules()))


class ScriptedProvider:
    """A real HTTP server answering model calls from a script (see the package docstring).

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
        for route in ROUTES:
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

    def _handler(self, route: Route) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            record = await self._record(request)
            try:
                if self.api_key is not None:
                    route.rules.authenticate(record.headers, self.api_key)
                route.rules.validate(record.headers, record.body)
            except Rejection as rejection:
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

    def _next_reply(self, route: Route, record: RecordedRequest) -> Scripted:
        entry = self._script.popleft() if self._script else self.fallback
        if entry is None:
            return HttpError(500, f"scripted provider: the script is empty, no reply left for "
                             f"request #{len(self.requests)} (POST {route.path})")
        return entry if isinstance(entry, Reply | HttpError | Raw) else entry(record)

    def _error_response(self, route: Route, error: HttpError) -> web.Response:
        body = error.body
        if body is None:
            body = json_text(route.wire.error_body(error)).encode()
        headers = {"content-type": "application/json",
                   route.request_id_header: new_id("req_"), **error.headers}
        return web.Response(status=error.status, body=body, headers=headers)

    async def _respond(self, request: web.Request, route: Route, reply: Scripted, body: Any
                       ) -> web.StreamResponse:
        if isinstance(reply, HttpError):
            return self._error_response(route, reply)
        if isinstance(reply, Raw):
            parts: Sequence[bytes | float] = reply.parts
            return await self._stream(request, route, parts, reply.status, reply.content_type)
        await self._sleep(reply.headers_delay_s, request.path, 0)
        parts = self._timed(route.wire.render(reply, body), reply, route)
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

    async def _stream(self, request: web.Request, route: Route, parts: Sequence[bytes | float],
                      status: int, content_type: str, fault: Fault | None = None
                      ) -> web.StreamResponse:
        response = web.StreamResponse(status=status, headers={
            "content-type": content_type, "cache-control": "no-cache",
            route.request_id_header: new_id("req_")})
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
