"""How often an edit lands where the model meant it: edit_file, multi_edit and apply_patch over
real files of several languages, in the shapes models really produce.

Each attempt changes one block of a file (a line altered, a line added after it): given
exactly, with the indentation lost or doubled, in spaces for a tab-indented file (and tabs for
a space-indented one), with trailing whitespace, against the file in CRLF, with typographic
quotes, with a stale line, as a text that occurs several times, as a patch with a context line
missing, and as a patch for two files of which one cannot apply. Every attempt runs the real
tool on a real file on disk and ends in one of:

- applied correctly: the file is what the change means (leading whitespace and line endings
  compared exactly; trailing whitespace and typographic quotes as the model wrote them);
- refused, with a usable message (line numbers of the closest lines or of every place found)
  or without one; nothing written;
- applied wrongly: anything else (a change at the wrong place, a partial patch).

The goal: 0 applied wrongly, and at least 95 % of the attempts that have one sensible reading
applied. `python -m bench.edits` prints the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_fsm.library import EMPTY, Library
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.questions import Answer, NotAskable, Question
from acp_fsm.schemas.acp_types import PlanEntry, ToolCallContent, ToolCallLocation
from acp_fsm.tools import TOOLS
from acp_fsm.tools.base import Checkpoint, ToolOutcome
from acp_fsm.tools.job import BackgroundJobs

ROOT = Path(__file__).resolve().parents[1]
CORPUS = [
    "bench/edit_corpus/server.js",
    "bench/edit_corpus/main.go",
    "bench/edit_corpus/ring.c",
    "bench/edit_corpus/deploy.yaml",
    "bench/edit_corpus/guide.md",
    "acp_fsm/tools/matching.py",
    "acp_fsm/tools/replace.py",
    "acp_fsm/session/lease.py",
    "schemas/tools.json",
    "pyproject.toml",
]
BLOCKS_PER_FILE = 3
SEED = 20261203
USABLE = re.compile(r"\blines? \d|^\s+\d+\t", re.MULTILINE)
_CURLY = str.maketrans({"'": "\u2019", '"': "\u201d"})


# -- a tool environment on the disk, without an editor -----------------------------------------


class _NoEditor:
    """The editor of a bench: it offers neither files nor terminals."""

    can_read_files = False
    can_write_files = False
    has_terminal = False
    shows_terminals = False
    shows_forms = False

    async def ask(self, question: Question, call_id: str | None, title: str) -> Answer:
        raise NotAskable("a bench asks nothing")

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        raise NotImplementedError

    async def write_text_file(self, path: str, content: str) -> None:
        raise NotImplementedError

    async def create_terminal(
        self, command: str, args: list[str], cwd: str, output_byte_limit: int
    ) -> str:
        raise NotImplementedError

    async def terminal_output(self, terminal_id: str) -> dict[str, Any]:
        raise NotImplementedError

    async def wait_for_terminal_exit(self, terminal_id: str) -> dict[str, Any]:
        raise NotImplementedError

    async def kill_terminal(self, terminal_id: str) -> None:
        raise NotImplementedError

    async def release_terminal(self, terminal_id: str) -> None:
        raise NotImplementedError

    def abandon_terminal(self, terminal_id: str) -> None:
        raise NotImplementedError


@dataclass
class _Env:
    cwd: Path
    client: _NoEditor = field(default_factory=_NoEditor)
    token: CancellationToken = field(default_factory=CancellationToken)
    previewed: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    call_id: str = "bench"
    asks_user: bool = False
    background: BackgroundJobs = field(default_factory=BackgroundJobs)

    library: Library = EMPTY

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.cwd,)

    @property
    def readable(self) -> tuple[Path, ...]:
        return (self.cwd,)

    def report(self, content: tuple[ToolCallContent, ...]) -> None:
        pass

    def show_plan(self, entries: list[PlanEntry]) -> None:
        pass

    def show_terminal(self, update: dict[str, Any]) -> None:
        pass

    async def delegate(self, description: str, prompt: str) -> ToolOutcome:
        raise AssertionError("no edit delegates")

    async def checkpoint(self, changes: list[Checkpoint]) -> None:
        pass  # nothing to rewind: the folder is thrown away


# -- the attempts ---------------------------------------------------------------------------


@dataclass
class Attempt:
    tool: str
    shape: str
    files: dict[str, str]  # name -> text before
    args: dict[str, Any]
    expected: dict[str, str] | None  # name -> text after; None: it must be refused
    # One sensible reading, so it should apply (counted for the 95 % goal); False for an
    # attempt that may be refused or applied as `expected` (a hunk missing a context line).
    sensible: bool = True


@dataclass(frozen=True)
class Block:
    """Lines `start`..`end` of a file and the change meant for them."""

    lines: list[str]  # the file's lines, without endings
    start: int
    end: int
    changed: list[str]  # what the block becomes

    @property
    def old(self) -> list[str]:
        return self.lines[self.start : self.end]

    def after(self) -> list[str]:
        return self.lines[: self.start] + self.changed + self.lines[self.end :]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def blocks(lines: list[str], rng: random.Random) -> Iterator[Block]:
    """Blocks of 3 to 5 lines that occur once in the file, each with a line changed and a
    line added after it (in that line's indentation)."""
    text = "\n".join(lines)
    starts = list(range(len(lines) - 5))
    rng.shuffle(starts)
    found = 0
    for start in starts:
        size = rng.randint(3, 5)
        old = lines[start : start + size]
        target = next((k for k in range(1, size) if old[k].strip()), None)
        if target is None or not old[0].strip() or text.count("\n".join(old)) != 1:
            continue
        changed = list(old)
        line = old[target]
        changed[target] = line.rstrip() + " EDITED"
        changed.insert(target + 1, _indent(line) + "ADDED")
        yield Block(lines, start, start + size, changed)
        found += 1
        if found == BLOCKS_PER_FILE:
            return


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _dedent(lines: list[str]) -> list[str]:
    width = min((len(_indent(line)) for line in lines if line.strip()), default=0)
    return [line[width:] for line in lines]


def _swap_indent(lines: list[str]) -> list[str]:
    """Tabs for leading runs of four spaces, or four spaces for leading tabs."""
    out = []
    for line in lines:
        lead = _indent(line)
        if "\t" in lead:
            out.append(lead.replace("\t", "    ") + line[len(lead) :])
        else:
            out.append("\t" * (len(lead) // 4) + " " * (len(lead) % 4) + line[len(lead) :])
    return out


# Each shape: (name, how the model's old and new lines differ from the file's, whether the
# file is CRLF). None: the shape does not apply to the block.
Retype = Callable[[Block], tuple[list[str], list[str]] | None]


def _exact(b: Block) -> tuple[list[str], list[str]]:
    return b.old, b.changed


def _indent_lost(b: Block) -> tuple[list[str], list[str]] | None:
    if not any(_indent(line) for line in b.old if line.strip()):
        return None
    return _dedent(b.old), _dedent(b.changed)


def _indent_doubled(b: Block) -> tuple[list[str], list[str]]:
    return (["    " + line if line.strip() else line for line in b.old],
            ["    " + line if line.strip() else line for line in b.changed])  # fmt: skip


def _tabs_spaces(b: Block) -> tuple[list[str], list[str]] | None:
    if not any(_indent(line) for line in b.old if line.strip()):
        return None
    return _swap_indent(b.old), _swap_indent(b.changed)


def _trailing(b: Block) -> tuple[list[str], list[str]]:
    return [line + "  " for line in b.old], [line + "  " for line in b.changed]


def _typography(b: Block) -> tuple[list[str], list[str]] | None:
    if not any(q in line for line in b.old for q in "'\""):
        if not any(q in line for line in b.old for q in "\u2019\u201c\u201d\u2014"):
            return None
        plain = str.maketrans({"\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": "-"})
        return [line.translate(plain) for line in b.old], [
            line.translate(plain) for line in b.changed
        ]
    return [line.translate(_CURLY) for line in b.old], [
        line.translate(_CURLY) for line in b.changed
    ]


def _stale(b: Block) -> tuple[list[str], list[str]] | None:
    """A line of the block as it was before some earlier change: no sensible reading."""
    index = next((k for k, line in enumerate(b.old) if re.search(r"[A-Za-z]{3,}", line)), None)
    if index is None:
        return None
    old = list(b.old)
    old[index] = re.sub(r"[A-Za-z]{3,}", "renamedWord", old[index], count=1)
    return old, b.changed


SENSIBLE: dict[str, Retype] = {
    "exact": _exact,
    "indentation lost": _indent_lost,
    "indentation doubled": _indent_doubled,
    "tabs vs spaces": _tabs_spaces,
    "trailing whitespace": _trailing,
    "crlf file": _exact,
    "typographic quotes": _typography,
}


def _edit_attempts(name: str, text: str, b: Block) -> Iterator[Attempt]:
    for shape, retype in (*SENSIBLE.items(), ("stale line", _stale)):
        typed = retype(b)
        if typed is None:
            continue
        old, new = typed
        crlf = shape == "crlf file"
        before = _crlf(text) if crlf else text
        after = _crlf(_text(b.after())) if crlf else _text(b.after())
        expected = None if shape == "stale line" else {name: after}
        args = {"path": name, "old_text": "\n".join(old) + "\n", "new_text": "\n".join(new) + "\n"}
        yield Attempt("edit_file", shape, {name: before}, args, expected)
        hunk = _hunk(old, new)
        patch = f"*** Begin Patch\n*** Update File: {name}\n{hunk}*** End Patch\n"
        yield Attempt("apply_patch", shape, {name: before}, {"patch": patch}, expected)


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _hunk(old: list[str], new: list[str]) -> str:
    """A hunk turning `old` into `new` (a shared prefix and suffix kept as context)."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    lines = [f" {line}" for line in old[:head]]
    lines += [f"-{line}" for line in old[head : len(old) - tail]]
    lines += [f"+{line}" for line in new[head : len(new) - tail]]
    lines += [f" {line}" for line in old[len(old) - tail :]]
    return "@@\n" + "\n".join(lines) + "\n"


def _ambiguous(name: str, text: str, lines: list[str]) -> Iterator[Attempt]:
    """A single line that occurs more than once: there is no one place to change."""
    repeated = [line for line, count in Counter(lines).items() if count > 1 and line.strip()]
    for line in repeated[:2]:
        args = {"path": name, "old_text": line, "new_text": line + " EDITED"}
        yield Attempt("edit_file", "occurs several times", {name: text}, args, None)
        hunk = f"@@\n-{line}\n+{line} EDITED\n"
        patch = f"*** Begin Patch\n*** Update File: {name}\n{hunk}*** End Patch\n"
        yield Attempt("apply_patch", "occurs several times", {name: text}, {"patch": patch}, None)


def _multi(name: str, text: str, found: list[Block]) -> Iterator[Attempt]:
    """Two blocks changed in one multi_edit, exactly or retyped; one with a stale line."""
    if len(found) < 2:
        return
    first, second = sorted(found[:2], key=lambda b: b.start)
    if first.end > second.start:
        return
    lines = first.lines[: first.start] + first.changed + first.lines[first.end : second.start]
    after = _text(lines + second.changed + second.lines[second.end :])
    for shape in ("exact", "indentation lost", "trailing whitespace", "stale line"):
        retype = _stale if shape == "stale line" else SENSIBLE[shape]
        typed = [retype(first) if shape != "stale line" else _exact(first), retype(second)]
        if any(t is None for t in typed):
            continue
        edits = [
            {"old_text": "\n".join(old) + "\n", "new_text": "\n".join(new) + "\n"}
            for old, new in (t for t in typed if t is not None)
        ]
        expected = None if shape == "stale line" else {name: after}
        yield Attempt("multi_edit", shape, {name: text}, {"path": name, "edits": edits}, expected)


def _patch_specials(
    name: str, text: str, b: Block, other: tuple[str, str, Block]
) -> Iterator[Attempt]:
    """A hunk missing one of its context lines (applied as meant, or refused: either is
    right); a patch for two files, one of which cannot apply (refused, nothing written)."""
    old, new = b.old, b.changed
    if len(old) >= 3:
        hunk = _hunk(old, new).splitlines()
        context = [
            k for k, line in enumerate(hunk) if line.startswith(" ") and 1 < k < len(hunk) - 1
        ]
        if context:
            del hunk[context[0]]
            patch = (
                f"*** Begin Patch\n*** Update File: {name}\n"
                + "\n".join(hunk)
                + "\n*** End Patch\n"
            )
            meant = {name: _text(b.after())}
            yield Attempt(
                "apply_patch", "context line missing", {name: text}, {"patch": patch}, meant, False
            )
    other_name, other_text, other_block = other
    stale = _stale(other_block)
    if stale is None or other_name == name:
        return
    patch = (
        f"*** Begin Patch\n*** Update File: {name}\n{_hunk(old, new)}"
        f"*** Update File: {other_name}\n{_hunk(*stale)}*** End Patch\n"
    )
    files = {name: text, other_name: other_text}
    yield Attempt("apply_patch", "two files, one stale", files, {"patch": patch}, None)


def corpus() -> list[Attempt]:
    rng = random.Random(SEED)
    attempts: list[Attempt] = []
    loaded = []
    for relative in CORPUS:
        text = (ROOT / relative).read_text("utf-8")
        name = Path(relative).name
        lines = text.splitlines()
        found = list(blocks(lines, rng))
        loaded.append((name, text, found))
    for index, (name, text, found) in enumerate(loaded):
        other_name, other_text, other_found = loaded[(index + 1) % len(loaded)]
        for b in found:
            attempts += _edit_attempts(name, text, b)
            if other_found:
                attempts += _patch_specials(name, text, b, (other_name, other_text, other_found[0]))
        attempts += _ambiguous(name, text, text.splitlines())
        attempts += _multi(name, text, found)
    return attempts


# -- running and judging ----------------------------------------------------------------------


def _same(got: str, want: str) -> bool:
    """Leading whitespace and line endings exactly; trailing whitespace and quotes loosely."""
    plain = str.maketrans({"\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": "-"})

    def norm(text: str) -> list[str]:
        return [line.rstrip(" \t").translate(plain) for line in text.split("\n")]

    return norm(got) == norm(want)


def _lay_out(folder: Path, files: dict[str, str]) -> Path:
    root = folder.resolve()
    for name, text in files.items():
        (root / name).write_bytes(text.encode("utf-8"))
    return root


def _read_back(root: Path, files: dict[str, str]) -> dict[str, str]:
    return {name: (root / name).read_bytes().decode("utf-8") for name in files}


async def run(attempt: Attempt) -> str:
    """The outcome: `applied`, `refused (usable)`, `refused (unusable)` or `applied wrongly`."""
    with tempfile.TemporaryDirectory() as folder:
        root = _lay_out(Path(folder), attempt.files)
        outcome = await TOOLS[attempt.tool].run(attempt.args, _Env(root))
        after = _read_back(root, attempt.files)
    if outcome.is_error:
        if after != attempt.files:
            return "applied wrongly"  # a refusal that wrote something: a partial change
        return "refused (usable)" if USABLE.search(outcome.output) else "refused (unusable)"
    if attempt.expected is not None and all(
        _same(after[name], text) for name, text in attempt.expected.items()
    ):
        return "applied"
    return "applied wrongly"


OUTCOMES = ("applied", "refused (usable)", "refused (unusable)", "applied wrongly")


async def measure() -> list[tuple[Attempt, str]]:
    with _own_home():
        return [(attempt, await run(attempt)) for attempt in corpus()]


@contextlib.contextmanager
def _own_home() -> Iterator[None]:
    """A home of the run's own: the tools journal their disk writes there, never in the
    user's."""
    before = os.environ.get("ACP_FSM_HOME")
    with tempfile.TemporaryDirectory() as home:
        os.environ["ACP_FSM_HOME"] = home
        try:
            yield
        finally:
            if before is None:
                del os.environ["ACP_FSM_HOME"]
            else:
                os.environ["ACP_FSM_HOME"] = before


def main() -> None:
    results = asyncio.run(measure())
    rows: dict[tuple[str, str], Counter[str]] = {}
    for attempt, outcome in results:
        rows.setdefault((attempt.tool, attempt.shape), Counter())[outcome] += 1
    print(f"{'tool':<12} {'shape':<22} {'n':>4} " + " ".join(f"{o:>18}" for o in OUTCOMES))
    for (tool, shape), counts in sorted(rows.items()):
        total = sum(counts.values())
        print(
            f"{tool:<12} {shape:<22} {total:>4} " + " ".join(f"{counts[o]:>18}" for o in OUTCOMES)
        )
    sensible = [outcome for attempt, outcome in results if attempt.sensible and attempt.expected]
    applied = sum(1 for outcome in sensible if outcome == "applied")
    wrong = sum(1 for _, outcome in results if outcome == "applied wrongly")
    share = 100 * applied / max(1, len(sensible))
    print(
        f"\n{len(results)} attempts; applied wrongly: {wrong} (goal 0); with one sensible "
        f"reading: {applied} of {len(sensible)} applied ({share:.1f} %, goal >= 95 %)"
    )


if __name__ == "__main__":
    main()
