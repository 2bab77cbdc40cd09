"""What every tool shares: argument checking, failures turned into outcomes, editor requests.

A tool subclasses `BaseTool`, sets its contract (`name`, `description`, `input_schema`, `kind`)
and implements `execute`. Inside `execute` a failed action raises `ToolError` (or lets an
`OSError` escape); `run` turns both into an error `ToolOutcome` the model reads. `Cancelled`
always propagates. Blocking file-system work goes through `acp_fsm.blocking.run_blocking`, so
a cancel never waits for it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from acp_fsm import schemas
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools.base import Drafts, ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.paths import display, inside_roots, is_utf8, resolve, utf8_text

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContent

T = TypeVar("T")
TOOLS_SCHEMA = "tools.json"  # every tool's arguments, one definition each


@cache
def tool_schema(definition: str) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments, as the model is shown it."""
    schema: dict[str, Any] = schemas.load_json(TOOLS_SCHEMA)["$defs"][definition]
    return schema


@cache
def _argument_validator(definition: str) -> Callable[[object], schemas.Violation | None]:
    return schemas.validator(f"tools.{definition}")


class ToolError(Exception):
    """The action failed; the message is what the model reads."""


class FileMissing(ToolError):
    """There is no file at the path (on disk, or in the editor's words)."""


def linked_elsewhere(path: Path) -> bool:
    """`path` is a regular file with more than one hard link: the same file may also be
    reached from outside the roots, so its path alone does not confine it."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte, which no path can hold
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink > 1


def describe_os_error(exc: OSError) -> str:
    """A one-line account of a file-system failure, e.g. `Permission denied: /etc/shadow`."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    name = exc.filename
    if not name:
        return reason
    return f"{reason}: {utf8_text(os.fsdecode(name) if isinstance(name, bytes) else str(name))}"


async def ask_client(env: ToolEnv, request: Awaitable[T], action: str) -> T:
    """Await an editor request unless the turn's token fires first (`Cancelled`).

    A failure of the editor becomes a `ToolError` saying which `action` failed; `FileMissing`
    when the editor said there is no such file (`not_found` on its error).
    """
    try:
        return await env.token.race(request)
    except Cancelled:
        raise
    except Exception as exc:
        env.token.raise_if_cancelled()  # the bridge may report our own cancel as its error
        error = FileMissing if getattr(exc, "not_found", False) else ToolError
        raise error(f"The editor could not {action}: {exc}") from exc


def plural(count: int, noun: str) -> str:
    """`1 line`, `3 lines`, with thousands separators."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


class BaseTool:
    """A tool as the runtime sees it (`acp_fsm.tools.base.Tool`), with shared plumbing.

    Read-only tools name their target in the `path` argument (`default_path` when optional);
    the permission rule for them is "ask only outside the session roots".
    """

    name: str
    description: str
    arguments: str  # the definition of its arguments in schemas/tools.json
    kind: str
    default_path: str | None = None
    unpredictable = False
    concurrent = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    @property
    def input_schema(self) -> dict[str, Any]:
        return tool_schema(self.arguments)

    def validate(self, args: dict[str, Any]) -> str | None:
        """Why `args` cannot be run (schema first, then the tool's own `check`), or None.

        The reason alone: the caller says which tool it is about.
        """
        if not isinstance(args, dict):
            return "expected a JSON object"
        violation = _argument_validator(self.arguments)(args)
        if violation is not None:
            return str(violation)
        for key, value in args.items():
            if isinstance(value, str) and not is_utf8(value):
                return f"{key} is not valid Unicode text (it contains a lone surrogate)"
        if "\0" in str(args.get("path", "")):
            return "path contains a NUL byte, which no file name can contain"
        return self.check(args)

    def check(self, args: dict[str, Any]) -> str | None:
        """Checks beyond the schema (override); None when the arguments are usable."""
        return None

    def target(self, args: dict[str, Any], env: ToolEnv) -> Path:
        """The resolved path the call is about (absolute, symlinks and `..` resolved)."""
        return resolve(str(args.get("path") or self.default_path or "."), env.cwd)

    def shown(self, args: dict[str, Any], env: ToolEnv) -> str:
        """The target as a title shows it (relative to cwd when inside it)."""
        return display(self.target(args, env), env.cwd)

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        path = self.target(args, env)
        return ToolCallView(
            title=self.title(args, env),
            kind=self.kind,
            locations=({"path": str(path)},),
            raw_input=dict(args),
        )

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        """The editor title of a call (override)."""
        return f"{self.name} {self.shown(args, env)}"

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        """Nothing to show before running (override for tools that change files)."""
        return ()

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """The call stays inside the session's roots: its path resolves below one of them, and
        is not a file with other hard links (one of which may lie anywhere)."""
        raw = args.get("path", self.default_path)
        if not isinstance(raw, str) or not raw:
            return False
        path = resolve(raw, env.cwd)
        return inside_roots(path, self.bounds(env)) and not linked_elsewhere(path)

    def bounds(self, env: ToolEnv) -> tuple[Path, ...]:
        """The folders a call stays within to be confined: for a tool that changes nothing,
        the session's roots and its skills' folders."""
        return env.readable

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """Read-only rule: ask exactly when the call is not confined to the roots."""
        return not self.confined(args, env)

    def always_asks(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """Whether the user is asked in every mode (override; no tool here needs it)."""
        return False

    async def run(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        problem = self.validate(args)
        if problem is not None:
            return ToolOutcome(f"Invalid arguments for {self.name}: {problem}", is_error=True)
        env.token.raise_if_cancelled()
        try:
            return await self.execute(args, env)
        except ToolError as exc:
            return ToolOutcome(str(exc), is_error=True)
        except OSError as exc:
            return ToolOutcome(describe_os_error(exc), is_error=True)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        """Do the action for valid `args` (override)."""
        raise NotImplementedError


class MutatingTool(BaseTool):
    """A tool that changes files or runs commands: the user is always asked."""

    def bounds(self, env: ToolEnv) -> tuple[Path, ...]:
        return env.roots  # a skill's folder is for reading

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True
