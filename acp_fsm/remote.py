"""`acp-fsm serve --listen ADDRESS`: ACP over WebSocket, for an editor that does not start the
agent itself (docs/remote.md).

One endpoint, `/acp` (`GET` with `Upgrade: websocket`), and `/health`. Each WebSocket is a
connection of its own, with its own handshake, server and sessions (`acp_fsm.server`), just as
each stdio process is; the sessions are the store's, shared with every stdio process of the
user (their turn leases keep two from running one session at once). One JSON-RPC message (or
batch) per text frame, each way; a frame's raw newlines are whitespace between JSON tokens.

Access: the client presents the token (`Authorization: Bearer <token>`, or `?token=` where a
browser cannot set headers), else 401; a browser's page (an `Origin` header) is refused (403)
unless its origin was allowed. It listens on loopback unless told otherwise; TLS belongs to a
proxy in front. The bounds are stdio's: a frame longer than the longest line is refused, the
agent's output waits for a slow reader (`drain`), and a connection that closes has its turns
cancelled and persisted before it is forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import secrets
import signal
import socket
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import structlog
from aiohttp import WSMsgType, web

from acp_fsm import redact
from acp_fsm.app import connect
from acp_fsm.protocol.connection import Connection
from acp_fsm.protocol.framing import MAX_LINE_BYTES
from acp_fsm.providers.http import close_client_session
from acp_fsm.server import AcpServer

log = structlog.get_logger("remote")

PATH: Final = "/acp"
CONNECTION_HEADER: Final = "Acp-Connection-Id"
HEARTBEAT_S: Final = 30.0  # WebSocket pings: a peer gone silently is noticed
HIGH_WATER_BYTES: Final = 4 * 1024 * 1024  # queued for a slow reader before producers wait
LOST_BYTES: Final = 64 * 1024 * 1024  # queued for a reader that reads nothing: it is gone
CLOSE_WAIT_S: Final = 1.0  # for the peer's answer to our close
HANDLER_GRACE_S: Final = 0.25  # as stdio's (`acp_fsm.app`)
TOKEN_BYTES: Final = 32


@dataclass(frozen=True)
class Listening:
    """What the server was told: where, the token, the browser origins it lets in."""

    host: str
    port: int
    token: str
    origins: frozenset[str] = frozenset()


class FrameOutput:
    """The agent's output to one WebSocket: each line a text frame, in order, sent by one
    writer; producers wait (`drain`) while more than `HIGH_WATER_BYTES` are queued. A peer
    that reads nothing while answers pile up past `LOST_BYTES` (they do not wait) has lost its
    output: `on_lost`, and the connection closes, as stdio's does when its reader is gone."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self._ws = ws
        self.on_lost: Callable[[], None] = lambda: None  # the connection's, once it is made
        self._frames: deque[tuple[str, int]] = deque()  # each frame, and its size in bytes
        self._queued = 0
        self._lost = False  # its reader read nothing for too long: nothing more is queued
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._sent = asyncio.Event()  # nothing is queued
        self._sent.set()
        self._writer = asyncio.get_running_loop().create_task(self._write_all())

    def write(self, data: bytes) -> None:
        if self._lost:
            return
        for line in data.split(b"\n"):
            if line:
                self._frames.append((line.decode("utf-8", "replace"), len(line)))
                self._queued += len(line)
                self._sent.clear()
        self._ready.set()
        if self._queued > LOST_BYTES:
            self._lost = True
            self._frames.clear()
            self._queued = 0
            self._room.set()  # nobody waits for room that never comes
            self._sent.set()
            self.on_lost()
            return
        if self._queued > HIGH_WATER_BYTES:
            self._room.clear()

    @property
    def congested(self) -> bool:
        return not self._room.is_set()

    async def drain(self) -> None:
        await self._room.wait()

    async def _write_all(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._frames:
                frame, size = self._frames.popleft()
                self._queued -= size
                if self._queued <= HIGH_WATER_BYTES:
                    self._room.set()
                try:
                    await self._ws.send_str(frame)
                except (ConnectionError, RuntimeError):  # the peer is gone
                    self._frames.clear()
                    self._room.set()
                    self._sent.set()
                    return
            self._sent.set()

    async def flush(self, seconds: float) -> None:
        """Send what is queued (bounded), then stop the writer."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._sent.wait(), seconds)
        self._writer.cancel()


@dataclass
class Remote:
    """The listening server and its live connections."""

    listening: Listening
    connections: set[Connection] = field(default_factory=set)

    def admitted(self, request: web.Request) -> web.Response | None:
        """None when `request` may connect; else the refusal."""
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        token = given.strip() if scheme.lower() == "bearer" else ""
        token = token or request.query.get("token", "")
        if not hmac.compare_digest(token.encode(), self.listening.token.encode()):
            return web.Response(status=401, text="a valid token is needed\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin.rstrip("/") not in self.listening.origins:
            return web.Response(status=403, text="this origin is not allowed\n")
        return None

    async def acp(self, request: web.Request) -> web.StreamResponse:
        refused = self.admitted(request)
        if refused is not None:
            log.warning("remote_refused", status=refused.status, peer=request.remote)
            return refused
        connection_id = str(uuid.uuid4())
        ws = web.WebSocketResponse(
            max_msg_size=MAX_LINE_BYTES,
            heartbeat=HEARTBEAT_S,
            autoping=True,
            timeout=CLOSE_WAIT_S,
        )
        ws.headers[CONNECTION_HEADER] = connection_id
        await ws.prepare(request)
        log.info("remote_connected", connection=connection_id, peer=request.remote)
        await self._serve(ws, connection_id)
        return ws

    async def _serve(self, ws: web.WebSocketResponse, connection_id: str) -> None:
        server = AcpServer(shared=True)
        output = FrameOutput(ws)
        connection = connect(server, output)
        output.on_lost = connection.output_lost
        self.connections.add(connection)
        reading = asyncio.get_running_loop().create_task(_read(ws, connection))
        try:
            reason = await connection.closed
        finally:
            reading.cancel()
            self.connections.discard(connection)
        log.info("remote_closing", connection=connection_id, reason=reason)
        await server.shutdown()
        await connection.drain_tasks(HANDLER_GRACE_S)
        await output.flush(0.3)
        server.finish()
        await ws.close()
        log.info("remote_closed", connection=connection_id)

    def terminate(self, why: str) -> None:
        for connection in list(self.connections):
            connection.terminate(why)


async def _read(ws: web.WebSocketResponse, connection: Connection) -> None:
    """Feed each text frame to the connection as one line; the end of the socket is EOF."""
    try:
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                frame = message.data.replace("\r", " ").replace("\n", " ")
                connection.feed(frame.encode() + b"\n")
            elif message.type == WSMsgType.ERROR:
                break
            # binary frames carry nothing of ACP's: ignored
    finally:
        connection.feed_eof()


def token_from(path: Path | None) -> tuple[str, bool]:
    """The token: the file's (made, readable by the user only, when it does not exist), else
    a new one; and whether it was made now (to be shown once)."""
    if path is not None and path.exists():
        if path.stat().st_mode & 0o077:
            log.warning("token_file_readable_by_others", path=str(path))
        token = path.read_text(encoding="utf-8").strip()
        if len(token) < 16:
            raise ValueError(f"{path}: a token of at least 16 characters is needed")
        return token, False
    token = secrets.token_urlsafe(TOKEN_BYTES)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(token + "\n", encoding="utf-8")
    return token, True


async def listen(listening: Listening, announce: Callable[[str], None]) -> int:
    """Serve until SIGTERM or SIGINT; each connection then closes as stdio's would."""
    remote = Remote(listening)
    app = web.Application()
    app.router.add_get(PATH, remote.acp)
    app.router.add_get("/health", lambda _request: _ok())
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    family = socket.AF_INET6 if ":" in listening.host else socket.AF_INET
    sock = socket.create_server((listening.host, listening.port), family=family)
    await web.SockSite(runner, sock).start()
    port = sock.getsockname()[1]
    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, _stop, stopped, signal.Signals(signum).name)
    announce(f"ws://{_shown_host(listening.host)}:{port}{PATH}")
    why = await stopped
    log.info("remote_stopping", reason=why, connections=len(remote.connections))
    remote.terminate(why)
    await runner.shutdown()
    await runner.cleanup()
    await close_client_session()  # the providers' HTTP client, shared by the connections
    return 0


