"""How an MCP server is reached: over HTTP, over SSE, or as a child process on stdio whose
stderr is read line by line (for our log and the reasons we give), never onto our stdout."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from acp_fsm.mcp.specs import ServerSpec
from acp_fsm.system.keeper import proc_stat

STDERR_LINE_CHARS = 500  # a stderr line is kept to this many characters
SSE_QUIET_S = 24 * 3600.0  # how long an SSE server's event stream may stay silent
# An HTTP server's connect, write and pool limits (its responses may stay silent as long as an
# SSE stream: a tool call is bounded by the call's own time limit).
HTTP_TIMEOUT_S = 30.0


async def connect(
    spec: ServerSpec,
    cwd: str,
    stack: AsyncExitStack,
    on_stderr: Callable[[str], None],
    on_group: Callable[[int], None],
) -> Any:
    """The read and write streams of the server `spec`, held open by `stack`; a stdio
    server's stderr lines go to `on_stderr`, its process group to `on_group` as soon as it
    is known (to be killed with the agent, even by kill -9)."""
    if spec.transport != "stdio":
        client: AbstractAsyncContextManager[Any]
        if spec.transport == "sse":
            # The SDK drops a stream quiet for 5 min; a server between two turns may be.
            client = sse_client(spec.url, headers=dict(spec.headers), sse_read_timeout=SSE_QUIET_S)
        else:
            http = httpx2.AsyncClient(
                headers=dict(spec.headers),
                timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=SSE_QUIET_S),
            )
            stack.push_async_callback(http.aclose)
            client = streamable_http_client(spec.url, http_client=http)
        return await stack.enter_async_context(client)
    params = StdioServerParameters(
        command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=cwd
    )
    read_fd, write_fd = os.pipe()
    errlog = os.fdopen(write_fd, "w")
    try:
        streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        errlog.close()  # the server holds its own copy: EOF comes when it exits
    group = _child_on_pipe(read_fd)
    if group is not None:
        on_group(group)
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: StderrLines(on_stderr), os.fdopen(read_fd, "rb", buffering=0)
    )
    stack.callback(transport.close)
    return streams


class StderrLines(asyncio.Protocol):
    """A server's stderr, line by line. A line is kept to `STDERR_LINE_CHARS` (4 bytes a
    character at most): the rest of it is dropped as it arrives, so a server writing without
    newlines costs no memory."""

    LIMIT = 4 * STDERR_LINE_CHARS

    def __init__(self, on_line: Callable[[str], None]) -> None:
        self._on_line = on_line
        self._partial = b""
        self._skipping = False  # in the dropped rest of an over-long line

    def data_received(self, data: bytes) -> None:
        *lines, rest = data.split(b"\n")
        if lines:
            lines[0] = b"" if self._skipping else self._partial + lines[0]
            self._partial, self._skipping = b"", False
        elif self._skipping:
            return
        for line in lines:
            self._emit(line)
        self._partial += rest
        if len(self._partial) > self.LIMIT:
            self._emit(self._partial[: self.LIMIT])
            self._partial, self._skipping = b"", True

    def _emit(self, line: bytes) -> None:
        if text := line.decode("utf-8", "replace").rstrip():
            self._on_line(text)

    def eof_received(self) -> bool:
        self._emit(self._partial)
        self._partial = b""
        return False


def _child_on_pipe(read_fd: int) -> int | None:
    """The pid of our child process whose stderr is the pipe of `read_fd`: the stdio server,
    which the SDK starts as the leader of a session (so also of a process group) of its own."""
    pipe = f"pipe:[{os.fstat(read_fd).st_ino}]".encode()
    parent = str(os.getpid()).encode()
    for name in os.listdir(b"/proc"):
        fields = proc_stat(name) if name.isdigit() else None  # state, ppid, ...
        if not fields or fields[1] != parent:
            continue
        try:
            if os.readlink(b"/proc/" + name + b"/fd/2") == pipe:
                return int(name)
        except OSError:
            continue  # gone meanwhile
    return None
