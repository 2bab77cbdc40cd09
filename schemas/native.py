"""jsonschema-rs validators of the schema definitions, and the explanation of their failures.

Imported with the first validator that is built (`schemas.validate`), never on the startup
path. See docs/architecture.md ("Validation").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import jsonschema_rs

from acp_fsm.schemas import Segment, Violation

__all__ = ["Check", "unencodable"]

_MISSING = object()


class Check:
    """One definition's validator, and the explanation of its failures."""

    __slots__ = ("_branches", "_defs", "_iter_errors", "_root", "is_valid")

    def __init__(self, schema: dict[str, Any], defs: dict[str, Any]) -> None:
        self._root = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **schema,
            "$defs": defs,
        }
        self._defs = defs
        native = jsonschema_rs.Draft202012Validator(self._root)
        self.is_valid: Callable[[object], bool] = native.is_valid
        self._iter_errors = native.iter_errors
        self._branches: dict[int, Check] = {}  # id of a union branch -> its validator

    def explain(self, instance: object) -> Violation:
        try:
            errors = list(self._iter_errors(instance))
        except ValueError:  # jsonschema-rs gives up on the path of a very deep instance
            root = self._root
            types = _types(self._resolve({"$ref": root["$ref"]}) if "$ref" in root else root)
            if types and not _admits({"type": types}, instance):
                return Violation((), f"expected {_or(types)}, got {_type_name(instance)}")
            return Violation((), "nested too deeply to say where it is invalid")
        # The deepest error says most; a union's own error is explained by its branch.
        error = max(errors, key=lambda e: len(e.instance_path))
        path, value = _located(instance, error.instance_path)
        kind = type(error.kind).__name__
        where = list(error.schema_path)
        if kind in ("OneOfNotValid", "AnyOf"):
            return self._explain_union(list(self._node(where)), value, path)
        if kind == "OneOfMultipleValid":
            valid = [
                f"#{i}"
                for i, branch in enumerate(self._node(where))
                if self._branch(branch).is_valid(value)
            ]
            return Violation(
                path, "matches more than one oneOf alternative (" + " and ".join(valid) + ")"
            )
        if kind == "Type":  # the schema's own order ("string or null"), not the library's
            return Violation(
                path,
                f"expected {_or(_types({'type': self._node(where)}))}, got {_type_name(value)}",
            )
        if kind == "FalseSchema" and where[-1:] == ["additionalProperties"]:
            known = self._node([*where[:-1], "properties"], {})
            return Violation(path, _unexpected([k for k in value if k not in known]))  # type: ignore[attr-defined]
        if kind == "Not":
            return Violation(path, _forbidden(self._node(where), value))
        return Violation(path, _describe(error, value))

    def _node(self, schema_path: Iterable[Segment], default: Any = _MISSING) -> Any:
        """The subschema at `schema_path` (an absolute keyword location; an object's member "0"
        comes as the number 0)."""
        node: Any = self._root
        for seg in schema_path:
            if isinstance(node, dict):
                seg = str(seg)
            if default is not _MISSING and (not isinstance(node, dict) or seg not in node):
                return default
            node = node[seg]
        return node

    def _explain_union(
        self, branches: list[Any], value: object, path: tuple[Segment, ...]
    ) -> Violation:
        resolved = [self._resolve(b) for b in branches]
        tag = _discriminator(resolved)
        if tag is not None and isinstance(value, dict):
            tags = [b["properties"][tag]["const"] for b in resolved]
            if tag not in value:
                return Violation(
                    path,
                    f"missing tag property {_show(tag)}; expected one of "
                    + ", ".join(map(_show, tags)),
                )
            keys = [_json_key(t) for t in tags]
            if _json_key(value[tag]) not in keys:
                return Violation(
                    (*path, tag),
                    "unknown tag value, expected one of "
                    + ", ".join(map(_show, tags))
                    + f", got {_show(value[tag])}",
                )
            return self._within(branches[keys.index(_json_key(value[tag]))], value, path)
        typed = [(b, r) for b, r in zip(branches, resolved, strict=True) if _admits(r, value)]
        types = [t for r in resolved for t in _types(r)]
        if types and not typed:
            return Violation(path, f"expected {_or(types)}, got {_type_name(value)}")
        # A branch whose tag the value contradicts (a `const` property absent or different)
        # is not the one meant; one whose tag the value carries is.
        fitting = [(b, r) for b, r in typed if _tag_fit(r, value) is not False] or typed
        claimed = [b for b, r in fitting if _tag_fit(r, value)]
        if len(claimed) == 1:
            return self._within(claimed[0], value, path)
        if len(fitting) == 1:  # "X or null" and the like: the branch of its type
            return self._within(fitting[0][0], value, path)
        # Otherwise the branch that got furthest into the value, if one did.
        explained = [(b, self._branch(b).explain(value)) for b, _ in fitting]
        depth = max(len(v.path) for _, v in explained)
        deepest = [b for b, v in explained if len(v.path) == depth]
        if depth and len(deepest) == 1:
            return self._within(deepest[0], value, path)
        reasons = "; ".join(str(v) for _, v in explained)
        return Violation(path, f"matches none of the alternatives: {reasons}")

    def _within(self, branch: Any, value: object, path: tuple[Segment, ...]) -> Violation:
        inner = self._branch(branch).explain(value)
        return Violation((*path, *inner.path), inner.message)

    def _branch(self, branch: Any) -> Check:
        check = self._branches.get(id(branch))
        if check is None:
            schema = branch if isinstance(branch, dict) else {"not": {}} if branch is False else {}
            check = self._branches[id(branch)] = Check(schema, self._defs)
        return check

    def _resolve(self, schema: Any) -> Any:
        while isinstance(schema, dict) and "$ref" in schema and len(schema) <= 2:
            schema = self._defs[schema["$ref"].rsplit("/", 1)[1]]  # "#/$defs/<name>"
        return schema


