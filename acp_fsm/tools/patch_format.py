"""The patch format OpenAI's models are trained on (Codex's `apply_patch`), parsed.

    *** Begin Patch
    *** Add File: path          then its lines, each starting with `+`
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ context line             (optional: narrows where the next hunk may match)
     kept line
    -removed line
    +added line
    *** End of File             (optional: the hunk ends at the end of the file)
    *** End Patch

A blank line inside a hunk is a kept blank line (models drop its leading space). Anything
else is refused with the line number, before any file is read: a patch applies whole or not
at all, so one that was cut off (no `*** End Patch`) is refused too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acp_fsm.tools.common import ToolError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"


@dataclass(frozen=True, slots=True)
class Hunk:
    """One `@@` section of an update: its lines as (op, text), op one of ` `, `-`, `+`."""

    context: str | None  # the `@@ ...` line's text, when it has one
    lines: tuple[tuple[str, str], ...]
    at_end: bool = False  # `*** End of File` closed it
    number: int = 1  # its place in the file's hunks, for messages

    @property
    def old(self) -> list[str]:
        """The lines it expects in the file (kept and removed), in order."""
        return [text for op, text in self.lines if op != "+"]

    @property
    def added(self) -> list[str]:
        return [text for op, text in self.lines if op == "+"]


@dataclass(frozen=True, slots=True)
class FileOp:
    """What the patch does to one file."""

    kind: str  # "add", "delete" or "update"
    path: str
    move_to: str | None = None
    content: str = ""  # an added file's text
    hunks: tuple[Hunk, ...] = field(default_factory=tuple)


class _Reader:
    def __init__(self, text: str) -> None:
        self.lines = text.replace("\r\n", "\n").split("\n")
        while self.lines and not self.lines[-1].strip():
            self.lines.pop()
        self.index = 0

    def error(self, message: str) -> ToolError:
        return ToolError(f"Invalid patch, line {self.index + 1}: {message}")

    def peek(self) -> str | None:
        return self.lines[self.index] if self.index < len(self.lines) else None

    def take(self) -> str:
        line = self.lines[self.index]
        self.index += 1
        return line


def parse_patch(text: str) -> list[FileOp]:
    """The file operations of a whole patch; `ToolError` saying what is wrong and where."""
    reader = _Reader(text.strip("\n"))
    if not reader.lines or reader.lines[0].strip() != BEGIN:
        raise ToolError(f"Invalid patch: it must start with the line `{BEGIN}`")
    reader.index = 1
    ops: list[FileOp] = []
    while True:
        line = reader.peek()
        if line is None:
            raise ToolError(
                f"Invalid patch: it does not end with `{END}` (was it cut off?); nothing was "
                "changed"
            )
        if line.strip() == END:
            break
        ops.append(_file_op(reader))
    if reader.index + 1 < len(reader.lines):
        reader.index += 1
        raise reader.error(f"text after `{END}`")
    if not ops:
        raise ToolError("Invalid patch: it changes no file")
    return ops


def _path(reader: _Reader, line: str, prefix: str) -> str:
    path = line[len(prefix) :].strip()
    if not path:
        raise reader.error(f"`{prefix.strip()}` names no file")
    return path


def _file_op(reader: _Reader) -> FileOp:
    line = reader.take()
    if line.startswith(ADD):
        path = _path(reader, line, ADD)
        added = []
        while (nxt := reader.peek()) is not None and nxt.startswith("+"):
            added.append(reader.take()[1:])
        return FileOp("add", path, content="".join(f"{text}\n" for text in added))
    if line.startswith(DELETE):
        return FileOp("delete", _path(reader, line, DELETE))
    if line.startswith(UPDATE):
        path = _path(reader, line, UPDATE)
        move_to = None
        if (nxt := reader.peek()) is not None and nxt.startswith(MOVE):
            move_to = _path(reader, reader.take(), MOVE)
        hunks = _hunks(reader)
        if not hunks and move_to is None:
            raise reader.error(f"`{UPDATE}{path}` has no hunk")
        return FileOp("update", path, move_to=move_to, hunks=tuple(hunks))
    reader.index -= 1
    raise reader.error(f"expected `{ADD}`, `{DELETE}`, `{UPDATE}` or `{END}`, found {line[:80]!r}")


def _hunks(reader: _Reader) -> list[Hunk]:
    hunks: list[Hunk] = []
    while (line := reader.peek()) is not None and not line.startswith("*** "):
        context: str | None = None
        if line.startswith("@@"):
            context = line[2:].strip() or None
            reader.take()
        elif hunks:  # only the first hunk may omit its `@@`
            raise reader.error(f"expected `@@` or a `***` line, found {line[:80]!r}")
        lines, at_end = _hunk_lines(reader)
        if not lines:
            raise reader.error("a hunk with no lines")
        hunks.append(Hunk(context, tuple(lines), at_end, len(hunks) + 1))
    return hunks


def _hunk_lines(reader: _Reader) -> tuple[list[tuple[str, str]], bool]:
    lines: list[tuple[str, str]] = []
    while (line := reader.peek()) is not None:
        if line.strip() == END_OF_FILE:
            reader.take()
            return lines, True
        if line.startswith(("@@", "*** ")):
            break
        if line == "":
            lines.append((" ", ""))
        elif line[0] in " -+":
            lines.append((line[0], line[1:]))
        else:
            raise reader.error(f"a hunk line must start with ' ', '-' or '+', found {line[:80]!r}")
        reader.take()
    return lines, False
