"""The process edge: claim stdout for protocol frames before anything else can write to it.

ACP's stdout carries JSON-RPC only. `claim_stdout` moves the real stdout to a private,
non-inheritable descriptor and points fd 1 (and `sys.stdout`) at stderr, so a stray `print()`
in a library or the output of a child process lands in the log, never in the protocol stream.
Only `os` and `sys` are imported here: this runs before the first byte is read.
"""

from __future__ import annotations

import os
import sys


def claim_stdout() -> int:
    """Return a private duplicate of fd 1 for protocol output and redirect fd 1 to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)  # os.dup creates a non-inheritable descriptor
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def read_line_blocking(fd: int, limit: int) -> tuple[bytes | None, bytes]:
    """Read from `fd` until the first newline, EOF or `limit` bytes.

    Returns (first line without its newline, or None if none was completed; all bytes read after
    that line). Used once at startup, before the event loop exists.
    """
    buffer = bytearray()
    while True:
        newline = buffer.find(b"\n")
        if newline >= 0:
            return bytes(buffer[:newline]), bytes(buffer[newline + 1 :])
        if len(buffer) > limit:
            return None, bytes(buffer)
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None, bytes(buffer)
        buffer += chunk


def write_all(fd: int, data: bytes) -> None:
    """Blocking write of all of `data` (startup path only)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
