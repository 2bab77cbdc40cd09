"""The answer cut into prose and call blocks as it streams (part of `providers.text_calls`).

`Scanner` is fed the answer's pieces and hands its `Sink` the answer in order: prose as soon
as it cannot be the start of a call, and each block of calls when it ends. Text that may still
become a call is held, and given as prose the moment it cannot. Nothing is scanned twice:
each mode goes on from where the last piece stopped, and only a few characters (a marker cut
in two, a fence's first line) wait unconsumed for the next piece. The scanning modes are a
parser's position, not a lifecycle: they stay here, not in `fsm/`.

Each mode has a reader, a function over the scanner's `Cursor` (`text_call_cursor`: its
position and the block it holds). Here: the loop, prose (where a block starts) and the JSON
of a block; code fences in `text_call_fence`; `<function=NAME>` and Mistral's
`[TOOL_CALLS]NAME` in `text_call_named`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from acp_fsm.providers.text_call_args import (
    CallFormat,
    TextCall,
    arguments_call,
    broken_call,
    calls_in,
    decode,
)
from acp_fsm.providers.text_call_cursor import (
    END_TOOL_CALL,
    FENCE,
    FUNCTION,
    PYTHON_TAG,
    TOOL_CALL,
    TOOL_CALLS,
    Block,
    Cursor,
    Mode,
    Sink,
)
from acp_fsm.providers.text_call_fence import code, fence_line
from acp_fsm.providers.text_call_json import JsonScan, Scan
from acp_fsm.providers.text_call_named import (
    function_body,
    function_cut_off,
    function_name,
    mistral_head,
    starts_name,
)
from acp_fsm.providers.types import ToolSpec

_MARKERS = (TOOL_CALL, FUNCTION, PYTHON_TAG, TOOL_CALLS)
_NOTABLE = re.compile(r"[\n<\[]")  # where a marker or a line may start
_TAG_LINE = re.compile(r"<([A-Za-z][\w-]*)>[ \t]*\r?\n")  # a tag alone on its line
_TAG_START = re.compile(r"<(?:[A-Za-z][\w-]*(?:>[ \t]*\r?)?)?\Z")  # one, cut by the piece


class Scanner:
    """Finds calls in an answer fed piece by piece (`feed`, then `close`)."""

    def __init__(self, tools: Mapping[str, ToolSpec], sink: Sink) -> None:
        self._cur = Cursor(tools, sink)

    def __repr__(self) -> str:
        cur = self._cur
        held = cur.block.length if cur.block else 0
        return f"<Scanner {cur.mode.name} at={cur.at + cur.i} held={held}>"

    def feed(self, piece: str) -> None:
        cur = self._cur
        cur.buf = cur.buf[cur.i :] + piece  # what was left is a few characters at most
        cur.at += cur.i
        cur.i = 0
        self._run()

    def close(self, cut: bool = False) -> None:
        """The answer ended (`cut`: cut short by its length limit): whatever was held is
        decided. A call whose JSON lacks only its closing brackets at the end of an answer
        that stopped is read with them; in one cut short it was cut, not finished."""
        cur = self._cur
        cur.final = True
        self._run()
        while cur.mode not in (Mode.TEXT, Mode.CODE):
            if cur.mode is Mode.FUNCTION_BODY:
                function_cut_off(cur)
            elif cur.mode is Mode.JSON and not cut and _closed_at_end(cur):
                continue
            cur.end_block()
            self._run()

    def _run(self) -> None:
        """Each mode's reader consumes what it can; False: it waits for the next piece."""
        cur = self._cur
        while _READERS[cur.mode](cur):
            pass


# ---------------------------------------------------------------------------- prose


def _text(cur: Cursor) -> bool:
    buf, n = cur.buf, len(cur.buf)
    if cur.line_start:
        j = cur.indent()
        if j is None:
            return False
        started = _opener(cur, j, line_start=True)
        if started is None:
            return False
        cur.line_start = False
        if started:
            return True
    match = _NOTABLE.search(buf, cur.i)
    if match is None:
        cur.prose(n)
        return False
    j = match.start()
    cur.prose(j)
    if buf[j] == "\n":
        cur.prose(j + 1)
        cur.line_start = True
        return True
    started = _opener(cur, j, line_start=False)
    if started is None:
        return False
    if not started:
        cur.prose(j + 1)
    return True


def _opener(cur: Cursor, j: int, line_start: bool) -> bool | None:
    """Whether a block starts at `buf[j]` (started), None if the piece ends too soon."""
    char = cur.buf[j]
    for marker in _MARKERS if cur.prev != "`" else ():  # `<tool_call>` is quoted
        if marker[0] == char:
            found = cur.waits(marker, j)
            if found is None:
                return None
            if found:
                _start_marker(cur, marker, j)
                return True
    if not line_start:
        return False
    if char == "`":
        found = cur.waits(FENCE, j)
        if found:
            cur.prose(j)
            cur.mode = Mode.FENCE_LINE
        return found
    if char in "{[":
        cur.start(Block(CallFormat.BARE_JSON, cur.at + j, more=True), j)
        cur.json = JsonScan(cur.tools)
        cur.mode = Mode.JSON
        return True
    if char == "<":
        return _wrapper(cur, j)
    return False


