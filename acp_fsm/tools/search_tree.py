"""The search search_files asks for, as its worker child runs it: walk the tree, read the
regular text files, match the pattern line by line, and report in the request's mode within
its caps. Nothing here is run in the agent's process (`acp_fsm.tools.search_files` says why).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from acp_fsm.redact import Secrets
from acp_fsm.small_files import READ_FLAGS
from acp_fsm.tools import ripgrep
from acp_fsm.tools.common import ToolError, plural
from acp_fsm.tools.globs import GlobFilter
from acp_fsm.tools.ignore import IgnoreRules
from acp_fsm.tools.paths import utf8_text
from acp_fsm.tools.text_files import looks_binary, split_lines

# Directories never descended into (version control, dependencies, caches).
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search, as the agent sends it to the worker (the caps are `search_files`' constants, read
    when the call runs). `root` is resolved and absolute; `shown_root` is how results name it;
    `where` how "no matches" names the search."""

    root: str
    shown_root: str
    pattern: str
    glob: str | None
    where: str
    max_matches: int
    max_output_bytes: int
    max_file_bytes: int
    max_files: int
    max_line_chars: int
    # Inside the roots without asking: files with other hard links (maybe outside) are skipped.
    skip_linked: bool = True
    # Scrubbed from the files before they are searched and their lines cut (a key cut in two
    # is not recognised; a pattern matched against a key would tell it).
    secrets: tuple[str, ...] = ()
    output_mode: str = "content"  # content, files or count (schemas/tools.json)
    ripgrep: str | None = None  # an `rg` binary to narrow the files read, if one is found
    context: int = 0  # lines shown before and after each match (content)
    case_sensitive: bool = True

    def to_json(self) -> str:
        """ASCII JSON: a root that is not UTF-8 travels as escaped surrogates, losslessly."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SearchRequest:
        return cls(**json.loads(text))


@dataclass
class SearchReport:
    """What one search found, and why it stopped early (None when it did not)."""

    lines: list[str] = field(default_factory=list)
    size: int = 0
    matches: int = 0  # matching lines
    files: int = 0  # files with a match
    units: int = 0  # what the match cap counts
    skipped_large: int = 0
    skipped_linked: int = 0
    stopped: str | None = None


def walk_files(root: Path) -> Iterator[tuple[Path, str]]:
    """(path, path relative to `root`) of every file below `root`, in a stable order.

    Skips `SKIPPED_DIRS` and what `.gitignore` rules ignore, and follows no symbolic links
    (no cycles, no escaping `root`).
    """
    if not root.is_dir():
        yield root, root.name
        return
    rules = IgnoreRules(root)
    for directory, subdirs, names in os.walk(root):
        base = Path(directory)
        subdirs[:] = sorted(
            d for d in subdirs if d not in SKIPPED_DIRS and not rules.ignored(base / d, True)
        )
        relative = base.relative_to(root).as_posix()
        for name in sorted(names):
            path = base / name
            if not path.is_symlink() and not rules.ignored(path, False):  # a link may lead anywhere
                yield path, name if relative == "." else f"{relative}/{name}"


def search_tree(request: SearchRequest) -> SearchReport:
    """Search the regular text files below the request's root (ripgrep, when the request
    names one, only narrows which files are read: `acp_fsm.tools.ripgrep`)."""
    root = Path(request.root)
    if not root.exists():
        raise ToolError(f"Path not found: {request.shown_root}")
    regex = re.compile(request.pattern, 0 if request.case_sensitive else re.IGNORECASE)
    wanted = GlobFilter(request.glob) if request.glob is not None else None
    scrub = Secrets(request.secrets).scrub_text
    report = SearchReport()
    single = not root.is_dir()
    walked = list(itertools.islice(walk_files(root), request.max_files + 1))
    chosen = [
        (path, relative)
        for path, relative in walked[: request.max_files]
        if wanted is None or single or wanted.matches(relative)
    ]
    kinds = {path: _kind(path, request) for path, _ in chosen}
    readable = None
    if request.ripgrep is not None:  # regular files only: ripgrep would block on a FIFO
        files = [path for path, kind in kinds.items() if kind == "regular"]
        readable = ripgrep.candidates(
            request.ripgrep, request.pattern, request.case_sensitive, files, request.secrets
        )
    for path, relative in chosen:
        data = _searchable(path, kinds[path], report, readable)
        if data is None:
            continue
        shown = (
            request.shown_root
            if single
            else utf8_text(
                relative if request.shown_root == "." else f"{request.shown_root}/{relative}"
            )
        )
        # Searched as the model is shown files: a pattern must not tell it what a key is.
        text = scrub(data.decode("utf-8", "replace"))
        lines = [line.rstrip("\r\n") for line in split_lines(text)]
        hits = [number for number, text in enumerate(lines) if regex.search(text) is not None]
        if hits and _report_file(report, request, shown, lines, hits):
            return report
    if len(walked) > request.max_files:
        report.stopped = f"after reading {request.max_files:,} files"
    return report


def _kind(path: Path, request: SearchRequest) -> str | None:
    """`regular` for a file to search, `large` or `linked` for one skipped and counted, None
    for one skipped silently (a FIFO or a device, never opened: a FIFO blocks the open)."""
    try:
        info = path.stat()
    except OSError:
        return None  # vanished or a dangling link
    if not stat.S_ISREG(info.st_mode):
        return None
    if info.st_size > request.max_file_bytes:
        return "large"
    if request.skip_linked and info.st_nlink > 1:
        return "linked"
    return "regular"


def _searchable(
    path: Path, kind: str | None, report: SearchReport, readable: set[Path] | None
) -> bytes | None:
    """The bytes of a file to search; None for one that is skipped (counted in `report`) or
    that ripgrep says cannot match (not in `readable`, when there is one)."""
    if kind == "large":
        report.skipped_large += 1
    elif kind == "linked":
        report.skipped_linked += 1
    if kind != "regular" or (readable is not None and path not in readable):
        return None
    try:
        data = read_regular(path)
    except OSError:
        return None  # unreadable or vanished: nothing to search
    return None if data is None or looks_binary(data) else data


def _report_file(
    report: SearchReport, request: SearchRequest, shown: str, lines: list[str], hits: list[int]
) -> bool:
    """Add one file's findings to `report` in the request's mode; True when a cap was hit."""
    report.files += 1
    if request.output_mode == "files":
        return _add(report, request, [shown], 1)
    if request.output_mode == "count":
        return _add(report, request, [f"{shown}:{len(hits)}"], 1, counted=len(hits))
    cut = request.max_line_chars
    if request.context == 0:
        for number in hits:
            if _add(report, request, [f"{shown}:{number + 1}: {lines[number][:cut]}"], 1):
                return True
        return False
    for begin, end in _windows(hits, request.context, len(lines)):
        group = [] if not report.lines else ["--"]
        group += [
            f"{shown}{sep}{number + 1}{sep} {lines[number][:cut]}"
            for number in range(begin, end)
            for sep in (":" if number in hits else "-",)
        ]
        if _add(report, request, group, sum(1 for n in hits if begin <= n < end)):
            return True
    return False


def _windows(hits: list[int], context: int, size: int) -> list[tuple[int, int]]:
    """The line ranges shown for `hits` with `context` lines around each, merged."""
    windows: list[tuple[int, int]] = []
    for number in hits:
        begin, end = max(0, number - context), min(size, number + context + 1)
        if windows and begin <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((begin, end))
    return windows


def _add(
    report: SearchReport, request: SearchRequest, entries: list[str], units: int, counted: int = 0
) -> bool:
    """Add `entries`, worth `units` toward the cap (matching lines; files in the `files` and
    `count` modes), `counted` matching lines (default: `units`); True when a cap is reached."""
    report.lines += entries
    report.size += sum(len(entry.encode("utf-8")) + 1 for entry in entries)
    report.units += units
    report.matches += counted or units
    if report.units >= request.max_matches:
        what = "matches" if request.output_mode == "content" else "files"
        report.stopped = f"at {request.max_matches:,} {what}"
    elif report.size >= request.max_output_bytes:
        report.stopped = f"at {request.max_output_bytes // 1024} KiB of results"
    return report.stopped is not None


def read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file at `path`, None when something else was swapped in."""
    with os.fdopen(os.open(path, READ_FLAGS), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read()


def render_report(report: SearchReport, request: SearchRequest) -> str:
    """The text for the model: matching lines, then notes on what was not searched."""
    notes = []
    if report.stopped:
        notes.append(
            f"[Search stopped {report.stopped}; narrow the pattern, path or glob to see the rest.]"
        )
    if report.skipped_large:
        notes.append(
            f"[Skipped {plural(report.skipped_large, 'file')} larger than "
            f"{request.max_file_bytes // 1024} KiB.]"
        )
    if report.skipped_linked:
        notes.append(
            f"[Skipped {plural(report.skipped_linked, 'file')} with other hard links, "
            "which may lie outside the project; read_file asks before reading one.]"
        )
    body = report.lines or [f"No matches for /{request.pattern}/ in {request.where}."]
    if report.lines and request.output_mode == "count":
        notes.insert(
            0, f"[{plural(report.matches, 'matching line')} in {plural(report.files, 'file')}.]"
        )
    return "\n".join(body + notes)


def answer(request: SearchRequest) -> dict[str, str]:
    """The worker's answer to `request`."""
    try:
        return {"output": render_report(search_tree(request), request)}
    except ToolError as exc:
        return {"error": str(exc)}