async def _ok() -> web.Response:
    return web.Response(text="ok\n")


def _stop(stopped: asyncio.Future[str], why: str) -> None:
    if not stopped.done():
        stopped.set_result(why)


def _shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def main(argv: list[str]) -> int:
    """`acp-fsm serve --listen ADDRESS [--token-file FILE] [--allow-origin ORIGIN]...`."""
    import argparse
    import sys

    from acp_fsm import logs

    parser = argparse.ArgumentParser(
        prog="acp-fsm serve",
        description="Serve ACP over WebSocket at ws://ADDRESS/acp (docs/remote.md); without "
        "--listen, on stdin/stdout.",
    )
    parser.add_argument("--listen", required=True, metavar="ADDRESS",
                        help="HOST:PORT or PORT (host 127.0.0.1; port 0: a free one)")  # fmt: skip
    parser.add_argument("--token-file", metavar="FILE",
                        help="the token clients present (made when missing); else a new one "
                        "is printed once")  # fmt: skip
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="a browser origin let in (https://host:port); repeatable")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        host, port = _address(args.listen)
        token, made = token_from(Path(args.token_file) if args.token_file else None)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    logs.configure(None)
    redact.configured()  # the environment's secrets, and a key `acp-fsm login` stored
    origins = frozenset(origin.rstrip("/") for origin in args.allow_origin)
    listening = Listening(host, port, token, origins)

    def announce(url: str) -> None:
        told = f"token: {token}" if made and not args.token_file else f"token in {args.token_file}"
        sys.stderr.write(f"acp-fsm: serving ACP at {url} ({told})\n")
        sys.stderr.flush()

    try:
        return asyncio.run(listen(listening, announce))
    except OSError as exc:  # the address is taken, or not this host's
        sys.stderr.write(f"acp-fsm serve: cannot listen on {args.listen}: {exc.strerror or exc}\n")
        return 2


def _address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT` or `PORT` (on loopback)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r}: HOST:PORT or PORT")
    return host, int(port)