def _wrapper(cur: Cursor, j: int) -> bool | None:
    """A tag alone on its line (`<tools>`, `<function_call>`), which a small model may wrap
    its calls written as JSON alone in: a block of JSON alone that its closing tag ends (both
    tags its syntax: never shown with calls); prose when no call follows. None: the piece
    ends inside what may still be such a line."""
    line = _TAG_LINE.match(cur.buf, j)
    if line is None:
        return None if not cur.final and _TAG_START.match(cur.buf, j) else False
    close = f"</{line.group(1)}>"
    cur.start(Block(CallFormat.BARE_JSON, cur.at + j, close=close, more=True), j)
    cur.take(line.end())
    cur.mode = Mode.OPEN
    return True


def _start_marker(cur: Cursor, marker: str, j: int) -> None:
    at = cur.at + j
    if marker == TOOL_CALL:
        cur.start(Block(CallFormat.HERMES, at, close=END_TOOL_CALL, more=True), j)
    elif marker == FUNCTION:
        cur.start(Block(CallFormat.FUNCTION_TAG, at), j)
    elif marker == PYTHON_TAG:
        cur.start(Block(CallFormat.PYTHON_TAG, at, openers="{", more=True), j)
    else:
        cur.start(Block(CallFormat.MISTRAL, at), j)
    cur.mode = Mode.FUNCTION_NAME if marker == FUNCTION else Mode.OPEN
    cur.take(j + len(marker))


# ---------------------------------------------------------------------- JSON blocks


def _open(cur: Cursor) -> bool:
    block = cur.held()
    j = cur.held_spaces()
    if j is None:
        return False
    char = cur.buf[j]
    if char in block.openers:
        block.json_from = len(block.parts)
        cur.json = JsonScan(None if block.name else cur.tools)
        cur.mode = Mode.JSON
        return True
    if block.form is CallFormat.HERMES and not block.calls:
        found = cur.waits(FUNCTION, j)
        if found is None:
            return False
        if found:
            block.wrapped, block.more = True, False
            cur.take(j + len(FUNCTION))
            cur.mode = Mode.FUNCTION_NAME
            return True
    if block.form is CallFormat.MISTRAL and not block.calls and starts_name(char):
        cur.mode = Mode.MISTRAL_HEAD
        return True
    cur.give_up()
    return True


def _in_json(cur: Cursor) -> bool:
    block, scan = cur.block, cur.json
    assert block is not None and scan is not None
    j, verdict = scan.scan(cur.buf, cur.i)
    cur.take(j)
    if verdict is Scan.MORE:
        return False
    if verdict is Scan.DEAD:
        cur.give_up()
        return True
    _json_ended(cur, block, "".join(block.parts[block.json_from :]), scan)
    return True


def _closed_at_end(cur: Cursor) -> bool:
    """At the end of an answer that stopped inside a block's JSON: True when its closing
    brackets were all it lacked (a small model's last brace left out); read with them."""
    block, scan = cur.held(), cur.json
    assert scan is not None
    closers = scan.closers()
    if not closers or scan.scan(closers, 0) != (len(closers), Scan.DONE):
        return False
    _json_ended(cur, block, "".join(block.parts[block.json_from :]) + closers, scan)
    return True


def _json_ended(cur: Cursor, block: Block, text: str, scan: JsonScan) -> None:
    """A block's JSON, `text`, ended: its calls are the block's, or it is no call."""
    calls = _read(cur, block, text, scan)
    if calls is None:
        cur.give_up()
        return
    block.calls += calls
    block.kept = block.length
    if block.close or block.more:
        cur.mode = Mode.AFTER
    else:
        cur.end_block()


def _read(cur: Cursor, block: Block, text: str, scan: JsonScan) -> list[TextCall] | None:
    """The calls of a block's JSON that just ended (doubled braces read as a list's)."""
    if scan.doubled:
        text = f"[{text.strip()[1:-1]}]"
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
        call = arguments_call(block.name, value, cur.tools, form)
        return None if call is None else [call]
    return calls_in(value, cur.tools, form)


def _after(cur: Cursor) -> bool:
    """After a call's JSON: the block's closing syntax, another call, or its end."""
    block = cur.held()
    j = cur.held_spaces()
    if j is None:
        return False
    if block.close:
        found = cur.waits(block.close, j)
        if found is None:
            return False
        if found:
            cur.take(j + len(block.close))
            block.kept = block.length
            cur.end_block()
            return True
    char = cur.buf[j]
    # Another call: after `;` or `,`, or, inside a syntax that closes, right away.
    if block.more and (char in ";," or (char == "{" and block.close)):
        cur.take(j + (char != "{"))
        cur.mode = Mode.OPEN
        return True
    cur.give_up()
    return True


_READERS: dict[Mode, Callable[[Cursor], bool]] = {
    Mode.TEXT: _text,
    Mode.FENCE_LINE: fence_line,
    Mode.CODE: code,
    Mode.OPEN: _open,
    Mode.JSON: _in_json,
    Mode.AFTER: _after,
    Mode.FUNCTION_NAME: function_name,
    Mode.FUNCTION_BODY: function_body,
    Mode.MISTRAL_HEAD: mistral_head,
}
