"""An HTTP proxy that forwards everything to a model server unchanged and keeps a copy: each
request's body and each response's bytes as they streamed (bench/local_model.py puts it
between the agent and llama.cpp's server, to keep the model's raw answers)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

# Hop-by-hop and framing headers: each side of the proxy sets its own.
_NOT_FORWARDED = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}
)


@dataclass
class Exchange:
    """One request through the proxy and the response's bytes (`time.monotonic()` times)."""

    method: str
    path: str
    body: bytes
    started: float
    status: int | None = None
    response: bytearray = field(default_factory=bytearray)
    ended: float | None = None
    disconnected: bool = False  # the client went away before the response ended


class RecordingProxy:
    """Serves on 127.0.0.1 (a free port) what `upstream` (a server's root URL) answers."""

    def __init__(self, upstream: str, port: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.port = port  # 0: any free one
        self.exchanges: list[Exchange] = []
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self.url = ""

    def __repr__(self) -> str:
        return f"<RecordingProxy {self.url or 'stopped'} -> {self.upstream}>"

    async def start(self) -> str:
        """Start serving; the proxy's root URL."""
        # No time limit: a small machine takes minutes over a long prompt.
        self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._http is not None:
            await self._http.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._http is not None
        exchange = Exchange(request.method, request.path_qs, await request.read(), time.monotonic())
        self.exchanges.append(exchange)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        try:
            async with self._http.request(
                request.method,
                self.upstream + request.path_qs,
                data=exchange.body,
                headers=headers,
                auto_decompress=False,
            ) as upstream:
                exchange.status = upstream.status
                response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for key, value in upstream.headers.items():
                    if key.lower() not in _NOT_FORWARDED:
                        response.headers.add(key, value)
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    exchange.response += chunk
                    await response.write(chunk)
                await response.write_eof()
                return response
        except (asyncio.CancelledError, ConnectionResetError):
            exchange.disconnected = True  # a cancelled turn: the upstream request is closed
            raise
        finally:
            exchange.ended = time.monotonic()


@contextlib.asynccontextmanager
async def recording(upstream: str, port: int = 0) -> AsyncIterator[RecordingProxy]:
    """A proxy to `upstream` (on `port`, else any free one), serving while the block runs."""
    proxy = RecordingProxy(upstream, port)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()
