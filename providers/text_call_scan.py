"""The answer cut into prose and call blocks as it streams (part of `providers.text_calls`).

`Scanner` is fed the answer's pieces and hands its `Sink` the answer in order: prose as soon
as it cannot be the start of a call, and each block of calls when it ends. Text that may still
become a call is held, and given as prose the moment it cannot. Nothing is scanned twice:
each mode goes on from where the last piece stopped, and only a few characters (a marker cut
in two, a fence's first line) wait unconsumed for the next piece. The scanning modes are a
parser's position, not a lifecycle: they stay here, not in `fsm/`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Protocol

from acp_fsm.providers.text_call_args import (
    CallFormat,
    TextCall,
    arguments_call,
    broken_call,
    calls_in,
    decode,
    function_call,
)
from acp_fsm.providers.text_call_json import MAX_NAME_CHARS, JsonScan, Scan
from acp_fsm.providers.types import ToolSpec

TOOL_CALL, END_TOOL_CALL = "<tool_call>", "</tool_call>"
FUNCTION, END_FUNCTION = "<function=", "</function>"
PYTHON_TAG = "<|python_tag|>"
TOOL_CALLS, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
FENCE = "```"
# Fence languages whose block may hold a call: ```json, ```tool_call, or none.
CALL_FENCES = ("", "json", "tool_call")
# A fence's first line longer than this is a code block's title, not a call's.
MAX_FENCE_LINE = 40

_MARKERS = (TOOL_CALL, FUNCTION, PYTHON_TAG, TOOL_CALLS)
_NOTABLE = re.compile(r"[\n<\[]")  # where a marker or a line may start
_NAME = re.compile(r"[\w.-]*")  # a tool's name after <function= or [TOOL_CALLS]
_NAME_CHAR = re.compile(r"[\w.-]")
_CALL_ID = re.compile(r"[A-Za-z0-9]*")


class Sink(Protocol):
    """Where the scanner puts the answer, in order."""

    def prose(self, text: str) -> None:
        """Text that is no call's."""

    def block(self, calls: list[TextCall], text: str) -> None:
        """One block's calls (all of one format), and the block's text."""


class Mode(Enum):
    TEXT = auto()  # prose; `line_start` says whether a line's first character comes next
    FENCE_LINE = auto()  # at ```: its first line says whether the block may hold a call
    CODE = auto()  # inside a code block that is no call: prose up to its closing fence
    OPEN = auto()  # a block's syntax read: spaces, then its JSON (or its next one)
    JSON = auto()  # in a block's JSON
    AFTER = auto()  # after a block's JSON: spaces, then its closing syntax or another JSON
    FUNCTION_NAME = auto()  # after <function=
    FUNCTION_BODY = auto()  # after <function=NAME>, up to </function>
    MISTRAL_HEAD = auto()  # after [TOOL_CALLS]: NAME, [CALL_ID]id, [ARGS]


@dataclass
class Block:
    """The block of calls being read: its text so far, its calls, what ends it."""

    form: CallFormat
    start: int  # where it starts in the answer
    openers: str = "{["  # what its JSON may start with
    close: str = ""  # the syntax that closes it, if any
    more: bool = False  # another call object may follow the last
    fenced: bool = False  # fenced JSON: a block that does not close is a code block
    wrapped: bool = False  # <function=…> inside <tool_call>
    name: str = ""  # the tool, when the syntax names it before the arguments
    parts: list[str] = field(default_factory=list)
    length: int = 0
    calls: list[TextCall] = field(default_factory=list)
    kept: int = 0  # the length up to the end of its last call: the block, if it ends now
    json_from: int = 0  # where in `parts` the JSON being read starts
    body_from: int = 0  # where <function=NAME>'s body starts (a length)


