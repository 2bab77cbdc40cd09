"""The syntaxes that name their tool before its arguments (part of `providers.text_calls`).

Qwen3-Coder's `<function=NAME>` — its body `<parameter=KEY>value</parameter>…` or JSON, up to
`</function>` (or, inside `<tool_call>`, the tag that closes it) — and Mistral's head
`[TOOL_CALLS]NAME`, an optional `[CALL_ID]id` and an optional `[ARGS]`, before the arguments'
JSON. A name that is no offered tool's, or longer than any tool's, makes the block prose.
"""

from __future__ import annotations

import re

from acp_fsm.providers.text_call_args import function_call
from acp_fsm.providers.text_call_cursor import (
    ARGS,
    CALL_ID,
    END_FUNCTION,
    END_TOOL_CALL,
    Cursor,
    Mode,
)
from acp_fsm.providers.text_call_json import MAX_NAME_CHARS

_NAME = re.compile(r"[\w.-]*")  # a tool's name after <function= or [TOOL_CALLS]
_NAME_CHAR = re.compile(r"[\w.-]")
_CALL_ID = re.compile(r"[A-Za-z0-9]*")


def starts_name(char: str) -> bool:
    """Whether a tool's name may start with `char`."""
    return _NAME_CHAR.match(char) is not None


# ---------------------------------------------------------------- <function=NAME> blocks


def function_name(cur: Cursor) -> bool:
    block = cur.held()
    buf = cur.buf
    end = _name_end(buf, cur.i)
    if end == len(buf) and end - cur.i <= MAX_NAME_CHARS:
        return cur.more()
    name = buf[cur.i : end]
    if end - cur.i > MAX_NAME_CHARS or buf[end] != ">" or name not in cur.tools:
        cur.give_up()
        return True
    block.name = name
    cur.take(end + 1)
    block.body_from = block.length
    cur.mode = Mode.FUNCTION_BODY
    return True


def function_body(cur: Cursor) -> bool:
    """Up to </function> (or, inside <tool_call>, the tag that closes it)."""
    block = cur.held()
    buf, n = cur.buf, len(cur.buf)
    ends = [END_FUNCTION, END_TOOL_CALL] if block.wrapped else [END_FUNCTION]
    found = [(at, tag) for tag in ends if (at := buf.find(tag, cur.i)) >= 0]
    if not found:
        keep = 0 if cur.final else max(map(len, ends)) - 1  # a tag cut in two waits
        cur.take(max(cur.i, n - keep))
        return False
    at, tag = min(found)
    cur.take(at)
    _function_ends(cur)
    cur.take(at + len(tag))
    block.kept = block.length
    cur.mode = Mode.AFTER
    if tag == END_FUNCTION and block.wrapped:
        block.close = END_TOOL_CALL
    else:
        cur.end_block()
    return True


def function_cut_off(cur: Cursor) -> None:
    """The answer ended inside the body: the call is what it holds."""
    _function_ends(cur)
    block = cur.held()
    block.kept = block.length


def _function_ends(cur: Cursor) -> None:
    block = cur.held()
    body = "".join(block.parts)[block.body_from :]
    block.calls.append(function_call(block.name, body, cur.tools))


# ------------------------------------------------------------ [TOOL_CALLS]NAME[ARGS]{…}


def mistral_head(cur: Cursor) -> bool:
    """NAME, an optional [CALL_ID]id, an optional [ARGS], then the arguments' {."""
    buf, i, n = cur.buf, cur.i, len(cur.buf)
    j = _name_end(buf, i)
    if j == n and j - i <= MAX_NAME_CHARS:
        return cur.more()
    name = buf[i:j]
    if j - i > MAX_NAME_CHARS or name not in cur.tools:
        cur.give_up()
        return True
    found = cur.waits(CALL_ID, j)
    if found:
        j = _run_end(_CALL_ID, buf, j + len(CALL_ID))
        found = None if j == n and not cur.final else cur.waits(ARGS, j)
    else:
        found = found if found is None else cur.waits(ARGS, j)
    if found is None:
        return False
    j += len(ARGS) if found else 0
    if j == n and not cur.final:
        return False
    if j == n or buf[j] != "{":
        cur.give_up()
        return True
    cur.held().name = name
    cur.take(j)
    cur.mode = Mode.OPEN
    return True


def _name_end(text: str, i: int) -> int:
    return _run_end(_NAME, text, i)


def _run_end(run: re.Pattern[str], text: str, i: int) -> int:
    """Where the run of `run`'s characters from `text[i]` ends (`run` matches empty too)."""
    match = run.match(text, i)
    return match.end() if match else i
