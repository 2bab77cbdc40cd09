"""Instances of a JSON Schema document's definitions, for cross-checking two schemas.

`Generator(doc)` understands the Draft 2020-12 subset the ACP schemas use: local `$ref`,
`allOf` / `anyOf` / `oneOf`, `const`, `enum`, `type`, `properties` / `required` /
`additionalProperties`, `items` / `minItems` / `maxItems`, `minimum` / `maximum`,
`minLength` / `maxLength` and the integer `format`s (`uint16`, `int32`, ...). A schema with no
`type` accepts any JSON value and gets a small random one.

`Generator.examples(name, seed)` is deterministic: for every branch point reachable from the
definition (each `anyOf` / `oneOf` branch, each `enum` value), one instance that takes that
branch, steered there through optional properties, array items and enclosing unions; then a
few unsteered ones. So every tagged-union branch (ContentBlock, SessionUpdate, ToolCallContent,
RequestPermissionOutcome, McpServer, ...) and every nullable alternative is exercised. Each
instance is validated against its own schema and drawn again when a keyword the generator does
not steer (a `oneOf` overlap, `not`) made it invalid.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Bounds of the integer formats of the ACP schema (serde's names).
INT_FORMATS = {
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
FREE_EXAMPLES = 6  # unsteered instances per definition, after the steered ones
ATTEMPTS = 25  # draws per wanted instance before giving up
DEEP = 6  # beyond this nesting, only what is required (unless steering towards a target)
ALPHABET = "abcxyz019 _-./:é€中😀"
TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")

Branch = tuple[str, int]  # (JSON pointer of a union or enum, index of the branch or value)


class Unsatisfiable(Exception):
    """This draw hit a contradiction (`false`, disjoint types); draw again."""


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


@dataclass
class Examples:
    """What `Generator.examples` produced for one definition."""

    name: str
    instances: list[Any] = field(default_factory=list)
    covered: set[Branch] = field(default_factory=set)
    missed: list[Branch] = field(default_factory=list)  # no valid instance took them


class Generator:
    """Instances of the definitions of one schema document (see the module docstring)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        from jsonschema import Draft202012Validator

        self.doc = doc
        self.nodes: dict[str, Any] = {}
        self.edges: dict[str, list[str]] = {}
        for name, definition in doc["$defs"].items():
            self._index(f"/$defs/{_escape(name)}", definition)
        self.reach = self._reachability()
        self._validators: dict[str, Any] = {}
        self._validator_class = Draft202012Validator

    # ------------------------------------------------------------------ the graph

    def _index(self, pointer: str, node: Any) -> None:
        self.nodes[pointer] = node
        children: list[str] = []
        if isinstance(node, dict):
            for key in ("items", "additionalProperties", "not"):
                if isinstance(node.get(key), dict):
                    children.append(f"{pointer}/{key}")
            for key in ("allOf", "anyOf", "oneOf"):
                children += [f"{pointer}/{key}/{i}" for i in range(len(node.get(key, ())))]
            children += [f"{pointer}/properties/{_escape(k)}" for k in node.get("properties", {})]
            for child in children:
                self._index(child, _resolve_pointer(node, child[len(pointer) :]))
            if isinstance(node.get("$ref"), str):
                children.append(self._target(node["$ref"]))
        self.edges[pointer] = [c for c in children if not c.endswith("/not")]

    def _target(self, ref: str) -> str:
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"only local $defs references are supported, not {ref!r}")
        return ref[1:]

    @staticmethod
    def branch_count(node: Any) -> int:
        """How many branches a node offers: union members, enum values, or listed types."""
        if not isinstance(node, dict):
            return 0
        for key in ("anyOf", "oneOf", "enum"):
            if node.get(key):
                return len(node[key])
        return len(node["type"]) if isinstance(node.get("type"), list) else 0

    def _reachability(self) -> dict[str, frozenset[str]]:
        """pointer -> the branch points reachable from it (itself included)."""
        reach = {p: {p} if self.branch_count(n) else set() for p, n in self.nodes.items()}
        changed = True
        while changed:
            changed = False
            for pointer, children in self.edges.items():
                before = len(reach[pointer])
                for child in children:
                    reach[pointer] |= reach[child]
                changed |= len(reach[pointer]) != before
        return {p: frozenset(r) for p, r in reach.items()}

    def branch_points(self, name: str) -> list[Branch]:
        """Every (branch point, branch) reachable from definition `name`, sorted."""
        points = self.reach[f"/$defs/{_escape(name)}"]
        return sorted((p, i) for p in points for i in range(self.branch_count(self.nodes[p])))

    # ------------------------------------------------------------------ examples

    def validator(self, name: str) -> Any:
        check = self._validators.get(name)
        if check is None:
            check = self._validators[name] = self._validator_class(
                {"$defs": self.doc["$defs"], "$ref": f"#/$defs/{name}"}
            )
        return check

    def examples(self, name: str, seed: int = 0, free: int = FREE_EXAMPLES) -> Examples:
        """Instances of `name` valid under it: one per reachable branch, then `free` more."""
        out = Examples(name)
        wanted: list[Branch | None] = [*self.branch_points(name), *([None] * free)]
        for target in wanted:
            if target is not None and target in out.covered:
                continue
            rng = random.Random(f"{seed}:{name}:{target}")
            for _ in range(ATTEMPTS):
                draw = _Draw(self, rng, target)
                try:
                    instance = draw.value([f"/$defs/{_escape(name)}"], 0)
                except Unsatisfiable:
                    continue
                if (target is None or target in draw.taken) and self.validator(name).is_valid(
                    instance
                ):
                    out.instances.append(instance)
                    out.covered |= draw.taken
                    break
            else:
                if target is not None:
                    out.missed.append(target)
        return out


