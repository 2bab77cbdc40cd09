"""The process edge: claim stdout for protocol frames before anything else can write to it.

ACP's stdout carries JSON-RPC only. `claim_stdout` moves the real stdout to a private,
non-inheritable descriptor and points fd 1 (and `sys.stdout`) at stderr, so a stray `print()`
in a library or the output of a child process lands in the log, never in the protocol stream.
Only `os` and `sys` are imported here: this runs before the first byte is read.
"""

from __future__ import annotations

import os
import stat
import sys


class StderrWriter:
    """`sys.stderr` (and `sys.stdout`) of the serving process: a text stream on fd 2 that can
    neither raise nor block.

    When the editor quits, all three pipes close together and every write to stderr fails
    (EPIPE; EIO once the terminal is gone). A log line must not be what stops the shutdown, so
    the first such failure turns this writer off for good. When stderr is a pipe nobody reads,
    a full pipe drops the line instead of stalling the agent (the pipe is made non-blocking; a
    terminal or a file is left alone, since other processes share it).
    """

    encoding = "utf-8"
    errors = "backslashreplace"

    def __init__(self, fd: int = 2) -> None:
        self._fd = fd
        self.broken = False
        self.dropped = 0  # lines lost to a full pipe
        self._cut = False  # the last line was written in part
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.set_blocking(fd, False)
        except OSError:
            self.broken = True

    def __repr__(self) -> str:
        state = "broken" if self.broken else "open"
        return f"<StderrWriter fd={self._fd} {state} dropped={self.dropped}>"

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        data = text.encode("utf-8", "backslashreplace")
        if self._cut:
            data = b"\n" + data  # end the line a full pipe cut short
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
            self._cut = False
        except BlockingIOError:
            self.dropped += 1
            self._cut = len(view) < len(data)
        except OSError:  # EPIPE, EIO, EBADF: nobody will ever read it
            self.broken = True
        return len(text)

    def flush(self) -> None:
        """Every write is already unbuffered."""

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        try:
            return os.isatty(self._fd)
        except OSError:
            return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False


def claim_stdout() -> int:
    """Return a private duplicate of fd 1 for protocol output, redirect fd 1 to stderr, and
    make `sys.stdout` and `sys.stderr` a `StderrWriter`."""
    sys.stdout.flush()
    sys.stderr.flush()
    protocol_fd = os.dup(1)  # os.dup creates a non-inheritable descriptor
    os.dup2(2, 1)
    sys.stdout = sys.stderr = StderrWriter(2)  # type: ignore[assignment]
    return protocol_fd


def read_line_blocking(fd: int, limit: int) -> tuple[bytes | None, bytes, bool]:
    """Read from `fd` until the first newline, EOF or `limit` bytes.

    Returns (first line without its newline, or None if none was completed; all bytes read after
    that line; whether input ended). Used once at startup, before the event loop exists. On a
    terminal an EOF (Ctrl+D) is not sticky, so the caller must not read again after it.
    """
    buffer = bytearray()
    while True:
        newline = buffer.find(b"\n")
        if newline >= 0:
            return bytes(buffer[:newline]), bytes(buffer[newline + 1 :]), False
        if len(buffer) > limit:
            return None, bytes(buffer), False
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:  # EIO: the terminal is gone
            chunk = b""
        if not chunk:
            return None, bytes(buffer), True
        buffer += chunk


def write_all(fd: int, data: bytes) -> None:
    """Blocking write of all of `data` (startup path only)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
