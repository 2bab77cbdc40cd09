"""Where the text-call scanner stands in the answer, and the block it holds (part of
`providers.text_calls`).

`Cursor` is the scanner's state — the unconsumed piece, the mode, the block of calls being
read — and the bookkeeping every mode's reader shares: prose handed on at once, text held in
the block, the block ended as calls or released as prose. The readers are plain functions
over it: the core loop, prose and JSON blocks in `text_call_scan`, code fences in
`text_call_fence`, the syntaxes that name their tool first in `text_call_named`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Protocol

from acp_fsm.providers.text_call_args import CallFormat, TextCall
from acp_fsm.providers.text_call_json import JsonScan
from acp_fsm.providers.types import ToolSpec

TOOL_CALL, END_TOOL_CALL = "<tool_call>", "</tool_call>"
FUNCTION, END_FUNCTION = "<function=", "</function>"
PYTHON_TAG = "<|python_tag|>"
TOOL_CALLS, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
FENCE = "```"


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


class Cursor:
    """The scanner's position in the answer, and what it holds there."""

    def __init__(self, tools: Mapping[str, ToolSpec], sink: Sink) -> None:
        self.tools = tools
        self.sink = sink
        self.buf = ""  # what is not consumed yet, from `at` in the answer
        self.at = 0
        self.i = 0  # the next character of `buf` to look at
        self.final = False  # the answer has ended: nothing waits for more
        self.mode = Mode.TEXT
        self.line_start = True
        self.prev = ""  # the last character consumed
        self.block: Block | None = None
        self.json: JsonScan | None = None

    def waits(self, literal: str, j: int) -> bool | None:
        """True if `literal` stands at `buf[j]`, None if the piece ends inside it (more may
        complete it), False if not."""
        if self.buf.startswith(literal, j):
            return True
        rest = self.buf[j : j + len(literal)]
        if not self.final and len(rest) < len(literal) and literal.startswith(rest):
            return None
        return False

    def prose(self, j: int) -> None:
        """Hand `buf[i:j]` on as prose."""
        if j > self.i:
            self.sink.prose(self.buf[self.i : j])
            self.prev = self.buf[j - 1]
            self.i = j

    def take(self, j: int) -> None:
        """Hold `buf[i:j]` in the block."""
        block = self.held()
        if j > self.i:
            block.parts.append(self.buf[self.i : j])
            block.length += j - self.i
            self.prev = self.buf[j - 1]
            self.i = j

    def held(self) -> Block:
        assert self.block is not None, "no block is being read"
        return self.block

    def start(self, block: Block, j: int) -> None:
        """`block` starts at `buf[j]`: what comes before it is prose."""
        self.prose(j)
        self.block = block

    def skip_space(self, j: int, spaces: str = " \t\r\n") -> int:
        buf, n = self.buf, len(self.buf)
        while j < n and buf[j] in spaces:
            j += 1
        return j

    def held_spaces(self) -> int | None:
        """Hold the spaces that follow in the block: where its text goes on, or None if the
        piece ends first."""
        j = self.skip_space(self.i)
        self.take(j)
        return None if j == len(self.buf) else j

    def indent(self) -> int | None:
        """At a line's start: its indentation as prose; where its text starts, or None if
        the piece ends first."""
        j = self.skip_space(self.i, " \t")
        self.prose(j)
        return None if j == len(self.buf) else j

    def more(self) -> bool:
        """The piece ended too soon: wait for more, or, at the answer's end, give up."""
        if self.final:
            self.give_up()
        return self.final

    def end_block(self) -> None:
        """The block ends with its last call (prose what followed it), or, with none, is
        prose; a fenced block that does not close is a code block, unless the answer ends."""
        block = self.held()
        if not block.calls:
            self.give_up()
            return
        text = "".join(block.parts)
        span = (block.start, block.start + block.kept)
        self.sink.block([call._replace(span=span) for call in block.calls], text[: block.kept])
        self._released(text[block.kept :], Mode.TEXT)

    def give_up(self) -> None:
        """What the block held is no call (what it held after its last call, if it has one);
        scanning goes on from here."""
        block = self.held()
        if block.calls and not (block.fenced and not self.final):
            self.end_block()
            return
        self._released("".join(block.parts), Mode.CODE if block.fenced else Mode.TEXT)

    def _released(self, text: str, mode: Mode) -> None:
        if text:
            self.sink.prose(text)
        newline = text.rfind("\n")
        self.line_start = newline >= 0 and not text[newline + 1 :].strip(" \t")
        self.block = self.json = None
        self.mode = mode