def _resolve_pointer(node: Any, relative: str) -> Any:
    for part in relative.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


class _Draw:
    """One instance being drawn, steered towards `target` until it is taken."""

    def __init__(self, gen: Generator, rng: random.Random, target: Branch | None) -> None:
        self.gen = gen
        self.rng = rng
        self.target = target
        self.taken: set[Branch] = set()

    def pending(self) -> Branch | None:
        """The target, until an instance takes it."""
        return None if self.target is None or self.target in self.taken else self.target

    def leads(self, pointers: list[str]) -> bool:
        """Whether the pending target is reachable from any of `pointers`."""
        target = self.pending()
        return target is not None and any(target[0] in self.gen.reach[p] for p in pointers)

    def _conjuncts(self, pointers: list[str]) -> Iterator[str]:
        """The pointers `pointers` require: themselves, their `$ref`s and `allOf`s."""
        todo = list(pointers)
        while todo:
            pointer = todo.pop(0)
            node = self.gen.nodes[pointer]
            if node is False:
                raise Unsatisfiable(pointer)
            if not isinstance(node, dict):
                continue
            yield pointer
            if isinstance(node.get("$ref"), str):
                todo.append(self.gen._target(node["$ref"]))
            todo += [f"{pointer}/allOf/{i}" for i in range(len(node.get("allOf", ())))]

    def _choose(self, pointer: str, depth: int) -> int:
        """The branch to take at a union or enum."""
        node = self.gen.nodes[pointer]
        count = self.gen.branch_count(node)
        target = self.pending()
        if target is not None and target[0] == pointer:
            return target[1]
        key = "anyOf" if "anyOf" in node else "oneOf" if "oneOf" in node else None
        if key is not None:
            branches = [f"{pointer}/{key}/{i}" for i in range(count)]
            leading = [i for i, b in enumerate(branches) if self.leads([b])]
            if leading:
                return self.rng.choice(leading)
            if depth > DEEP:
                flat = [i for i, b in enumerate(branches) if not self.gen.reach[b] - {pointer}]
                return self.rng.choice(flat or list(range(count)))
        return self.rng.randrange(count)

    def value(self, pointers: list[str], depth: int) -> Any:
        """A value meant to satisfy every schema in `pointers` at once."""
        conj = list(self._conjuncts(pointers))
        i = 0
        while i < len(conj):
            node = self.gen.nodes[conj[i]]
            for key in ("anyOf", "oneOf"):
                if key in node:
                    choice = self._choose(conj[i], depth)
                    self.taken.add((conj[i], choice))
                    conj += self._conjuncts([f"{conj[i]}/{key}/{choice}"])
            i += 1
        nodes = [self.gen.nodes[p] for p in conj]
        for pointer, node in zip(conj, nodes, strict=True):
            if "const" in node:
                return copy.deepcopy(node["const"])
            if "enum" in node:
                choice = self._choose(pointer, depth)
                self.taken.add((pointer, choice))
                return copy.deepcopy(node["enum"][choice])
        kind = self._type(conj, nodes)
        if kind == "object":
            return self._object(conj, nodes, depth)
        if kind == "array":
            return self._array(conj, nodes, depth)
        return self._scalar(kind, nodes)

    def _type(self, conj: list[str], nodes: list[dict[str, Any]]) -> str:
        """The JSON type to draw; a listed type taken is recorded as a branch."""
        allowed = set(TYPES)
        target = self.pending()
        for pointer, node in zip(conj, nodes, strict=True):
            if "type" in node:
                declared = {node["type"]} if isinstance(node["type"], str) else set(node["type"])
                if target is not None and target[0] == pointer:
                    declared = {node["type"][target[1]]}
                allowed &= declared | ({"integer"} if "number" in declared else set())
        if not allowed:
            raise Unsatisfiable(f"no type satisfies {conj}")
        kind = self.rng.choice(sorted(allowed))
        if (
            "object" in allowed
            and any("properties" in n or "required" in n for n in nodes)
            and (len(allowed) == 1 or self.rng.random() < 0.8 or self.leads(conj))
        ):
            kind = "object"
        elif "array" in allowed and self.leads(conj):
            kind = "array"
        for pointer, node in zip(conj, nodes, strict=True):
            if isinstance(node.get("type"), list) and self.gen.branch_count(node) == len(
                node["type"]
            ):
                listed = node["type"]
                index = listed.index(kind) if kind in listed else listed.index("number")
                self.taken.add((pointer, index))
        return kind

    def _object(self, conj: list[str], nodes: list[dict[str, Any]], depth: int) -> Any:
        props: dict[str, list[str]] = {}
        required: set[str] = set()
        extra: list[str] = []
        closed = False
        for pointer, node in zip(conj, nodes, strict=True):
            for key in node.get("properties", {}):
                props.setdefault(key, []).append(f"{pointer}/properties/{_escape(key)}")
            required.update(node.get("required", ()))
            more = node.get("additionalProperties", True)
            closed |= more is False
            if isinstance(more, dict):
                extra.append(f"{pointer}/additionalProperties")
        keys = sorted(required)
        for key in sorted(set(props) - required):
            if self.leads(props[key]) or (depth <= DEEP and self.rng.random() < 0.5):
                keys.append(key)
        out = {
            key: self.value(props.get(key, []), depth + 1) if key in props else self._any(depth + 1)
            for key in keys
        }
        if not closed and depth <= DEEP and self.rng.random() < 0.3:
            # ACP objects are open: an unknown member must be accepted.
            out["extraMember"] = self.value(extra, depth + 1) if extra else self._any(depth + 1)
        return out

    def _array(self, conj: list[str], nodes: list[dict[str, Any]], depth: int) -> Any:
        items = [f"{p}/items" for p, n in zip(conj, nodes, strict=True) if "items" in n]
        low = max([0, *(n["minItems"] for n in nodes if "minItems" in n)])
        high = min([low + 3, *(n["maxItems"] for n in nodes if "maxItems" in n)])
        if depth > DEEP and not self.leads(items):
            high = low
        size = self.rng.randint(low, high)
        if size == 0 and self.leads(items) and high > 0:
            size = 1
        return [
            self.value(items, depth + 1) if items else self._any(depth + 1) for _ in range(size)
        ]

    def _scalar(self, kind: str, nodes: list[dict[str, Any]]) -> Any:
        if kind == "null":
            return None
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "string":
            low = max([0, *(n["minLength"] for n in nodes if "minLength" in n)])
            high = min([low + 8, *(n["maxLength"] for n in nodes if "maxLength" in n)])
            return "".join(self.rng.choice(ALPHABET) for _ in range(self.rng.randint(low, high)))
        low, high = -(2**53), 2**53
        for node in nodes:
            fmt_low, fmt_high = INT_FORMATS.get(node.get("format", ""), (low, high))
            low = max(low, fmt_low, node.get("minimum", low))
            high = min(high, fmt_high, node.get("maximum", high))
        if low > high:
            raise Unsatisfiable(f"no number in [{low}, {high}]")
        if kind == "number" and self.rng.random() < 0.5 and high - low >= 1:
            return round(self.rng.uniform(max(low, -1e6), min(high, 1e6)), 3)
        picks = [v for v in (0, 1, 7, 255, 65535, 2**31 - 1) if low <= v <= high]
        return self.rng.choice([int(low), int(high), *picks])

    def _any(self, depth: int) -> Any:
        """A small random JSON value (for schemas that accept anything)."""
        roll = self.rng.randrange(8 if depth <= DEEP else 5)
        if roll < 5:
            return [None, True, 42, -1.5, "any"][roll]
        if roll == 5:
            return [self._any(depth + 1)]
        return {"k": self._any(depth + 1)}


def show(instance: Any, limit: int = 500) -> str:
    """An instance as JSON, shortened for failure messages."""
    text = json.dumps(instance, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
