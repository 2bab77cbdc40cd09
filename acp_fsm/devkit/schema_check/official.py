"""The official ACP schema: what it says of one message (`source` finds the file).

`OfficialSchema` validates a whole message against the schema's root and its params, result or
error against the definition of its method, found through the official `x-method` / `x-side`
annotations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Final

from acp_fsm import schemas
from acp_fsm.devkit.editor.link import PAYLOAD

AGENT: Final = "agent"
CLIENT: Final = "client"
UNSTABLE_FILE: Final = "schema.unstable.json"  # beside schema.json, as the SDK ships them
# Methods the agent serves for older clients that the official schema no longer defines:
# their messages are checked against the root and the agent's own schema only.
LEGACY: Final = frozenset({"session/set_model"})
# How schemas/acp.json marks a definition of newer ACP than the official files: its source.
SOURCE: Final = "Source:"
# What stands in for a `session/update` of a newer kind when the official schema judges the
# message around it.
STAND_IN: Final = {"sessionUpdate": "plan", "entries": []}


def _direct_refs(node: Any) -> set[str]:
    """Names of the definitions `node` references (without following them)."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_direct_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_direct_refs(v) for v in node))
    return set()


class OfficialSchema:
    """The official ACP schema: validators of its root and definitions, and its method index.

    `x-method` names a definition's method and `x-side` the side that handles it (receives the
    call and writes the answer; "protocol" for both). Results are the definitions the
    `AgentResponse` / `ClientResponse` envelopes reference; the others are params."""

    def __init__(
        self,
        doc: dict[str, Any],
        path: Path | None = None,
        unstable: OfficialSchema | None = None,
    ) -> None:
        self.doc = doc
        self.path = path
        # The unstable schema, when at hand: the definitions of methods not yet stable
        # (session/fork, say) are read there.
        self.unstable = unstable
        self.defs: dict[str, Any] = doc["$defs"]
        # The kinds of `session/update` this document defines.
        self.own_update_kinds = frozenset(tags(self.defs, "SessionUpdate"))
        self._validators: dict[str | None, Any] = {}
        results = _direct_refs(self.defs.get("AgentResponse")) | _direct_refs(
            self.defs.get("ClientResponse")
        )
        # (writer, "params" | "result", method) -> definition name
        self.index: dict[tuple[str, str, str], str] = {}
        for name, definition in self.defs.items():
            method, side = definition.get("x-method"), definition.get("x-side")
            if not isinstance(method, str) or side not in (AGENT, CLIENT, "protocol"):
                continue
            if name in results:
                self.index[(side, "result", method)] = name
            else:
                writers = (AGENT, CLIENT) if side == "protocol" else (_other(side),)
                for writer in writers:
                    self.index[(writer, "params", method)] = name

    @classmethod
    def load(cls, path: Path) -> OfficialSchema:
        """The schema at `path`, and the unstable one beside it when there is one."""
        beside = path.with_name(UNSTABLE_FILE)
        unstable = cls.load(beside) if beside.is_file() and beside != path else None
        return cls(json.loads(path.read_text(encoding="utf-8")), path, unstable)

    def newer_parts(self, node: Any) -> list[tuple[str, Any]]:
        """The parts of `node` newer than the official files, each with acp-fsm's definition
        of it: tool-call content of a newer type, a `session/update` of a newer kind."""
        if isinstance(node, list):
            return [found for value in node for found in self.newer_parts(value)]
        if not isinstance(node, dict):
            return []
        content_type = newer_content_types().get(str(node.get("type")))
        update = self.newer_update(node)
        if content_type or update:
            return [(str(content_type or update), node)]
        return [found for value in node.values() for found in self.newer_parts(value)]

    def as_official(self, node: Any) -> Any:
        """`node` as the official files judge it: its tool-call content of a newer type left
        out, a `session/update` of a newer kind replaced by `STAND_IN`."""
        if isinstance(node, list):
            newer = newer_content_types()
            kept = (v for v in node if not (isinstance(v, dict) and v.get("type") in newer))
            return [self.as_official(value) for value in kept]
        if not isinstance(node, dict):
            return node
        if self.newer_update(node) is not None:
            return STAND_IN
        return {key: self.as_official(value) for key, value in node.items()}

    def judging(self, name: str, payload: Any) -> OfficialSchema:
        """The schema that judges `payload` as definition `name`: this one, or the unstable
        one for a `session/update` of a kind only it defines (`subagent_update`)."""
        update = payload.get("update") if isinstance(payload, dict) else None
        tag = update.get("sessionUpdate") if isinstance(update, dict) else None
        later = self.unstable
        if later is None or name not in later.defs or not isinstance(tag, str):
            return self
        if tag in self.own_update_kinds or tag not in later.own_update_kinds:
            return self
        return later

    def newer_update(self, update: Any) -> str | None:
        """The definition in schemas/acp.json (marked with its source) of `update`'s kind when
        no official file defines that kind of `session/update`; None otherwise."""
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        if not isinstance(kind, str) or kind in self.update_kinds:
            return None
        return newer_update_kinds().get(kind)

    @cached_property
    def update_kinds(self) -> frozenset[str]:
        """The kinds of `session/update` the official files define (this one's and the
        unstable one's)."""
        later = self.unstable.own_update_kinds if self.unstable else frozenset()
        return self.own_update_kinds | later

    def definition(self, writer: str, part: str, method: str) -> str | None:
        """The definition of the params or result of `method` as `writer` writes them."""
        return self.index.get((writer, part, method))

    def defining(self, writer: str, part: str, method: str) -> tuple[OfficialSchema, str] | None:
        """The schema (this one, else the unstable one) that defines `method`'s part, and the
        definition's name."""
        for schema in self.documents():
            name = schema.definition(writer, part, method)
            if name is not None:
                return schema, name
        return None

    def holding(self, name: str) -> OfficialSchema | None:
        """The schema (this one, else the unstable one) that has definition `name`."""
        return next((schema for schema in self.documents() if name in schema.defs), None)

    def documents(self) -> list[OfficialSchema]:
        """This schema, then the unstable one when at hand."""
        return [self] if self.unstable is None else [self, self.unstable]

    def validator(self, name: str | None) -> Any:
        """A Draft 2020-12 validator of definition `name`, or of the root when None."""
        check = self._validators.get(name)
        if check is None:
            from jsonschema import Draft202012Validator

            schema = (
                self.doc
                if name is None
                else {
                    "$schema": self.doc.get("$schema"),
                    "$defs": self.defs,
                    "$ref": f"#/$defs/{name}",
                }
            )
            check = self._validators[name] = Draft202012Validator(schema)
        return check

    def problems(self, name: str | None, instance: Any) -> list[str]:
        """Why `instance` is invalid under `name` (the root when None): one line per error."""
        from jsonschema.exceptions import best_match

        label = name or "root"
        return [
            f"{label} {_where(best_match([e]))}" for e in self.validator(name).iter_errors(instance)
        ]

    def message_problems(
        self, writer: str, kind: str, method: str | None, message: dict[str, Any]
    ) -> list[str]:
        """A whole message against the root, and its params / result / error against the
        definition of its method (extension methods: the root only)."""
        if isinstance(message.get("id"), float):
            # JSON-RPC lets a client pick a fractional id and requires it echoed; ACP's RequestId
            # admits only integers, so the rest of the message is judged with 0 in its place.
            message = {**message, "id": 0}
        payload = message.get(PAYLOAD[kind])
        if kind == "error":
            return self.problems(None, message) + self.problems("Error", payload)
        if method is None or method.startswith("_") or method in LEGACY:
            return self.problems(None, message)
        part = "result" if kind == "result" else "params"
        found = self.defining(writer, part, method)
        if found is None:
            added = addition(part, method)
            if added is not None:  # newer ACP than the official files: acp-fsm's definition
                return self.problems(None, message) + added(payload)
            return [
                *self.problems(None, message),
                f"no official definition of the {part} of {method} written by the {writer}",
            ]
        # What is newer than the official files (`session` content, a `subagent_update` for
        # older files) is judged by acp-fsm's definition, the rest by the official one.
        newer = self.newer_parts(payload)
        own = newer_problems(newer)
        if newer:
            payload = self.as_official(payload)
            message = {**message, PAYLOAD[kind]: payload}
        # A method only the unstable schema defines is judged by that schema, root included,
        # and so is a `session/update` of a kind only it defines (`subagent_update`).
        schema, name = found
        schema = schema.judging(name, payload)
        problems = schema.problems(None, message) + schema.problems(name, payload)
        return own + problems


