"""JSON Schemas of the protocol and their validators, compiled ahead of time to plain Python.

``validate("acp.InitializeRequest", params)`` returns None or a ``Violation`` (JSON path and
reason). The validators live in ``_generated.py`` (written by ``python -m schemas.codegen``),
imported on first use, and each is compiled on its first use: the package costs next to nothing
to import, and the generator runs even when the generated module is missing or stale. Only the
stdlib ``os`` is imported here.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

__all__ = ["Violation", "load_json", "schema_path", "validate", "validator"]

_DIR = os.path.dirname(os.path.abspath(__file__))
_TABLE: dict[str, Callable[[object], list[Any] | None]] = {}


class Violation:
    """Why an instance is invalid: where (JSON path) and what (message). Immutable."""

    __slots__ = ("message", "path")
    path: tuple[str | int, ...]
    message: str

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
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


def _to_violation(err: list[Any]) -> Violation:
    """Violation from a generated validator's error list ``[message, *reversed(path)]``."""
    return Violation(tuple(err[:0:-1]), str(err[0]))


def _lookup(ref: str) -> Callable[[object], list[Any] | None]:
    """The compiled validator of ref (compiled on first use); KeyError for an unknown ref."""
    check = _TABLE.get(ref)
    if check is None:
        from ._generated import load

        check = _TABLE[ref] = load(ref)
    return check


def validate(ref: str, instance: object) -> Violation | None:
    """Validate instance against ``"<file stem>.<DefName>"``; KeyError for an unknown ref."""
    err = _lookup(ref)(instance)
    return None if err is None else _to_violation(err)


def validator(ref: str) -> Callable[[object], Violation | None]:
    """The validator of ref (looked up once, for hot paths); KeyError for an unknown ref."""
    check = _lookup(ref)

    def run(instance: object) -> Violation | None:
        err = check(instance)
        return None if err is None else _to_violation(err)

    run.__name__ = run.__qualname__ = f"validate_{ref.replace('.', '_')}"
    return run


def schema_path(name: str) -> Path:
    """Path of a file shipped in this package (``"acp"`` means ``acp.json``)."""
    from pathlib import Path

    return Path(_file(name))


def load_json(name: str) -> Any:
    """Parsed content of a JSON file shipped in this package, e.g. ``load_json("methods.json")``."""
    import json

    with open(_file(name), "rb") as f:
        return json.load(f)


def _file(name: str) -> str:
    """Absolute file name of name inside the package; no path components allowed."""
    if os.path.basename(name) != name or name in ("", ".", ".."):
        raise ValueError(f"not a file name of the schemas package: {name!r}")
    return os.path.join(_DIR, name if "." in name else name + ".json")