class Scanner:
    """Finds calls in an answer fed piece by piece (`feed`, then `close`)."""

    def __init__(self, tools: Mapping[str, ToolSpec], sink: Sink) -> None:
        self._tools = tools
        self._sink = sink
        self._buf = ""  # what is not consumed yet, from `_at` in the answer
        self._at = 0
        self._i = 0  # the next character of `_buf` to look at
        self._final = False
        self.mode = Mode.TEXT
        self._line_start = True
        self._prev = ""  # the last character consumed
        self._block: Block | None = None
        self._json: JsonScan | None = None
        self._handlers = {
            Mode.TEXT: self._text,
            Mode.FENCE_LINE: self._fence_line,
            Mode.CODE: self._code,
            Mode.OPEN: self._open,
            Mode.JSON: self._in_json,
            Mode.AFTER: self._after,
            Mode.FUNCTION_NAME: self._function_name,
            Mode.FUNCTION_BODY: self._function_body,
            Mode.MISTRAL_HEAD: self._mistral_head,
        }

    def __repr__(self) -> str:
        held = self._block.length if self._block else 0
        return f"<Scanner {self.mode.name} at={self._at + self._i} held={held}>"

    def feed(self, piece: str) -> None:
        self._buf = self._buf[self._i :] + piece  # what was left is a few characters at most
        self._at += self._i
        self._i = 0
        self._run()

    def close(self) -> None:
        """The answer ended: whatever was held is decided."""
        self._final = True
        self._run()
        while self.mode not in (Mode.TEXT, Mode.CODE):
            self._end_block()
            self._run()

    # ---------------------------------------------------------------------- driving

    def _run(self) -> None:
        """Each mode's handler consumes what it can; False: it waits for the next piece."""
        while self._handlers[self.mode]():
            pass

    def _waits(self, literal: str, j: int) -> bool | None:
        """True if `literal` stands at `_buf[j]`, None if the piece ends inside it (more may
        complete it), False if not."""
        if self._buf.startswith(literal, j):
            return True
        rest = self._buf[j : j + len(literal)]
        if not self._final and len(rest) < len(literal) and literal.startswith(rest):
            return None
        return False

    def _prose(self, j: int) -> None:
        if j > self._i:
            self._sink.prose(self._buf[self._i : j])
            self._prev = self._buf[j - 1]
            self._i = j

    def _take(self, j: int) -> None:
        """Hold `_buf[_i:j]` in the block."""
        block = self._held()
        if j > self._i:
            block.parts.append(self._buf[self._i : j])
            block.length += j - self._i
            self._prev = self._buf[j - 1]
            self._i = j

    def _held(self) -> Block:
        assert self._block is not None, "no block is being read"
        return self._block

    def _skip_space(self, j: int, spaces: str = " \t\r\n") -> int:
        buf, n = self._buf, len(self._buf)
        while j < n and buf[j] in spaces:
            j += 1
        return j

    def _held_spaces(self) -> int | None:
        """Hold the spaces that follow in the block: where its text goes on, or None if the
        piece ends first."""
        j = self._skip_space(self._i)
        self._take(j)
        return None if j == len(self._buf) else j

    def _indent(self) -> int | None:
        """At a line's start: its indentation as prose; where its text starts, or None if
        the piece ends first."""
        j = self._skip_space(self._i, " \t")
        self._prose(j)
        return None if j == len(self._buf) else j

    # ------------------------------------------------------------------------- prose

    def _text(self) -> bool:
        buf, n = self._buf, len(self._buf)
        if self._line_start:
            j = self._indent()
            if j is None:
                return False
            started = self._opener(j, line_start=True)
            if started is None:
                return False
            self._line_start = False
            if started:
                return True
        match = _NOTABLE.search(buf, self._i)
        if match is None:
            self._prose(n)
            return False
        j = match.start()
        self._prose(j)
        if buf[j] == "\n":
            self._prose(j + 1)
            self._line_start = True
            return True
        started = self._opener(j, line_start=False)
        if started is None:
            return False
        if not started:
            self._prose(j + 1)
        return True

    def _opener(self, j: int, line_start: bool) -> bool | None:
        """Whether a block starts at `_buf[j]` (started), None if the piece ends too soon."""
        char = self._buf[j]
        for marker in _MARKERS if self._prev != "`" else ():  # `<tool_call>` is quoted
            if marker[0] == char:
                found = self._waits(marker, j)
                if found is None:
                    return None
                if found:
                    self._start_marker(marker, j)
                    return True
        if not line_start:
            return False
        if char == "`":
            found = self._waits(FENCE, j)
            if found:
                self._prose(j)
                self.mode = Mode.FENCE_LINE
            return found
        if char in "{[":
            self._start(Block(CallFormat.BARE_JSON, self._at + j, more=True), j)
            self._json = JsonScan(self._tools)
            self.mode = Mode.JSON
            return True
        return False

    def _start(self, block: Block, j: int) -> None:
        self._prose(j)
        self._block = block

    def _start_marker(self, marker: str, j: int) -> None:
        at = self._at + j
        if marker == TOOL_CALL:
            self._start(Block(CallFormat.HERMES, at, close=END_TOOL_CALL, more=True), j)
        elif marker == FUNCTION:
            self._start(Block(CallFormat.FUNCTION_TAG, at), j)
        elif marker == PYTHON_TAG:
            self._start(Block(CallFormat.PYTHON_TAG, at, openers="{", more=True), j)
        else:
            self._start(Block(CallFormat.MISTRAL, at), j)
        self.mode = Mode.FUNCTION_NAME if marker == FUNCTION else Mode.OPEN
        self._take(j + len(marker))

    # ------------------------------------------------------------------- code fences

    def _fence_line(self) -> bool:
        """At ``` (not consumed): a call's fence if its first line is one of CALL_FENCES."""
        buf, start = self._buf, self._i
        first = start + len(FENCE)
        end = buf.find("\n", first, first + MAX_FENCE_LINE + 1)
        line = buf[first : end if end >= 0 else first + MAX_FENCE_LINE + 1]
        if end >= 0:
            calls = line.strip().lower() in CALL_FENCES
        elif len(line) > MAX_FENCE_LINE or self._final or not _may_become_call_fence(line):
            calls = False
        else:
            return False
        if calls:
            block = Block(CallFormat.FENCED_JSON, self._at + start, close=FENCE, more=True)
            block.fenced = True
            self._start(block, start)
            self._take(end + 1)
            self.mode = Mode.OPEN
        else:
            self._prose(start + len(FENCE))
            self._line_start = False
            self.mode = Mode.CODE
        return True

    def _code(self) -> bool:
        """Inside a code block that holds no call: prose up to a line starting with ```."""
        buf, n = self._buf, len(self._buf)
        if self._line_start:
            j = self._indent()
            found = None if j is None else self._waits(FENCE, j)
            if found is None:
                return False
            self._line_start = False
            if found:
                assert j is not None
                self._prose(j + len(FENCE))
                self.mode = Mode.TEXT
                return True
        end = buf.find("\n", self._i)
        if end < 0:
            self._prose(n)
            return False
        self._prose(end + 1)
        self._line_start = True
        return True

    # ------------------------------------------------------------------- JSON blocks

    def _open(self) -> bool:
        block = self._held()
        j = self._held_spaces()
        if j is None:
            return False
        char = self._buf[j]
        if char in block.openers:
            block.json_from = len(block.parts)
            self._json = JsonScan(None if block.name else self._tools)
            self.mode = Mode.JSON
            return True
        if block.form is CallFormat.HERMES and not block.calls:
            found = self._waits(FUNCTION, j)
            if found is None:
                return False
            if found:
                block.wrapped, block.more = True, False
                self._take(j + len(FUNCTION))
                self.mode = Mode.FUNCTION_NAME
                return True
        if block.form is CallFormat.MISTRAL and not block.calls and _NAME_CHAR.match(char):
            self.mode = Mode.MISTRAL_HEAD
            return True
        self._give_up()
        return True

    def _in_json(self) -> bool:
        block, scan = self._block, self._json
        assert block is not None and scan is not None
        j, verdict = scan.scan(self._buf, self._i)
        self._take(j)
        if verdict is Scan.MORE:
            return False
        if verdict is Scan.DEAD:
            self._give_up()
            return True
        calls = self._read(block, "".join(block.parts[block.json_from :]), scan)
        if calls is None:
            self._give_up()
            return True
        block.calls += calls
        block.kept = block.length
        if block.close or block.more:
            self.mode = Mode.AFTER
        else:
            self._end_block()
        return True

    def _read(self, block: Block, text: str, scan: JsonScan) -> list[TextCall] | None:
        """The calls of a block's JSON that just ended."""
        form = CallFormat.MISTRAL_ARGS if block.name else block.form
        try:
            value = decode(text)
        except ValueError as exc:
            if form in (CallFormat.FENCED_JSON, CallFormat.BARE_JSON):
                return None
            if block.name:
                return [broken_call(block.name, text, str(exc), form)]
            if len(scan.names_seen) == 1:  # one call, of an offered tool: say what is wrong
                return [broken_call(scan.names_seen[0], text, str(exc), form)]
            return None
        if block.name:
            call = arguments_call(block.name, value, self._tools, form)
            return None if call is None else [call]
        return calls_in(value, self._tools, form)

    def _after(self) -> bool:
        """After a call's JSON: the block's closing syntax, another call, or its end."""
        block = self._held()
        j = self._held_spaces()
        if j is None:
            return False
        if block.close:
            found = self._waits(block.close, j)
            if found is None:
                return False
            if found:
                self._take(j + len(block.close))
                block.kept = block.length
                self._end_block()
                return True
        char = self._buf[j]
        # Another call: after `;` or `,`, or, inside a syntax that closes, right away.
        if block.more and (char in ";," or (char == "{" and block.close)):
            self._take(j + (char != "{"))
            self.mode = Mode.OPEN
            return True
        self._give_up()
        return True

    # -------------------------------------------------------- <function=NAME> blocks

    def _function_name(self) -> bool:
        block = self._held()
        buf = self._buf
        end = _name_end(buf, self._i)
        if end == len(buf) and end - self._i <= MAX_NAME_CHARS:
            return self._more()
        name = buf[self._i : end]
        if end - self._i > MAX_NAME_CHARS or buf[end] != ">" or name not in self._tools:
            self._give_up()
            return True
        block.name = name
        self._take(end + 1)
        block.body_from = block.length
        self.mode = Mode.FUNCTION_BODY
        return True

    def _function_body(self) -> bool:
        """Up to </function> (or, inside <tool_call>, the tag that closes it)."""
        block = self._held()
        buf, n = self._buf, len(self._buf)
        ends = [END_FUNCTION, END_TOOL_CALL] if block.wrapped else [END_FUNCTION]
        found = [(at, tag) for tag in ends if (at := buf.find(tag, self._i)) >= 0]
        if not found:
            keep = 0 if self._final else max(map(len, ends)) - 1  # a tag cut in two waits
            self._take(max(self._i, n - keep))
            return False
        at, tag = min(found)
        self._take(at)
        self._function_ends()
        self._take(at + len(tag))
        block.kept = block.length
        self.mode = Mode.AFTER
        if tag == END_FUNCTION and block.wrapped:
            block.close = END_TOOL_CALL
        else:
            self._end_block()
        return True

    def _function_ends(self) -> None:
        block = self._held()
        body = "".join(block.parts)[block.body_from :]
        block.calls.append(function_call(block.name, body, self._tools))

    # -------------------------------------------------- [TOOL_CALLS]NAME[ARGS]{…}

    def _mistral_head(self) -> bool:
        """NAME, an optional [CALL_ID]id, an optional [ARGS], then the arguments' {."""
        buf, i, n = self._buf, self._i, len(self._buf)
        j = _name_end(buf, i)
        if j == n and j - i <= MAX_NAME_CHARS:
            return self._more()
        name = buf[i:j]
        if j - i > MAX_NAME_CHARS or name not in self._tools:
            self._give_up()
            return True
        found = self._waits(CALL_ID, j)
        if found:
            j = _run_end(_CALL_ID, buf, j + len(CALL_ID))
            found = None if j == n and not self._final else self._waits(ARGS, j)
        else:
            found = found if found is None else self._waits(ARGS, j)
        if found is None:
            return False
        j += len(ARGS) if found else 0
        if j == n and not self._final:
            return False
        if j == n or buf[j] != "{":
            self._give_up()
            return True
        self._held().name = name
        self._take(j)
        self.mode = Mode.OPEN
        return True

    def _more(self) -> bool:
        """The piece ended too soon: wait for more, or, at the answer's end, give up."""
        if self._final:
            self._give_up()
        return self._final

    # ------------------------------------------------------------------ block's end

    def _end_block(self) -> None:
        """The block ends with its last call (prose what followed it), or, with none, is
        prose; a fenced block that does not close is a code block, unless the answer ends."""
        block = self._held()
        if self.mode is Mode.FUNCTION_BODY:  # the answer ended inside it
            self._function_ends()
            block.kept = block.length
        if not block.calls:
            self._give_up()
            return
        text = "".join(block.parts)
        span = (block.start, block.start + block.kept)
        self._sink.block([call._replace(span=span) for call in block.calls], text[: block.kept])
        self._released(text[block.kept :], Mode.TEXT)

    def _give_up(self) -> None:
        """What the block held is no call (what it held after its last call, if it has one);
        scanning goes on from here."""
        block = self._held()
        if block.calls and not (block.fenced and not self._final):
            self._end_block()
            return
        self._released("".join(block.parts), Mode.CODE if block.fenced else Mode.TEXT)

    def _released(self, text: str, mode: Mode) -> None:
        if text:
            self._sink.prose(text)
        newline = text.rfind("\n")
        self._line_start = newline >= 0 and not text[newline + 1 :].strip(" \t")
        self._block = self._json = None
        self.mode = mode


def _may_become_call_fence(line: str) -> bool:
    """Whether a fence's first line, cut short, may still end as one of CALL_FENCES."""
    word = line.strip().lower()
    if not word:
        return True
    if line[-1].isspace():  # the word is complete: anything more after a space is no call's
        return word in CALL_FENCES
    return any(lang.startswith(word) for lang in CALL_FENCES)


def _name_end(text: str, i: int) -> int:
    return _run_end(_NAME, text, i)


def _run_end(run: re.Pattern[str], text: str, i: int) -> int:
    """Where the run of `run`'s characters from `text[i]` ends (`run` matches empty too)."""
    match = run.match(text, i)
    return match.end() if match else i
