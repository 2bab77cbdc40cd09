"""A plain-Python check of the commonest schema keywords, for the startup path.

`surely_valid(ref, instance)` is True only when `instance` is valid: it knows the keywords these
schema files use for `initialize`, a first session and their envelopes (type, properties,
required, items, $ref, anyOf/allOf/oneOf/not, const, enum, minimum/maximum, minLength) and answers
False - "not sure" - on any other keyword or on a value it will not compare. The startup path
answers `initialize` when it is True and otherwise leaves the line to the full path and its
jsonschema-rs validators, which are the judges: this module may refuse a valid instance, never
accept an invalid one. Imports nothing but the standard library's `json`.

An instance may hold `ANY_STRING` where any string may stand (a template: a streamed update
whose text is the one thing that changes). Only the keywords whose answer is the same for
every string look at it (`type`, and those that ignore strings); any other (`const`, `enum`,
`minLength`, ...) is "not sure". So True for a template means True for every string put in
its place, each of which is then valid.
"""

from __future__ import annotations

from acp_fsm.schemas import definitions

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # A keyword's check: (its argument in the schema, the value, the $defs, the depth). The
    # argument is typed Any: each check takes the JSON type its keyword's argument has.
    _Keyword = Callable[[Any, object, dict[str, object], int], bool]

__all__ = ["ANY_STRING", "surely_conforms", "surely_valid"]

# Keywords that only annotate: they never make an instance invalid.
_ANNOTATIONS = frozenset(
    {
        "description",
        "default",
        "$comment",
        "title",
        "examples",
        "$schema",
        "$id",
        "deprecated",
        "$defs",
    }
)


class _Unsure(Exception):
    """A keyword or value this module does not judge."""


class _AnyString:
    """The type of `ANY_STRING`."""

    def __repr__(self) -> str:
        return "ANY_STRING"


ANY_STRING = _AnyString()
"""Stands for every string in an instance (a template): see the module's docstring."""


def surely_valid(ref: str, instance: object) -> bool:
    """True only when `instance` is valid against ``"<file stem>.<DefName>"``."""
    stem, _, name = ref.partition(".")
    defs = definitions(stem)
    return _decide(defs[name], instance, defs)


def surely_conforms(schema: dict[str, Any], instance: object) -> bool:
    """True only when `instance` is valid against the in-memory `schema`."""
    return _decide(schema, instance, schema.get("$defs", {}))


def _decide(schema: object, instance: object, defs: dict[str, object]) -> bool:
    try:
        return _valid(schema, instance, defs, 0)
    except (_Unsure, KeyError, RecursionError):
        return False


_MAX_DEPTH = 64


def _valid(schema: object, value: object, defs: dict[str, object], depth: int) -> bool:
    if schema is True:
        return True
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        raise _Unsure
    for keyword, arg in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        check = _KEYWORDS.get(keyword)
        if check is None:
            raise _Unsure
        if not check(arg, value, defs, depth + 1):
            return False
    return True


def _type(arg: object, value: object, defs: dict[str, object], depth: int) -> bool:
    names = [arg] if isinstance(arg, str) else arg
    if not isinstance(names, list):
        raise _Unsure
    return _json_type(value) in names or (_json_type(value) == "integer" and "number" in names)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str) or value is ANY_STRING:
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise _Unsure


def _properties(arg: dict[str, object], value: object, defs: dict[str, object], depth: int) -> bool:
    if not isinstance(value, dict):
        return True
    return all(_valid(sub, value[key], defs, depth) for key, sub in arg.items() if key in value)


def _required(arg: list[str], value: object, defs: dict[str, object], depth: int) -> bool:
    return not isinstance(value, dict) or all(key in value for key in arg)


def _items(arg: object, value: object, defs: dict[str, object], depth: int) -> bool:
    return not isinstance(value, list) or all(_valid(arg, item, defs, depth) for item in value)


def _ref(arg: str, value: object, defs: dict[str, object], depth: int) -> bool:
    prefix = "#/$defs/"
    if not arg.startswith(prefix):
        raise _Unsure
    return _valid(defs[arg[len(prefix) :]], value, defs, depth)


def _any_of(arg: list[object], value: object, defs: dict[str, object], depth: int) -> bool:
    return any(_valid(sub, value, defs, depth) for sub in arg)


def _all_of(arg: list[object], value: object, defs: dict[str, object], depth: int) -> bool:
    return all(_valid(sub, value, defs, depth) for sub in arg)


def _one_of(arg: list[object], value: object, defs: dict[str, object], depth: int) -> bool:
    return sum(_valid(sub, value, defs, depth) for sub in arg) == 1


def _not(arg: object, value: object, defs: dict[str, object], depth: int) -> bool:
    # A check answers False only when it is sure the value is invalid (else `_Unsure`).
    return not _valid(arg, value, defs, depth)


def _scalar(value: object) -> tuple[str, object]:
    """`value` keyed by JSON type, so that true != 1 and 1 == 1.0 as in JSON Schema."""
    kind = _json_type(value)
    if kind in ("array", "object") or value is ANY_STRING:
        raise _Unsure
    return kind, value


def _const(arg: object, value: object, defs: dict[str, object], depth: int) -> bool:
    return _scalar(arg) == _scalar(value)


def _enum(arg: list[object], value: object, defs: dict[str, object], depth: int) -> bool:
    return _scalar(value) in [_scalar(option) for option in arg]


def _minimum(arg: float, value: object, defs: dict[str, object], depth: int) -> bool:
    return _json_type(value) not in ("integer", "number") or value >= arg  # type: ignore[operator]


def _maximum(arg: float, value: object, defs: dict[str, object], depth: int) -> bool:
    return _json_type(value) not in ("integer", "number") or value <= arg  # type: ignore[operator]


def _min_length(arg: int, value: object, defs: dict[str, object], depth: int) -> bool:
    # JSON Schema counts code points, as len() does for a str
    if value is ANY_STRING:
        raise _Unsure
    return not isinstance(value, str) or len(value) >= arg


_KEYWORDS: dict[str, _Keyword] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "items": _items,
    "$ref": _ref,
    "anyOf": _any_of,
    "allOf": _all_of,
    "oneOf": _one_of,
    "not": _not,
    "const": _const,
    "enum": _enum,
    "minimum": _minimum,
    "maximum": _maximum,
    "minLength": _min_length,
}
