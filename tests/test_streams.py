"""Output on a real pipe: frames of one pass of the event loop leave together, in order;
congestion is still seen at once; flush and a lost reader behave; what follows a response
runs once the response has left."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from acp_fsm.protocol.codec import encode
from acp_fsm.protocol.connection import Connection
from acp_fsm.protocol.streams import COALESCE_BYTES, OUTPUT_BUFFER_LIMIT_BYTES, Output
from tests.test_connection import FakeDispatcher

PIPE_BYTES = 4096  # a small kernel buffer, so that congestion comes early and surely


def _available(fd: int) -> bytes:
    """What can be read from `fd` now, without waiting."""
    data = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk


@pytest.fixture
async def pipe() -> AsyncIterator[tuple[int, Output, list[str]]]:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    os.set_blocking(read_fd, False)
    lost: list[str] = []
    output = Output(on_lost=lambda: lost.append("lost"))
    await output.open(write_fd)
    yield read_fd, output, lost
    output.close()
    for _ in range(1000):  # the transport closes once the reader has taken all it holds
        _available(read_fd)
        await asyncio.sleep(0.001)
        if output.lost:
            break
    os.close(read_fd)
    os.close(write_fd)


async def test_the_frames_of_one_pass_leave_together_and_in_order(
    pipe: tuple[int, Output, list[str]],
) -> None:
    read_fd, output, _ = pipe
    for n in range(3):
        output.write(b'{"n":%d}\n' % n)
    assert _available(read_fd) == b""  # still this pass of the loop
    await asyncio.sleep(0)
    assert _available(read_fd) == b'{"n":0}\n{"n":1}\n{"n":2}\n'


async def test_a_quarter_of_the_limit_leaves_at_once(pipe: tuple[int, Output, list[str]]) -> None:
    read_fd, output, _ = pipe
    frame = b"x" * 255 + b"\n"
    for _ in range(COALESCE_BYTES // len(frame)):
        output.write(frame)
    assert len(_available(read_fd)) == PIPE_BYTES  # the pipe is full; the rest is buffered
    await asyncio.sleep(0)


async def test_the_writer_that_fills_the_buffer_sees_congestion_at_once(
    pipe: tuple[int, Output, list[str]],
) -> None:
    read_fd, output, _ = pipe
    frames = [b'{"n":%06d}\n' % n for n in range(2 * OUTPUT_BUFFER_LIMIT_BYTES // 12)]
    seen = None
    for n, frame in enumerate(frames):
        output.write(frame)
        if output.congested:
            seen = n
            break
    assert seen is not None
    assert seen * 12 <= OUTPUT_BUFFER_LIMIT_BYTES + PIPE_BYTES + COALESCE_BYTES
    received = b""
    while output.congested or len(received) < (seen + 1) * 12:
        await asyncio.sleep(0.001)
        received += _available(read_fd)
    assert received == b"".join(frames[: seen + 1])


async def test_flush_sends_what_waits(pipe: tuple[int, Output, list[str]]) -> None:
    read_fd, output, _ = pipe
    output.write(b"last\n")
    await output.flush(1.0)
    assert _available(read_fd) == b"last\n"


async def test_a_reader_gone_loses_what_waits_and_says_so_once(
    pipe: tuple[int, Output, list[str]],
) -> None:
    read_fd, output, lost = pipe
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, read_fd)  # the pipe's only reader goes away (the fd stays for cleanup)
    os.close(devnull)
    output.write(b"one\n")
    output.write(b"two\n")
    for _ in range(100):
        if lost:
            break
        await asyncio.sleep(0.001)
    assert lost == ["lost"] and output.lost
    output.write(b"three\n")  # ignored, no error
    await asyncio.sleep(0)
    assert lost == ["lost"]


class _Following(FakeDispatcher):
    """`echo`, with `then` to follow its response (`Connection.after_response`)."""

    conn: Connection
    then: Callable[[], None]

    async def echo(self, params: Any) -> Any:
        self.conn.after_response(self.then)
        return await super().echo(params)


async def test_what_follows_a_response_runs_once_the_response_has_left(
    pipe: tuple[int, Output, list[str]],
) -> None:
    """What follows an answer (closing the socket of a model stream a cancel cut, whose server
    then wakes up to the disconnect) is never between the answer and the pipe."""
    read_fd, output, _ = pipe
    dispatcher = _Following()
    dispatcher.conn = Connection(dispatcher, output.write)
    seen: list[bytes] = []
    dispatcher.then = lambda: seen.append(_available(read_fd))
    dispatcher.conn.feed(encode({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": [1]}))
    for _ in range(10):
        await asyncio.sleep(0)
    assert seen == [b'{"jsonrpc":"2.0","id":1,"result":{"echo":[1]}}\n']
