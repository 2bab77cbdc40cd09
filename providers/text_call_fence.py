"""Code fences in a streamed answer: a call's block, or code shown as prose (part of
`providers.text_calls`).

At ``` the fence's first line decides: ```json (and its kin), ```tool_call, a bare ```, and
the ```python a small model puts around its call may hold calls (read as a JSON block that
closes with ```: a Python block that does not open with JSON is code); any other language is
a code block, prose up to its closing fence, in which no call syntax counts — it is shown,
not used.
"""

from __future__ import annotations

from acp_fsm.providers.text_call_args import CallFormat
from acp_fsm.providers.text_call_cursor import FENCE, Block, Cursor, Mode

# Fence languages whose block may hold a call: ```json and its kin, ```tool_call, none, and
# Python (Qwen2.5-Coder 1.5B fenced its call so, bench/local_model).
CALL_FENCES = ("", "json", "jsonc", "json5", "tool_call", "python", "py")
# A fence's first line longer than this is a code block's title, not a call's.
MAX_FENCE_LINE = 40


def fence_line(cur: Cursor) -> bool:
    """At ``` (not consumed): a call's fence if its first line is one of CALL_FENCES."""
    buf, start = cur.buf, cur.i
    first = start + len(FENCE)
    end = buf.find("\n", first, first + MAX_FENCE_LINE + 1)
    line = buf[first : end if end >= 0 else first + MAX_FENCE_LINE + 1]
    if end >= 0:
        calls = line.strip().lower() in CALL_FENCES
    elif len(line) > MAX_FENCE_LINE or cur.final or not _may_become_call_fence(line):
        calls = False
    else:
        return False
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


def _may_become_call_fence(line: str) -> bool:
    """Whether a fence's first line, cut short, may still end as one of CALL_FENCES."""
    word = line.strip().lower()
    if not word:
        return True
    if line[-1].isspace():  # the word is complete: anything more after a space is no call's
        return word in CALL_FENCES
    return any(lang.startswith(word) for lang in CALL_FENCES)
