"""Server-sent events, sans-IO: bytes in, events out (WHATWG HTML "event stream" parsing).

Lines end with \\n, \\r\\n or \\r (a \\r at the end of a chunk waits for the next one, in case
\\n follows); a blank line dispatches the event; lines starting with ":" are comments; a field is
`name:value` with one optional space after the colon; several data lines join with \\n. UTF-8 is
decoded incrementally, so a character split across network chunks survives. There is no line
length limit below `MAX_EVENT_CHARS`, which only guards memory against a runaway stream.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any, NamedTuple

import orjson

# A single event larger than this is treated as a broken stream. Real events are at most a few
# hundred KiB (a big tool-call argument fragment); this only bounds memory.
MAX_EVENT_CHARS = 64 * 1024 * 1024

_LINE_END = re.compile(r"\r\n|\r|\n")


class SseError(Exception):
    """The event stream is malformed beyond recovery (an event over the size limit)."""


class SseEvent(NamedTuple):
    """One dispatched event (a NamedTuple: one is made per streamed delta)."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


def json_data(event: SseEvent) -> Any:
    """The event's data parsed as JSON; ValueError if it is not JSON. orjson reads it (a
    third of the standard library's time per delta); what orjson refuses but Python's `json`
    accepts (NaN, Infinity, 1e400, lone surrogates) is read by `json`. orjson reads an integer
    beyond 64 bits as a float: no provider field is one."""
    try:
        return orjson.loads(event.data)
    except orjson.JSONDecodeError:
        return json.loads(event.data)


class SseDecoder:
    """Incremental event-stream parser."""

    __slots__ = (
        "_cr",
        "_data",
        "_decoder",
        "_event",
        "_id",
        "_pieces",
        "_retry",
        "_size",
        "_started",
        "_waiting",
    )

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []  # the incomplete current line, in pieces (no rescans)
        self._waiting = 0  # characters in _pieces
        self._cr = False  # the last chunk ended with \r: a line ended, \n may follow
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._size = 0
        self._started = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse `chunk`; return the events it completes."""
        return self._lines(self._decoder.decode(chunk))

    def close(self) -> list[SseEvent]:
        """End of stream. Per the standard an event without its blank line is discarded, but a
        trailing line is still parsed (a complete event it ends is returned)."""
        events = self._lines(self._decoder.decode(b"", final=True))
        self._cr = False
        if self._pieces:
            self._apply([self._take("")], events)
        return events

    def _take(self, tail: str) -> str:
        """The current line: what was waiting plus `tail`."""
        if not self._pieces:
            return tail
        self._pieces.append(tail)
        line = "".join(self._pieces)
        self._pieces.clear()
        self._waiting = 0
        return line

    def _lines(self, text: str) -> list[SseEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._cr:
            self._cr = False
            if text[0] == "\n":
                text = text[1:]  # the second half of a \r\n split across chunks
        if "\r" in text:
            lines = _LINE_END.split(text)
            self._cr = text[-1:] == "\r"  # a \n may begin the next chunk
        else:
            lines = text.split("\n")  # the common case, a third of the regex's cost
        rest = lines.pop()  # after the last line end: the start of an incomplete line
        events: list[SseEvent] = []
        if lines:
            if self._pieces:
                lines[0] = self._take(lines[0])
            self._apply(lines, events)
        if rest:
            self._pieces.append(rest)
            self._waiting += len(rest)
            if self._waiting + self._size > MAX_EVENT_CHARS:
                raise SseError(f"event larger than {MAX_EVENT_CHARS} characters")
        return events

    def _apply(self, lines: list[str], events: list[SseEvent]) -> None:
        """Apply complete lines; the events they dispatch go to `events`. Data, blank and event
        lines (nearly all of a stream) are handled here, in the loop; other fields by
        `_field`."""
        data = self._data
        for line in lines:
            if line.startswith("data:"):  # most lines, so tested first
                value = line[6:] if line[5:6] == " " else line[5:]
                data.append(value)
                self._size += len(value) + 1
                if self._size > MAX_EVENT_CHARS:
                    raise SseError(f"event larger than {MAX_EVENT_CHARS} characters")
            elif not line:
                if data:
                    # tuple.__new__: the NamedTuple without the Python function its class
                    # calls to make one (as costly as the rest of the event's parsing)
                    events.append(
                        _new(
                            SseEvent,
                            (self._event or "message", "\n".join(data), self._id, self._retry),
                        )
                    )
                    data = self._data = []
                    self._size = 0
                self._event = ""
            elif line.startswith("event:"):  # before every event of the Responses and Messages APIs
                self._event = line[7:] if line[6:7] == " " else line[6:]
            elif line[0] != ":":
                self._field(line)

    def _field(self, line: str) -> None:
        """Apply a line that is neither data, blank nor a comment."""
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":  # "data" with no colon: an empty data line
            self._apply(["data:"], [])
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)


_new = tuple.__new__
