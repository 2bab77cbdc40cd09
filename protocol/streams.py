"""asyncio adapters between file descriptors and the connection.

Input is pushed, not pulled: every chunk read from the peer goes straight to a callback, so no
handler can ever hold up reading. Pipes and character devices use the event loop's pipe
transports; a regular file (input redirected from disk) falls back to a reader thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import threading
from collections.abc import Callable

import structlog

log = structlog.get_logger("protocol.streams")

ChunkSink = Callable[[bytes], None]
EofSink = Callable[[], None]


def _is_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


class _ReadProtocol(asyncio.Protocol):
    def __init__(self, on_data: ChunkSink, on_eof: EofSink) -> None:
        self._on_data = on_data
        self._on_eof = on_eof

    def data_received(self, data: bytes) -> None:
        self._on_data(data)

    def eof_received(self) -> bool:
        self._on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_eof()


async def start_reading(fd: int, on_data: ChunkSink, on_eof: EofSink) -> Callable[[], None]:
    """Deliver chunks from `fd` to `on_data` until EOF, then call `on_eof` (possibly twice;
    the receiver must be idempotent). Returns a function that stops reading."""
    loop = asyncio.get_running_loop()
    if not _is_file(fd):
        pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: _ReadProtocol(on_data, on_eof), pipe
            )
        except ValueError:
            pass
        else:
            return transport.close
    stop = threading.Event()

    def pump() -> None:
        try:
            while not stop.is_set():
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                loop.call_soon_threadsafe(on_data, chunk)
        except OSError as exc:
            log.warning("stdin_read_failed", error=str(exc))
        finally:
            if not loop.is_closed():
                loop.call_soon_threadsafe(on_eof)

    threading.Thread(target=pump, name="acp-stdin", daemon=True).start()
    return stop.set


# Protocol output held in memory for an editor that reads slowly: above this, `congested` is
# true and producers that await `drain` (a streaming turn, a replay) wait until the buffer is
# down to a quarter of it. What one message adds on top is the only other growth. Larger is
# slower, not faster: the transport moves its whole buffer after each partial pipe write
# (bench/throughput.py: 1 MiB costs 40 % of the update rate).
OUTPUT_BUFFER_LIMIT_BYTES = 64 * 1024
# Frames gathered into one write at most (see `Output`): a quarter of the limit, so that a
# producer learns of congestion within a quarter of the limit.
COALESCE_BYTES = OUTPUT_BUFFER_LIMIT_BYTES // 4


class Output:
    """The single writer of protocol frames. `write` never blocks and never interleaves lines
    (asyncio runs one callback at a time); `drain` applies back-pressure to fast producers.

    On a pipe, the frames written during one pass of the event loop leave in one write at its
    end (or as soon as `COALESCE_BYTES` wait): a turn relaying a chunk of deltas makes one
    system call, not one per update. Order is kept, and nothing waits longer than the code
    already running."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        self._on_lost = on_lost
        self._transport: asyncio.WriteTransport | None = None
        self._fd: int | None = None
        self._paused: asyncio.Future[None] | None = None
        self._waiting: list[bytes] = []  # frames of this pass of the loop, not yet sent
        self._waiting_bytes = 0
        self.lost = False

    async def open(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        if not _is_file(fd):
            pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
            try:
                self._transport, _ = await loop.connect_write_pipe(
                    lambda: _WriteProtocol(self), pipe
                )
                self._transport.set_write_buffer_limits(high=OUTPUT_BUFFER_LIMIT_BYTES)
                return
            except ValueError:
                pass
        self._fd = fd

    def write(self, data: bytes) -> None:
        if self.lost:
            return
        if self._transport is not None:
            if not self._waiting:
                asyncio.get_running_loop().call_soon(self._send)
            self._waiting.append(data)
            self._waiting_bytes += len(data)
            if self._waiting_bytes >= COALESCE_BYTES:
                self._send()  # the transport sees it now, and may pause the producer
            return
        assert self._fd is not None, "Output.open() was not awaited"
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            self._lose()

    def close(self) -> None:
        """Send what waits and close the transport (it finishes its buffer if it can; the
        descriptor stays open)."""
        self._send()
        if self._transport is not None:
            self._transport.close()

    def _send(self) -> None:
        if not self._waiting:
            return  # sent early, or lost
        data = self._waiting[0] if len(self._waiting) == 1 else b"".join(self._waiting)
        self._waiting.clear()
        self._waiting_bytes = 0
        if not self.lost and self._transport is not None:
            self._transport.write(data)

    @property
    def congested(self) -> bool:
        """More than `OUTPUT_BUFFER_LIMIT_BYTES` wait for the peer to read them."""
        return self._paused is not None

    async def drain(self) -> None:
        """Wait until the output is no longer congested (at once when it is not)."""
        if self._paused is not None:
            await asyncio.shield(self._paused)

    async def flush(self, within: float) -> None:
        """Wait at most `within` seconds until everything written has reached the pipe."""
        self._send()
        transport = self._transport
        if transport is None or self.lost or not transport.get_write_buffer_size():
            return
        transport.set_write_buffer_limits(high=0)  # pauses us until the buffer is empty
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.drain(), within)

    def _lose(self) -> None:
        if not self.lost:
            self.lost = True
            self._waiting.clear()
            self._resume()
            self._on_lost()

    def _pause(self) -> None:
        if self._paused is None:
            self._paused = asyncio.get_running_loop().create_future()

    def _resume(self) -> None:
        paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self, output: Output) -> None:
        self._output = output

    def pause_writing(self) -> None:
        self._output._pause()

    def resume_writing(self) -> None:
        self._output._resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self._output._lose()
