"""JSON encoding and decoding of single lines (orjson, with a stdlib fallback for odd values)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from acp_fsm.protocol.errors import ParseError


def decode(line: bytes) -> Any:
    """Parse one line. Invalid UTF-8 and invalid JSON both raise `ParseError` (-32700)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise ParseError(f"Parse error: invalid UTF-8 at byte {bad.start}") from None
        raise ParseError(f"Parse error: {exc.msg} at position {exc.pos}") from None


def encode(message: Any) -> bytes:
    """Serialise one message as compact JSON followed by a newline."""
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        # orjson refuses lone surrogates (reachable only by echoing a peer's odd id);
        # ASCII-escaped stdlib JSON still yields a valid, newline-free line.
        return json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
