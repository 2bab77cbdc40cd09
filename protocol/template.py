"""A notification encoded once with a hole for its text, for the one sent per streamed delta.

The bytes of `head + orjson.dumps(text) + tail` are those of encoding the whole notification
with that text, so each delta costs the encoding of its text alone (docs/architecture.md,
"The streamed path"). Whether the template is valid whatever the text is the dispatcher's to
say (`Connection.notifier`); here it is only encoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from acp_fsm.schemas.plain import ANY_STRING

_PLACEHOLDER = "\0the text of a notifier\0"  # stands for ANY_STRING while a template is encoded
_HOLE = orjson.dumps(_PLACEHOLDER)


def sender(
    template: Any,
    write: Callable[[bytes], None],
    scrub: Callable[[bytes], bytes] | None,
    fallback: Callable[[str], bool],
) -> Callable[[str], bool]:
    """A sender that writes `template` with each text in the place of its one `ANY_STRING`,
    scrubbed; `fallback` when the template cannot be encoded so, and for a text orjson
    refuses (a lone surrogate)."""
    try:
        encoded = orjson.dumps(template, default=_placeholder, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        return fallback
    head, hole, tail = encoded.partition(_HOLE)
    if not hole or _HOLE in tail:
        return fallback

    def send(text: str) -> bool:
        try:
            line = head + orjson.dumps(text) + tail
        except TypeError:
            return fallback(text)
        write(line if scrub is None else scrub(line))
        return True

    return send


def _placeholder(value: object) -> str:
    if value is ANY_STRING:
        return _PLACEHOLDER
    raise TypeError(f"cannot encode {type(value).__name__}")
