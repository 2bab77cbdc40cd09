"""What the tool keeps of an agent's output, sans-IO: chunks of stdout and stderr in, the JSON
values for the checks out, and bounded evidence beside counts of the whole.

An agent under test may write anything, as much as it likes (a debug logger on stdout, a line
that never ends): every buffer here has a limit. Stdout is cut into lines by the runtime's own
framer, no line held past `MESSAGE_LIMIT` (a longer one is counted and its head kept); the
messages kept for the checks stop at `KEPT_MESSAGES` or `KEPT_BYTES` (`Flood`); the evidence
is the last `RECENT_LINES` lines, the first `STRAYS_SHOWN` lines that are not JSON-RPC, each
kept to `LINE_HEAD` bytes, and the last `STDERR_KEPT` bytes of stderr."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from acp_fsm.devkit.editor.link import is_jsonrpc
from acp_fsm.protocol.framing import LineFramer, Overlong

MIB: Final = 1 << 20
READ_CHUNK: Final = 64 * 1024  # one read of a pipe, and the most its reader buffers ahead
# The longest stdout line read as a message: far above anything a check makes an agent write
# (initialize's answer, a streamed chunk: kilobytes), low enough that four checks at once,
# each with a line half read, stay within tens of MiB.
MESSAGE_LIMIT: Final = 8 * MIB
# The messages kept for one agent process (its checks look back over them): a check's session
# writes tens; an agent past either limit is flooding, and the tool stops reading it.
KEPT_MESSAGES: Final = 5_000
KEPT_BYTES: Final = 16 * MIB
LINE_HEAD: Final = 1024  # bytes kept of a line shown as evidence (it is clipped shorter)
RECENT_LINES: Final = 20  # the transcript's tail kept, lines written and read
STRAYS_SHOWN: Final = 20  # lines shown of those that are not JSON-RPC, with their context
STDERR_KEPT: Final = 16 * 1024  # the end of stderr kept
_JSON_STARTS: Final = (b"{", b"[")  # a line starting otherwise is not a message: not parsed


class Flood(Exception):
    """The agent wrote more messages than the tool keeps for one check."""


@dataclass(frozen=True, slots=True)
class Line:
    """A line as kept: `arrow` is ">" (written to the agent) or "<" (read), `head` its first
    `LINE_HEAD` bytes, `size` its length; `overlong`: longer than `MESSAGE_LIMIT`, not read
    (its size is then what was seen before the tool gave up on it)."""

    arrow: str
    head: bytes
    size: int
    overlong: bool = False

    @classmethod
    def of(cls, arrow: str, data: bytes) -> Line:
        return cls(arrow, data[:LINE_HEAD], len(data))


class Strays:
    """The stdout lines that are not JSON-RPC 2.0 messages: counts, and the first
    `STRAYS_SHOWN`, each after the last write that came before it (shown once)."""

    def __init__(self) -> None:
        self.count = 0
        self.overlong = 0  # of them, lines longer than `MESSAGE_LIMIT`
        self.shown: list[Line] = []
        self._context: Line | None = None  # the last line written, not shown yet

    def wrote(self, line: Line) -> None:
        self._context = line

    def add(self, line: Line) -> None:
        self.count += 1
        self.overlong += line.overlong
        if len(self.shown) >= STRAYS_SHOWN:
            return
        if self._context is not None:
            self.shown.append(self._context)
            self._context = None
        if len(self.shown) < STRAYS_SHOWN:
            self.shown.append(line)


class Tail:
    """The last `STDERR_KEPT` bytes of a stream, and the counts of all of it."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.bytes = 0
        self.lines = 0

    def add(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        self.lines += chunk.count(b"\n")
        self.kept += chunk[-STDERR_KEPT:]
        del self.kept[:-STDERR_KEPT]


class Output:
    """One agent process's output as the tool keeps it (see the module docstring)."""

    def __init__(self, message_limit: int = MESSAGE_LIMIT) -> None:
        self.lines = 0  # stdout lines read, blank ones aside
        self.bytes = 0  # all of stdout
        self.kept = 0  # JSON values kept for the checks
        self.kept_bytes = 0
        self.recent: deque[Line] = deque(maxlen=RECENT_LINES)
        self.strays = Strays()
        self.stderr = Tail()
        self._framer = LineFramer(message_limit)

    def __repr__(self) -> str:
        return (
            f"<Output lines={self.lines} kept={self.kept} strays={self.strays.count} "
            f"stderr={self.stderr.bytes}>"
        )

    def wrote(self, data: bytes) -> None:
        """Bytes written to the agent: their lines join the transcript's tail."""
        pieces = data.split(b"\n")
        if data.endswith(b"\n"):
            pieces.pop()
        for piece in pieces[-RECENT_LINES:]:
            line = Line.of(">", piece)
            self.recent.append(line)
            self.strays.wrote(line)

    def read(self, chunk: bytes) -> Iterator[Any]:
        """A chunk of stdout: the JSON values of the lines it completes, in order (Flood once
        more than the tool keeps was written)."""
        self.bytes += len(chunk)
        for item in self._framer.feed(chunk):
            yield from self._line(item)

    def end(self) -> Iterator[Any]:
        """The end of stdout: the value of a last line without its newline."""
        rest = self._framer.close()
        if rest is not None:
            yield from self._line(rest)

    def _line(self, item: bytes | Overlong) -> Iterator[Any]:
        self.lines += 1
        if isinstance(item, Overlong):
            line = Line("<", item.head[:LINE_HEAD], item.size, overlong=True)
            self.recent.append(line)
            self.strays.add(line)
            return
        line = Line.of("<", item)
        self.recent.append(line)
        value = _parsed(item)
        if value is _NOT_JSON or not is_jsonrpc(value):
            self.strays.add(line)
        if value is _NOT_JSON:
            return
        self.kept += 1
        self.kept_bytes += len(item)
        if self.kept > KEPT_MESSAGES or self.kept_bytes > KEPT_BYTES:
            raise Flood(
                f"the agent wrote more than {KEPT_MESSAGES:,} messages or {KEPT_BYTES // MIB} "
                f"MiB of them ({self.kept:,}, {self.kept_bytes:,} bytes), more than the tool "
                "keeps for one check: it stopped reading the agent"
            )
        yield value


_NOT_JSON: Final = object()


def _parsed(line: bytes) -> Any:
    """The JSON value of a line, or `_NOT_JSON` (a line that cannot start an object or an
    array is not parsed: a log line costs no exception)."""
    if line.lstrip()[:1] not in _JSON_STARTS:
        return _NOT_JSON
    try:
        return json.loads(line)
    except ValueError:
        return _NOT_JSON