def newer(method: str, part: str = "params") -> str | None:
    """The name of the definition of `method`'s `part` ("params" or "result") when the
    method is one of ACP's newer than the official files, defined in schemas/acp.json with
    its source (a `$comment` that starts with `SOURCE`); None otherwise."""
    spec = schemas.load_json("methods.json").get(method)
    name = spec.get(part) if isinstance(spec, dict) else None
    definition = schemas.definitions("acp").get(name) if isinstance(name, str) else None
    if not isinstance(definition, dict):
        return None
    return name if str(definition.get("$comment", "")).startswith(SOURCE) else None


def addition(part: str, method: str) -> Callable[[Any], list[str]] | None:
    """The check of `method`'s `part` when the method is newer than the official files
    (`newer`), by acp-fsm's definition; None otherwise."""
    name = newer(method, part)
    if name is None:
        return None

    def problems(payload: Any) -> list[str]:
        violation = schemas.validate(f"acp.{name}", payload)
        return [] if violation is None else [f"acp-fsm's {name} (newer ACP): {violation}"]

    return problems


def newer_problems(parts: list[tuple[str, Any]]) -> list[str]:
    """Why parts newer than the official files (`OfficialSchema.newer_parts`) are invalid by
    acp-fsm's definitions of them."""
    found = []
    for name, part in parts:
        violation = schemas.validate(f"acp.{name}", part)
        if violation is not None:
            found.append(f"acp-fsm's {name} (newer ACP): {violation}")
    return found


