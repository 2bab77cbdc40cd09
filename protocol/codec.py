"""JSON encoding and decoding of single lines (orjson, with a stdlib fallback for odd values),
and the text a strict peer accepts.

File names are bytes; Python shows the bytes of a name that are not UTF-8 as lone surrogates
(surrogateescape), and a model's JSON may hold a lone `\\ud800` escape. Neither is valid
UTF-8, and strict JSON parsers (serde_json, Zed's) refuse a line that carries one. A name the
agent shows the editor or stores goes through `utf8_text`: each byte that is not UTF-8 becomes
the four characters `\\xNN` (visible, and distinct for distinct names, where U+FFFD would
make two names look alike). `encode` applies it to whatever still carries a lone surrogate,
so no line written is invalid UTF-8.
"""

from __future__ import annotations

import json
import os
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
    """Serialise one message as compact JSON followed by a newline, valid UTF-8."""
    try:
        return orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        # orjson refuses lone surrogates (a name or a text `utf8_text` was not applied to)
        # and integers beyond 64 bits: the first made valid, the stdlib writes the second.
        valid = utf8_json(message)
        return json.dumps(valid, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"


def is_utf8(text: str) -> bool:
    """True when `text` has no lone surrogate, so it encodes as UTF-8 (and strict JSON)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_text(text: str) -> str:
    """`text` as valid UTF-8: bytes of a file name that are not UTF-8 shown as `\\xNN`.

    A name from the file system carries such bytes as surrogateescape surrogates, which map
    back to the bytes; any other lone surrogate is shown by its UTF-8-style bytes.
    """
    if is_utf8(text):
        return text
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


def utf8_json(value: Any) -> Any:
    """`value` with every string in it (dict keys, list and tuple items too) valid UTF-8."""
    if isinstance(value, str):
        return utf8_text(value)
    if isinstance(value, dict):
        return {utf8_json(key): utf8_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(utf8_json(item) for item in value)
    return value
