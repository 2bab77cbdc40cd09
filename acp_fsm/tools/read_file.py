"""read_file: a window of lines of a text file (the editor's buffer when it can read files)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from acp_fsm import redact
from acp_fsm.blocking import run_blocking
from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, FileMissing
from acp_fsm.tools.text_files import (
    check_text_file,
    editor_serves,
    open_text_file,
    read_from_editor,
    split_lines,
)

# Lines returned when the call gives no `limit`.
MAX_READ_LINES = 2000
# The most text one call returns (UTF-8 bytes), whatever the limit.
MAX_READ_BYTES = 256 * 1024
# Piece size when skipping lines before `offset` on disk (keeps long lines out of memory).
SKIP_CHUNK_CHARS = 64 * 1024


def read_disk_lines(path: Path, shown: str, offset: int, count: int) -> list[str]:
    """Up to `count` lines from line `offset` on, stopping once `MAX_READ_BYTES` are held
    (blocking: call it through `run_blocking`). `ToolError` unless `path` is a text file.

    A line longer than the cap comes back cut (without its newline); the caller notices.
    """
    lines: list[str] = []
    held = 0
    raw = open_text_file(path, shown)
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n") as handle:
        skipped = 0
        while skipped < offset - 1:
            piece = handle.readline(SKIP_CHUNK_CHARS)
            if not piece:
                return lines
            skipped += piece.endswith("\n")
        while len(lines) < count and held <= MAX_READ_BYTES:
            line = handle.readline(MAX_READ_BYTES + 1)
            if not line:
                break
            lines.append(line)
            held += len(line)
    return lines


def render_window(lines: list[str], offset: int, want: int, explicit: bool, shown: str) -> str:
    """The text for the model: the lines that fit, then a note on what was left out.

    `lines` holds up to `want + 1` lines from `offset`; one more than `want` means the file
    continues past the window.
    """
    continues = len(lines) > want
    kept: list[str] = []
    used = 0
    cut = False
    for line in lines[:want]:
        size = len(line.encode("utf-8"))
        if used + size > MAX_READ_BYTES:
            if not kept:  # a single line over the cap: show its beginning
                kept.append(line.encode("utf-8")[:MAX_READ_BYTES].decode("utf-8", "ignore"))
                cut = True
            break
        kept.append(line)
        used += size
    if not kept:
        if offset == 1:
            return f"({shown} is empty)"
        return f"(no lines: {shown} has fewer than {offset:,} lines)"
    last = offset + len(kept) - 1
    span = f"lines {offset:,}-{last:,}"
    if cut:
        note = (
            f"[Line {last:,} is longer than {MAX_READ_BYTES // 1024} KiB and was cut; the "
            f"rest of it cannot be read with read_file. Continue with offset={last + 1}.]"
        )
    elif len(kept) < min(len(lines), want):
        note = (
            f"[Output truncated at {MAX_READ_BYTES // 1024} KiB: showing {span}. Call "
            f"read_file with offset={last + 1} to read on.]"
        )
    elif continues and not explicit:
        note = (
            f"[Showing {span}; the file continues (read_file returns at most "
            f"{MAX_READ_LINES:,} lines when no limit is given). Call read_file with "
            f"offset={last + 1} to read on.]"
        )
    elif continues:
        note = f"[Showing {span}; the file continues at offset={last + 1}.]"
    else:
        return "".join(kept)
    text = "".join(kept)
    separator = "" if text.endswith("\n") else "\n"
    return f"{text}{separator}{note}"


class ReadFile(BaseTool):
    name = "read_file"
    description = (
        "Read a text file. Returns the file's lines exactly as they are (no line numbers); "
        f"without `limit`, at most {MAX_READ_LINES:,} lines, and never more than "
        f"{MAX_READ_BYTES // 1024} KiB. When more remains, a note at the end gives the "
        "`offset` to continue from. Shows the editor's unsaved changes when there are any."
    )
    arguments = "ReadFileArguments"
    kind = "read"

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        offset, limit = args.get("offset"), args.get("limit")
        title = f"Read {self.shown(args, env)}"
        if isinstance(limit, int):
            start = offset if isinstance(offset, int) else 1
            return f"{title} (lines {start}-{start + limit - 1})"
        if isinstance(offset, int) and offset > 1:
            return f"{title} (from line {offset})"
        return title

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        offset = args.get("offset")
        line = offset if isinstance(offset, int) and offset >= 1 else 1
        return ToolCallView(
            title=self.title(args, env),
            kind=self.kind,
            locations=({"path": str(self.target(args, env)), "line": line},),
            raw_input=dict(args),
        )

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        path, shown = self.target(args, env), self.shown(args, env)
        offset = int(args.get("offset", 1))
        explicit = args.get("limit") is not None
        want = int(args["limit"]) if explicit else MAX_READ_LINES
        if editor_serves(env.client.can_read_files, path):
            on_disk = await run_blocking(env.token, check_text_file, path, shown)
            text = await read_from_editor(env, path, shown, on_disk, offset, want + 1)
            if text is None:
                raise FileMissing(
                    f"File not found: {shown} (it is not on disk, and the editor has no text "
                    "for it)"
                )
            lines = split_lines(text)[: want + 1]
        else:
            lines = await run_blocking(env.token, read_disk_lines, path, shown, offset, want + 1)
        scrub = redact.configured().scrub_text  # before a long line is cut (a key split in two)
        lines = [scrub(line) for line in lines]
        return ToolOutcome(
            render_window(lines, offset, want, explicit, shown),
            locations=({"path": str(path), "line": offset},),
        )
