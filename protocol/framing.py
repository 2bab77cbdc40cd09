"""Newline-delimited framing, sans-IO: bytes in, complete lines out.

A line longer than the limit is not buffered: the framer reports it once as `Overlong` and skips
input up to the next newline, so one oversized message costs an error reply, not the process.
"""

from __future__ import annotations

# Largest line (without its newline) accepted from the peer. Editors embed whole files in prompts;
# 64 MiB is far above any real message while still bounding memory.
MAX_LINE_BYTES = 64 * 1024 * 1024
HEAD_BYTES = 256  # of an overlong line, kept to say what it was


class Overlong:
    """A line exceeded the limit; `size` is how many of its bytes were seen before giving up,
    `head` its first `HEAD_BYTES` (not part of equality: a marker is its size)."""

    __slots__ = ("head", "size")

    def __init__(self, size: int, head: bytes = b"") -> None:
        self.size = size
        self.head = head

    def __repr__(self) -> str:
        return f"Overlong({self.size})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Overlong) and other.size == self.size

    def __hash__(self) -> int:
        return hash(("Overlong", self.size))


class LineFramer:
    """Split a byte stream on b"\\n". Blank lines are dropped; a trailing b"\\r" is kept (JSON
    treats it as whitespace)."""

    __slots__ = ("_buffer", "_discarding", "_limit", "_scanned")

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer already known to hold no newline
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes | Overlong]:
        """Add `data`; return the lines (or overlong markers) it completes, in order."""
        out: list[bytes | Overlong] = []
        buffer = self._buffer
        buffer += data
        start = 0
        while True:
            newline = buffer.find(b"\n", max(start, self._scanned))
            if newline < 0:
                break
            if self._discarding:
                self._discarding = False
            elif newline - start > self._limit:
                out.append(Overlong(newline - start, bytes(buffer[start : start + HEAD_BYTES])))
            elif not buffer[start:newline].strip():
                pass
            else:
                out.append(bytes(buffer[start:newline]))
            start = newline + 1
            self._scanned = start
        if start:
            del buffer[:start]
        self._scanned = len(buffer)
        if len(buffer) > self._limit:
            if not self._discarding:
                out.append(Overlong(len(buffer), bytes(buffer[:HEAD_BYTES])))
                self._discarding = True
            buffer.clear()
            self._scanned = 0
        return out

    def close(self) -> bytes | None:
        """End of input: return an unterminated last line, if there is one worth parsing."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        if self._discarding or not rest.strip():
            return None
        return rest

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line."""
        return len(self._buffer)
