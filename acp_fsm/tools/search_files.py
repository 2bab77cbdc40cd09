"""search_files: a Python regular expression over the text files below a directory."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_fsm.tools.base import ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool, ToolError, plural, text_block
from acp_fsm.tools.files import looks_binary, split_lines
from acp_fsm.tools.globs import GlobFilter

# Matching lines reported before the search stops.
MAX_SEARCH_MATCHES = 200
# Size of the report (UTF-8 bytes) before the search stops.
MAX_SEARCH_OUTPUT_BYTES = 64 * 1024
# Files larger than this are skipped (generated or data files, mostly).
MAX_SEARCH_FILE_BYTES = 1024 * 1024
# Files read before the search stops, so a huge tree cannot run unbounded.
MAX_SEARCH_FILES = 20_000
# A matching line is shown up to this many characters.
MAX_MATCH_LINE_CHARS = 300
# Directories never descended into (version control, dependencies, caches).
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox",
})


@dataclass
class SearchReport:
    """What one search found, and why it stopped early (None when it did not)."""

    lines: list[str] = field(default_factory=list)
    size: int = 0
    skipped_large: int = 0
    stopped: str | None = None


def walk_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, path relative to `root`) of every file below `root`, in a stable order.

    Skips `SKIPPED_DIRS` and follows no symbolic links (no cycles, no escaping `root`).
    """
    if not root.is_dir():
        yield root, root.name
        return
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in SKIPPED_DIRS)
        relative = Path(directory).relative_to(root).as_posix()
        for name in sorted(names):
            path = Path(directory, name)
            if not path.is_symlink():  # a link may lead anywhere, even outside the roots
                yield path, name if relative == "." else f"{relative}/{name}"


def search_tree(root: Path, shown_root: str, regex: re.Pattern[str], wanted: GlobFilter | None,
                stop: threading.Event) -> SearchReport:
    """Search the text files below `root`; runs in a thread and returns once `stop` is set."""
    if not root.exists():
        raise ToolError(f"Path not found: {shown_root}")
    report = SearchReport()
    single = not root.is_dir()
    for scanned, (path, relative) in enumerate(walk_files(root)):
        if stop.is_set() or report.stopped:
            break
        if scanned >= MAX_SEARCH_FILES:
            report.stopped = f"after reading {MAX_SEARCH_FILES:,} files"
            break
        if wanted is not None and not single and not wanted.matches(relative):
            continue
        try:
            if path.stat().st_size > MAX_SEARCH_FILE_BYTES:
                report.skipped_large += 1
                continue
            data = path.read_bytes()
        except OSError:
            continue  # unreadable, vanished or a dangling link: nothing to search
        if looks_binary(data):
            continue
        shown = shown_root if single else (
            relative if shown_root == "." else f"{shown_root}/{relative}")
        for number, line in enumerate(split_lines(data.decode("utf-8", "replace")), 1):
            text = line.rstrip("\r\n")
            if regex.search(text) is None:
                continue
            entry = f"{shown}:{number}: {text[:MAX_MATCH_LINE_CHARS]}"
            report.lines.append(entry)
            report.size += len(entry.encode("utf-8")) + 1
            if len(report.lines) >= MAX_SEARCH_MATCHES:
                report.stopped = f"at {MAX_SEARCH_MATCHES:,} matches"
            elif report.size >= MAX_SEARCH_OUTPUT_BYTES:
                report.stopped = f"at {MAX_SEARCH_OUTPUT_BYTES // 1024} KiB of results"
            if report.stopped:
                break
    return report


def render_report(report: SearchReport, pattern: str, where: str) -> str:
    """The text for the model: matching lines, then notes on what was not searched."""
    notes = []
    if report.stopped:
        notes.append(f"[Search stopped {report.stopped}; narrow the pattern, path or glob to "
                     "see the rest.]")
    if report.skipped_large:
        notes.append(f"[Skipped {plural(report.skipped_large, 'file')} larger than "
                     f"{MAX_SEARCH_FILE_BYTES // 1024} KiB.]")
    body = report.lines or [f"No matches for /{pattern}/ in {where}."]
    return "\n".join(body + notes)


class SearchFiles(BaseTool):
    name = "search_files"
    description = (
        "Search text files for a Python regular expression, line by line. Returns "
        "`path:line: text` for each matching line (paths relative to the working directory). "
        "Skips binary files, files over "
        f"{MAX_SEARCH_FILE_BYTES // 1024} KiB and {', '.join(sorted(SKIPPED_DIRS))}. At most "
        f"{MAX_SEARCH_MATCHES} matches are returned."
    )
    arguments = "SearchFilesArguments"
    kind = "search"
    default_path = "."

    def check(self, args: dict[str, Any]) -> str | None:
        try:
            re.compile(args["pattern"])
        except re.error as exc:
            return f"Invalid regular expression {args['pattern']!r}: {exc}"
        if "glob" in args:
            try:
                GlobFilter(args["glob"])
            except (ValueError, re.error) as exc:
                return f"Invalid glob {args['glob']!r}: {exc}"
        return None

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        title = f"Search /{args.get('pattern', '')}/ in {self.shown(args, env)}"
        glob = args.get("glob")
        return f"{title} ({glob})" if isinstance(glob, str) else title

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        root, shown = self.target(args, env), self.shown(args, env)
        regex = re.compile(args["pattern"])
        wanted = GlobFilter(args["glob"]) if "glob" in args else None
        stop = threading.Event()
        remove = env.token.on_cancel(stop.set)
        try:
            report = await env.token.race(
                asyncio.to_thread(search_tree, root, shown, regex, wanted, stop))
        finally:
            remove()
            stop.set()  # the thread ends after its current file, however we leave
        where = f"{shown} (files matching {args['glob']})" if wanted else shown
        output = render_report(report, args["pattern"], where)
        return ToolOutcome(output, content=(text_block(output),))