def _discriminator(branches: list[Any]) -> str | None:
    """A property every branch fixes with a distinct `const` (a tagged union's tag)."""
    if not branches or not all(isinstance(b, dict) for b in branches):
        return None
    common: set[str] = set.intersection(*(set(b.get("properties", {})) for b in branches))
    for name in sorted(common):
        consts = [b["properties"][name].get("const", _MISSING) for b in branches]
        if _MISSING not in consts and len({_json_key(c) for c in consts}) == len(consts):
            return name
    return None


def _tag_fit(branch: Any, value: object) -> bool | None:
    """Whether `value` carries the tags `branch` fixes (properties with a `const`): True when
    it has them all, False when one is missing (if required) or different, None when the
    branch fixes none."""
    if not isinstance(branch, dict) or not isinstance(value, dict):
        return None
    fixed = {
        name: prop["const"]
        for name, prop in branch.get("properties", {}).items()
        if isinstance(prop, dict) and "const" in prop
    }
    if not fixed:
        return None
    required = branch.get("required", ())
    for name, const in fixed.items():
        if name not in value:
            if name in required:
                return False
        elif _json_key(value[name]) != _json_key(const):
            return False
    return True


_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    type(None): "null",
    dict: "object",
    list: "array",
    tuple: "array",
}


def _types(schema: Any) -> list[str]:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return [kind] if isinstance(kind, str) else list(kind or ())


def _admits(schema: Any, value: object) -> bool:
    """Whether `schema`'s `type` (if any) admits `value`'s JSON type."""
    types = _types(schema)
    name = _type_name(value)
    return not types or name in types or (name == "integer" and "number" in types)


def _json_key(value: object) -> str:
    """`value` as JSON Schema compares it: 1 equals 1.0, true does not equal 1."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, default=str)


def unencodable(instance: object) -> Violation:
    """Where `instance` holds a string (or a property name) that is not valid Unicode."""
    return Violation(_surrogate_at(instance, ()) or (), "not valid Unicode (a lone surrogate)")


def _surrogate_at(value: object, path: tuple[Segment, ...]) -> tuple[Segment, ...] | None:
    if isinstance(value, str):
        return path if _lone_surrogate(value) else None
    if isinstance(value, dict):
        items: Iterable[tuple[Segment, object]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if isinstance(key, str) and _lone_surrogate(key):
            return path
        found = _surrogate_at(item, (*path, key))
        if found is not None:
            return found
    return None


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def _unexpected(names: list[str]) -> str:
    return "unexpected property " + ", ".join(map(_show, names))


def _forbidden(schema: Any, value: object) -> str:
    """Why `value` fails ``not: schema``; a `not` of `required` forbids members, named then."""
    options = schema.get("anyOf", [schema]) if isinstance(schema, dict) else []
    for option in options:
        names = option.get("required") if isinstance(option, dict) and len(option) == 1 else None
        if names and isinstance(value, dict) and all(name in value for name in names):
            listed = ", ".join(map(_show, names))
            return (
                f"property {listed} is not allowed here"
                if len(names) == 1
                else f"properties {listed} are not allowed together here"
            )
    return 'must not match the "not" schema'


def _type_name(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _located(instance: object, path: Iterable[Segment]) -> tuple[tuple[Segment, ...], object]:
    """The value at `path` in `instance`, and the path with each segment typed by its container
    (jsonschema-rs reports an object's member "0" as the number 0)."""
    typed: list[Segment] = []
    for seg in path:
        # jsonschema-rs leaves an empty member name ("") out of the path: step into it.
        while isinstance(instance, dict) and str(seg) not in instance and "" in instance:
            typed.append("")
            instance = instance[""]
        if isinstance(instance, dict):
            seg = str(seg)
        typed.append(seg)
        instance = instance[seg]  # type: ignore[index]
    return tuple(typed), instance


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _or(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]


def _describe(error: Any, value: object) -> str:
    """One error of jsonschema-rs in this project's words."""
    kind = error.kind
    name = type(kind).__name__
    if name == "Required":
        return f"missing required property {_show(kind.property)}"
    if name == "Constant":
        return f"expected {_show(kind.expected_value)}, got {_show(value)}"
    if name == "Enum":
        return "expected one of " + ", ".join(map(_show, kind.options)) + f", got {_show(value)}"
    if name in ("AdditionalProperties", "UnevaluatedProperties"):
        return _unexpected(kind.unexpected)
    if name in ("MinLength", "MaxLength"):
        word = "at least" if name == "MinLength" else "at most"
        return f"expected {word} {_count(kind.limit, 'character')}, got {len(str(value))}"
    if name in ("MinItems", "MaxItems"):
        word = "at least" if name == "MinItems" else "at most"
        size = len(value) if isinstance(value, list | tuple) else 0
        return f"expected {word} {_count(kind.limit, 'item')}, got {size}"
    if name in ("Minimum", "Maximum"):
        sign = ">=" if name == "Minimum" else "<="
        return f"expected {sign} {_show(kind.limit)}, got {_show(value)}"
    if name == "FalseSchema":
        return "no value is allowed here"
    return str(error.message)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
