"""Calls written as text, read once their syntax has been found (part of `providers.text_calls`).

What a call is made of — a tool's name and an arguments object, from a parsed JSON value or
from Qwen3-Coder's `<parameter=…>` text — and the near misses of its arguments repaired
against the tool's `input_schema` where only one reading is possible.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, NamedTuple

from acp_fsm.providers.types import ToolSpec


class CallFormat(StrEnum):
    """How a call was written."""

    FENCED_JSON = "fenced_json"  # ```json {"name": …, "arguments": …} ```
    BARE_JSON = "bare_json"  # {"name": …, "arguments"|"parameters": …} on its own line
    HERMES = "hermes"  # <tool_call>{"name": …, "arguments": …}</tool_call> (Qwen2.5, Hermes)
    QWEN3_XML = "qwen3_xml"  # <tool_call><function=NAME><parameter=KEY>v</parameter>…
    FUNCTION_TAG = "function_tag"  # <function=NAME>{arguments}</function>
    MISTRAL = "mistral"  # [TOOL_CALLS][{"name": …, "arguments": …}, …]
    MISTRAL_ARGS = "mistral_args"  # [TOOL_CALLS]NAME[ARGS]{…}
    PYTHON_TAG = "python_tag"  # <|python_tag|>{"name": …, "parameters": …} (Llama 3.x)


# Written in JSON alone, with no syntax of its own saying "this is a call": counted only under
# the rule of `providers.text_calls` (the calls end the answer).
AMBIGUOUS = frozenset({CallFormat.FENCED_JSON, CallFormat.BARE_JSON})


class TextCall(NamedTuple):
    """One call found in an answer's text. `span` is where its syntax stands in the answer
    (calls written in one block share the block's span). `error` says why the arguments could
    not be read as an object (`arguments` is then empty and `raw_arguments` keeps them), as
    `ToolCallPart.error` does for a native call."""

    name: str
    arguments: dict[str, Any]
    format: CallFormat
    span: tuple[int, int]
    raw_arguments: str = ""
    error: str | None = None


# The keys a call object may have; any other key makes the JSON something else.
CALL_KEYS = frozenset({"name", "arguments", "parameters", "type", "id", "function"})
_NO_SPAN = (0, 0)  # a call's span is set when its block ends
_DECODER = json.JSONDecoder(strict=False)  # small models put raw newlines in strings
_INTEGER = re.compile(r"[+-]?\d+")
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.S)
_MISSING = object()
# A JSON string, or a word of Python's that JSON spells otherwise (a small model's `True`).
_STRING_OR_PYTHON = re.compile(r'"(?:[^"\\]|\\.)*"|\b(?:True|False|None)\b', re.S)
_PYTHON_WORDS = {"True": "true", "False": "false", "None": "null"}
_QUOTE_OR_STRUCTURE = re.compile(r'["{}\[\],:]')
QUOTE_OR_ESCAPE = re.compile(r'["\\]')  # where a string may end, or an escape begins
# What follows a string's closing quote in JSON, spaces aside: a key's colon, a value's comma
# or closing bracket. A quote followed by anything else stands inside the string (a small
# model's unescaped `f"…"` or `{"debug": true}` in a file's content); in valid JSON every
# closing quote is followed so, so valid JSON reads the same.
AFTER_KEY, AFTER_VALUE = ":", ",}]"
SPACES = " \t\r\n"
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "object": dict,
    "array": list,
    "boolean": bool,
    "number": (int, float),
    "integer": int,
}


def decode(text: str) -> Any:
    """`text` as one JSON value; ValueError if it is none. What is not JSON but has one
    reading is read so: a quote inside a string that does not end it (not followed by
    AFTER_KEY or AFTER_VALUE, as the string is a key or a value), and Python's `True`,
    `False` and `None` outside strings."""
    try:
        return _strict(text)
    except ValueError as exc:
        lenient = _STRING_OR_PYTHON.sub(_json_word, _inner_quotes_escaped(text))
        if lenient == text:
            raise
        try:
            return _strict(lenient)
        except ValueError:
            raise exc from None


def _strict(text: str) -> Any:
    """`text` as one JSON value (raw newlines in strings allowed); ValueError if it is none,
    or nested too deep to read."""
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deep") from None


def _json_word(match: re.Match[str]) -> str:
    return _PYTHON_WORDS.get(match[0], match[0])


def _inner_quotes_escaped(text: str) -> str:
    """`text` with each quote that stands inside a string (by AFTER_KEY, AFTER_VALUE)
    escaped; a string the text ends in is left as it is."""
    out: list[str] = []
    stack: list[str] = []
    i, key_next = 0, False
    while (match := _QUOTE_OR_STRUCTURE.search(text, i)) is not None:
        char = match[0]
        if char == '"':
            out.append(text[i : match.start()])
            i, string = _string(text, match.end(), AFTER_KEY if key_next else AFTER_VALUE)
            out.append(string)
            continue
        if char in "{[":
            stack.append(char)
            key_next = char == "{"
        elif char in "}]":
            del stack[-1:]
        else:  # a comma or a colon
            key_next = char == "," and stack[-1:] == ["{"]
        out.append(text[i : match.end()])
        i = match.end()
    out.append(text[i:])
    return "".join(out)


def _string(text: str, i: int, after: str) -> tuple[int, str]:
    """The string that opens just before `text[i]`: where it ends (past the quote `after`
    follows, spaces aside; else the text's end) and its source, inner quotes escaped."""
    out, start, n = ['"'], i, len(text)
    while (match := QUOTE_OR_ESCAPE.search(text, i)) is not None:
        k = match.start()
        if match[0] == "\\":
            i = k + 2
            continue
        j = k + 1
        while j < n and text[j] in SPACES:
            j += 1
        if j == n or text[j] in after:
            out.append(text[start : k + 1])
            return k + 1, "".join(out)
        out.append(text[start:k] + '\\"')
        start = i = k + 1
    out.append(text[start:])
    return n, "".join(out)


def calls_in(value: Any, tools: Mapping[str, ToolSpec], form: CallFormat) -> list[TextCall] | None:
    """The calls a parsed JSON value holds — a call object, or a non-empty list of them — or
    None when any part of it is not a call of an offered tool. For the ambiguous forms the
    arguments must be an object (or JSON text of one); the explicit syntaxes take what comes
    and say what was wrong."""
    objects = value if isinstance(value, list) and value else [value]
    calls = []
    for item in objects:
        shaped = _name_and_arguments(item) if isinstance(item, dict) else None
        if shaped is None or shaped[0] not in tools:
            return None
        call = arguments_call(shaped[0], shaped[1], tools, form)
        if call is None:
            return None
        calls.append(call)
    return calls


def _name_and_arguments(item: dict[str, Any]) -> tuple[str, Any] | None:
    """(name, arguments) of a call object, `_MISSING` arguments when it has none; None when
    the object is not shaped as a call. Accepted: `{"name", "arguments"|"parameters"}`, with
    `"type": "function"` and an `"id"` beside them, and OpenAI's
    `{"type": "function", "function": {"name", "arguments"}}`."""
    if "function" in item:
        if set(item) - {"function", "type", "id"} or item.get("type", "function") != "function":
            return None
        item = item["function"]
        if not isinstance(item, dict):
            return None
    if set(item) - CALL_KEYS or "function" in item or item.get("type", "function") != "function":
        return None
    if "arguments" in item and "parameters" in item:
        return None
    name = item.get("name")
    if not isinstance(name, str):
        return None
    return name, item.get("arguments", item.get("parameters", _MISSING))


def arguments_call(
    name: str, arguments: Any, tools: Mapping[str, ToolSpec], form: CallFormat
) -> TextCall | None:
    """The call of `name` with `arguments` as the model wrote them (a parsed value), repaired
    against the tool's schema. None when the form is ambiguous and they are no object."""
    raw = ""
    if isinstance(arguments, str):  # arguments as JSON text, as on the wire
        raw = arguments
        try:
            arguments = decode(arguments)
        except ValueError as exc:
            if form in AMBIGUOUS:
                return None
            return TextCall(
                name, {}, form, _NO_SPAN, raw, f"the arguments are not valid JSON ({exc})"
            )
    if isinstance(arguments, dict):
        return TextCall(name, repaired(arguments, tools[name].input_schema), form, _NO_SPAN, raw)
    if form in AMBIGUOUS:
        return None
    if arguments is _MISSING or arguments is None:  # a tool without arguments
        return TextCall(name, {}, form, _NO_SPAN, raw)
    kind = type(arguments).__name__
    raw = raw or json.dumps(arguments, ensure_ascii=False)
    return TextCall(
        name, {}, form, _NO_SPAN, raw, f"the arguments must be a JSON object, got {kind}"
    )


def broken_call(name: str, text: str, problem: str, form: CallFormat) -> TextCall:
    """A call of `name` whose JSON could not be read: the runtime tells the model why."""
    return TextCall(name, {}, form, _NO_SPAN, text, f"the call is not valid JSON ({problem})")


def function_call(name: str, body: str, tools: Mapping[str, ToolSpec]) -> TextCall:
    """The call of `<function=NAME>body</function>`: a JSON object, or Qwen3-Coder's
    parameters, each value text converted by the type its schema gives it."""
    if body.strip().startswith("{"):
        try:
            arguments = decode(body.strip())
        except ValueError as exc:
            return broken_call(name, body.strip(), str(exc), CallFormat.FUNCTION_TAG)
        call = arguments_call(name, arguments, tools, CallFormat.FUNCTION_TAG)
        assert call is not None  # an explicit form is always a call
        return call
    properties = _properties(tools[name].input_schema)
    arguments = {}
    for key, value in _PARAMETER.findall(body):
        text = value.removeprefix("\n").removesuffix("\n")
        schema = properties.get(key.strip())
        typed = _typed(text, schema) if isinstance(schema, dict) else text
        arguments[key.strip()] = typed
    return TextCall(name, arguments, CallFormat.QWEN3_XML, _NO_SPAN, body)


def _typed(text: str, schema: dict[str, Any]) -> Any:
    """A parameter's text as its schema's type (the text itself when it is no such value)."""
    if schema.get("type") in (None, "string"):
        return text
    return repaired_value(text.strip(), schema)


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def repaired(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each value the schema gives a type repaired (`repaired_value`);
    nothing added, nothing removed: a missing argument stays missing."""
    properties = _properties(schema)
    return {
        key: repaired_value(value, properties[key])
        if isinstance(properties.get(key), dict)
        else value
        for key, value in arguments.items()
    }


def repaired_value(value: Any, schema: Mapping[str, Any]) -> Any:
    """`value` as `schema`'s type where only one reading is possible: a numeric string for an
    integer or a number, "true"/"false" for a boolean, JSON text for an object or an array, a
    whole float for an integer, one value of an array's item type for a one-item array; the
    items of arrays and the properties of objects likewise. Anything else is left as it is,
    for the tool's validation to report."""
    kind = schema.get("type")
    if not isinstance(kind, str):
        return value
    if isinstance(value, str):
        value = _from_text(value, kind)
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    items = schema.get("items")
    if kind == "array" and isinstance(items, dict):
        if not isinstance(value, list) and _is_type(value, items.get("type")):
            value = [value]
        if isinstance(value, list):
            value = [repaired_value(item, items) for item in value]
    if kind == "object" and isinstance(value, dict):
        value = repaired(value, schema)
    return value


def _from_text(text: str, kind: str) -> Any:
    """`text` read as a value of JSON type `kind`, or `text` when it reads as none."""
    if kind == "integer" and _INTEGER.fullmatch(text.strip()):
        return int(text)
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return text
        if not math.isfinite(number):
            return text
        return int(text) if _INTEGER.fullmatch(text.strip()) else number
    if kind == "boolean" and text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    if kind in ("object", "array") and text.strip()[:1] in ("{", "["):
        try:
            parsed = decode(text.strip())
        except ValueError:
            return text
        return parsed if _is_type(parsed, kind) else text
    return text


def _is_type(value: Any, kind: Any) -> bool:
    """Whether `value` is of JSON type `kind` (a boolean is no number)."""
    if not isinstance(kind, str) or kind not in _JSON_TYPES:
        return False
    if isinstance(value, bool):
        return kind == "boolean"
    return isinstance(value, _JSON_TYPES[kind])