def tags(defs: dict[str, Any], union: str) -> dict[str, str]:
    """The branches of tagged union `union` in `defs`: each tag's value, and the definition
    the branch refers to ("" where it refers to none)."""
    found: dict[str, str] = {}
    for branch in (defs.get(union) or {}).get("oneOf") or ():
        consts = [p.get("const") for p in (branch.get("properties") or {}).values()]
        refs = [r["$ref"].rsplit("/", 1)[1] for r in branch.get("allOf") or () if "$ref" in r]
        for tag in consts:
            if isinstance(tag, str):
                found[tag] = refs[0] if refs else ""
    return found


def _marked(union: str) -> dict[str, str]:
    """The branches of `union` in schemas/acp.json newer than the official files: those whose
    definition is marked with its source."""
    defs = schemas.definitions("acp")
    return {
        tag: name
        for tag, name in tags(defs, union).items()
        if str(defs.get(name, {}).get("$comment", "")).startswith(SOURCE)
    }


@cache
def newer_update_kinds() -> dict[str, str]:
    """The kinds of `session/update` newer than the official files (`subagent_update`), each
    with its definition in schemas/acp.json."""
    return _marked("SessionUpdate")


@cache
def newer_content_types() -> dict[str, str]:
    """The tool-call content `type`s newer than the official files (`session`), each with its
    definition in schemas/acp.json."""
    return _marked("ToolCallContent")


def _other(side: str) -> str:
    return CLIENT if side == AGENT else AGENT


def _where(error: Any) -> str:
    """`at $.update.content: 'x' is not valid ...`, bounded."""
    message = error.message if len(error.message) <= 240 else error.message[:237] + "..."
    return f"at {error.json_path}: {message}"
