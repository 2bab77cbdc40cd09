"""Code fences in a streamed answer: a call's block, or code shown as prose (part of
`providers.text_calls`).

A fenced block may hold calls whatever its language says (```json, ```tool_call, none, and
the ```python a small model puts around its call alike): its content decides. A block whose
first character opens JSON is read as a JSON block that closes with ```; any other is a code
block, prose up to its closing fence, in which no call syntax counts — it is shown, not used.
A fence whose first line is longer than MAX_FENCE_LINE is a code block's title.
"""

from __future__ import annotations

from acp_fsm.providers.text_call_args import CallFormat
from acp_fsm.providers.text_call_cursor import FENCE, Block, Cursor, Mode

# A fence's first line longer than this is a code block's title, not a call's.
MAX_FENCE_LINE = 40


def fence_line(cur: Cursor) -> bool:
    """At ``` (not consumed): a block that may hold calls if its first line is short."""
    buf, start = cur.buf, cur.i
    first = start + len(FENCE)
    end = buf.find("\n", first, first + MAX_FENCE_LINE + 1)
    line = buf[first : end if end >= 0 else first + MAX_FENCE_LINE + 1]
    if end < 0 and len(line) <= MAX_FENCE_LINE and not cur.final:
        return False
    calls = end >= 0
    if calls:
        block = Block(CallFormat.FENCED_JSON, cur.at + start, close=FENCE, more=True)
        block.fenced = True
        cur.start(block, start)
        cur.take(end + 1)
        cur.mode = Mode.OPEN
    else:
        cur.prose(start + len(FENCE))
        cur.line_start = False
        cur.mode = Mode.CODE
    return True


def code(cur: Cursor) -> bool:
    """Inside a code block that holds no call: prose up to a line starting with ```."""
    buf, n = cur.buf, len(cur.buf)
    if cur.line_start:
        j = cur.indent()
        found = None if j is None else cur.waits(FENCE, j)
        if found is None:
            return False
        cur.line_start = False
        if found:
            assert j is not None
            cur.prose(j + len(FENCE))
            cur.mode = Mode.TEXT
            return True
    end = buf.find("\n", cur.i)
    if end < 0:
        cur.prose(n)
        return False
    cur.prose(end + 1)
    cur.line_start = True
    return True
