"""JSON Schemas of the protocol and their validators (jsonschema-rs).

``validate("acp.InitializeRequest", params)`` returns None or a ``Violation`` (JSON path and
reason). A definition's validator is built on its first use (`validator`), jsonschema-rs being
imported then, not before: the startup path answers ``initialize`` without it (`schemas.plain`).
The definitions named to `plain_first` are checked by `schemas.plain` while it is sure, until
`warm` builds their validators: a process's first session is answered without jsonschema-rs,
whose validators are built in the idle time after (`acp_fsm.warm`).

Valid instances cost one native check. An invalid one is explained: jsonschema-rs says where it
failed; where that is a union with a discriminator (a property whose ``const`` tells the
branches apart: ``sessionUpdate``, ``type``, ``outcome``), the instance is checked again against
the branch it names, so the message names the field (``prompt[1].uri: expected string, got
integer``) rather than "matches none of the oneOf alternatives". See docs/architecture.md
("Validation").
"""

from __future__ import annotations

import json
import os
from functools import cache

if __name__ != "acp_fsm.schemas":  # one name per module (docs/architecture.md, "Layers")
    raise ImportError(f"import acp_fsm.schemas, not {__name__}", name=__name__)

TYPE_CHECKING = False  # imported on the startup path: no `typing`, no `pathlib`
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Any

    from acp_fsm.schemas.native import Check

__all__ = [
    "Violation",
    "compile_schema",
    "definitions",
    "load_json",
    "plain_first",
    "schema_path",
    "validate",
    "validator",
    "warm",
]

_DIR = os.path.dirname(os.path.abspath(__file__))
Segment = str | int


class Violation:
    """Why an instance is invalid: where (JSON path) and what (message). Immutable."""

    __slots__ = ("message", "path")
    path: tuple[Segment, ...]
    message: str

    def __init__(self, path: Iterable[Segment], message: str) -> None:
        object.__setattr__(self, "path", tuple(path))
        object.__setattr__(self, "message", message)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Violation is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Violation is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Violation):
            return NotImplemented
        return self.path == other.path and self.message == other.message

    def __hash__(self) -> int:
        return hash((self.path, self.message))

    def __repr__(self) -> str:
        return f"Violation(path={self.path!r}, message={self.message!r})"

    def __str__(self) -> str:
        """``params.prompt[0].text: expected string, got integer`` (message alone at the root)."""
        where = ""
        for seg in self.path:
            where += f"[{seg}]" if isinstance(seg, int) else ("." if where else "") + seg
        return f"{where}: {self.message}" if where else self.message


def validate(ref: str, instance: object) -> Violation | None:
    """Validate `instance` against ``"<file stem>.<DefName>"``; KeyError for an unknown ref."""
    return _validator_of(ref)(instance)


def validator(ref: str) -> Callable[[object], Violation | None]:
    """The validator of `ref`, for hot paths: KeyError now for an unknown ref; built on its
    first call, one native check per valid instance after that."""
    _defs_of(ref)
    return _validator_of(ref)


def compile_schema(schema: dict[str, Any]) -> Callable[[object], Violation | None]:
    """A validator of an in-memory JSON Schema (2020-12; local ``#/$defs/...`` references), with
    the same explanations: for schemas that arrive at run time, such as a tool's input schema.
    ValueError when `schema` is not a valid schema."""
    import jsonschema_rs

    from acp_fsm.schemas.native import Check

    body = {k: v for k, v in schema.items() if k != "$defs"}
    try:
        check = Check(body, schema.get("$defs", {}))
    except jsonschema_rs.ValidationError as exc:
        raise ValueError(f"not a valid JSON Schema: {exc}") from exc
    return _runner(lambda: check)


def warm(refs: Iterable[str]) -> None:
    """Build the validators of `refs` now (jsonschema-rs imported with the first)."""
    for ref in refs:
        _check(ref)


_plain_first: set[str] = set()  # the definitions `plain_first` named
_built: set[str] = set()  # the definitions whose validators are built


def plain_first(refs: Iterable[str]) -> None:
    """Check instances of `refs` in plain Python where it is sure of them (`schemas.plain`,
    which never accepts an invalid one), until their validators are built: on the first
    instance it is not sure of, or by `warm`."""
    _plain_first.update(refs)


def schema_path(name: str) -> Path:
    """Path of a file shipped in this package (``"acp"`` means ``acp.json``)."""
    from pathlib import Path

    return Path(_file(name))


def load_json(name: str) -> Any:
    """Parsed content of a JSON file shipped in this package, e.g. ``load_json("methods.json")``."""
    with open(_file(name), "rb") as f:
        return json.load(f)


def _file(name: str) -> str:
    """Absolute file name of name inside the package; no path components allowed."""
    if os.path.basename(name) != name or name in ("", ".", ".."):
        raise ValueError(f"not a file name of the schemas package: {name!r}")
    return os.path.join(_DIR, name if "." in name else name + ".json")


# ------------------------------------------------------------------------------ validators


@cache
def definitions(stem: str) -> dict[str, Any]:
    """The ``$defs`` of a schema file (``"acp"``: acp.json), read once. A file that says
    ``"$extends": "<stem>"`` (acp_v2.json) has that file's definitions but those it lists in
    ``"$removed"``, with its own added or in their place."""
    document = load_json(stem + ".json")
    defs: dict[str, Any] = document["$defs"]
    base = document.get("$extends")
    if base is None:
        return defs
    removed = set(document.get("$removed", ()))
    kept = {name: d for name, d in definitions(base).items() if name not in removed}
    return {**kept, **defs}


def _defs_of(ref: str) -> dict[str, Any]:
    """The definitions of the file `ref` names, KeyError unless it has the definition."""
    stem, _, name = ref.partition(".")
    try:
        defs = definitions(stem)
    except (OSError, ValueError):
        raise KeyError(ref) from None
    if name not in defs:
        raise KeyError(ref)
    return defs


@cache
def _validator_of(ref: str) -> Callable[[object], Violation | None]:
    native = _runner(lambda: _check(ref))

    def run(instance: object) -> Violation | None:
        if ref in _plain_first and ref not in _built:
            from acp_fsm.schemas.plain import surely_valid

            if surely_valid(ref, instance):
                return None
        return native(instance)

    run.__name__ = run.__qualname__ = f"validate_{ref.replace('.', '_')}"
    return run


def _runner(build: Callable[[], Check]) -> Callable[[object], Violation | None]:
    """The hot path: one native check per valid instance; `build` runs on the first call."""
    check: Check | None = None
    is_valid: Callable[[object], bool] | None = None

    def run(instance: object) -> Violation | None:
        nonlocal check, is_valid
        if is_valid is None:
            check = build()
            is_valid = check.is_valid
        try:
            if is_valid(instance):
                return None
        except UnicodeEncodeError:  # jsonschema-rs reads property names as UTF-8
            from acp_fsm.schemas.native import unencodable

            return unencodable(instance)
        assert check is not None
        return check.explain(instance)

    return run


@cache
def _check(ref: str) -> Check:
    from acp_fsm.schemas.native import Check

    check = Check({"$ref": f"#/$defs/{ref.partition('.')[2]}"}, _defs_of(ref))
    _built.add(ref)
    return check
