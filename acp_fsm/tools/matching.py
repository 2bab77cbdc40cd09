"""Finding the text a model means to replace, when it did not copy it exactly.

Models retype the lines they want to change: the indentation comes out one level off or in
spaces where the file has tabs, trailing spaces go missing, a typographic quote becomes a plain
one. `find` tries, in order, the exact lines, then the lines with trailing whitespace ignored,
then with leading and trailing whitespace ignored, then with typographic quotes and dashes read
as plain ones, and stops at the first level where the lines occur: a unique place there is the
match; more than one is ambiguous, and never applied. When the lines matched only with their
indentation ignored, `reindent` shifts the replacement by the difference found (tabs and spaces
included), and refuses when the difference is not the same on every line.

Lines here carry no line ending: the callers split the file and put its own ending back
(`eol_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum


class Level(IntEnum):
    """How loosely lines were compared; lower is stricter."""

    EXACT = 0
    TRAILING_WHITESPACE = 1
    WHITESPACE = 2  # leading (the indentation) and trailing whitespace
    TYPOGRAPHY = 3  # and typographic quotes, dashes and spaces read as plain ones


# How a match at each level is described to the model (an exact one is not described).
INEXACT = {
    Level.TRAILING_WHITESPACE: "ignoring trailing whitespace",
    Level.WHITESPACE: "ignoring indentation and surrounding whitespace",
    Level.TYPOGRAPHY: "ignoring whitespace, with typographic quotes and dashes read as plain ones",
}

_PLAIN = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u00a0\u2002\u2003\u2009\u202f", " "),
    }
)

_NORMALISE: dict[Level, Callable[[str], str]] = {
    Level.EXACT: lambda line: line,
    Level.TRAILING_WHITESPACE: str.rstrip,
    Level.WHITESPACE: str.strip,
    Level.TYPOGRAPHY: lambda line: line.translate(_PLAIN).strip(),
}

# Tab widths tried when a tab is part of an indentation that must be converted.
_TAB_WIDTHS = (4, 8, 2)
# The closest lines are looked for in files up to this many lines (a failure stays fast).
_CLOSEST_MAX_LINES = 50_000


def eol_of(text: str) -> str:
    """The file's line ending: CRLF when most of its line breaks are, else LF."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 >= text.count("\n") else "\n"


def with_eol(text: str, eol: str) -> str:
    """`text` with every line break (LF or CRLF) made `eol`."""
    text = text.replace("\r\n", "\n")
    return text if eol == "\n" else text.replace("\n", eol)


def without_ending(line: str) -> str:
    """A line of a file without its line break (LF or CRLF)."""
    if line.endswith("\r\n"):
        return line[:-2]
    return line[:-1] if line.endswith("\n") else line


def text_lines(text: str) -> list[str]:
    """The lines of a piece of text a model wrote, without their endings; a final line break
    ends the last line rather than starting an empty one."""
    text = text.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")


@dataclass(frozen=True, slots=True)
class Found:
    """Where a sequence of lines occurs, at the strictest level where it occurs at all."""

    level: Level
    starts: tuple[int, ...]  # 0-based indexes of the first line, ascending (may overlap)


def find(
    lines: Sequence[str], pattern: Sequence[str], start: int = 0, stop: int | None = None
) -> Found | None:
    """The places `pattern` occurs in `lines[start:stop]`, at the first level where it does.
    A pattern of blank lines only is matched exactly or not at all (whitespace is all it has)."""
    stop = len(lines) if stop is None else stop
    levels = list(Level) if any(line.strip() for line in pattern) else [Level.EXACT]
    for level in levels:
        starts = _seek(lines, pattern, level, start, stop)
        if starts:
            return Found(level, tuple(starts))
    return None


def _seek(
    lines: Sequence[str], pattern: Sequence[str], level: Level, start: int, stop: int
) -> list[int]:
    norm = _NORMALISE[level]
    wanted = [norm(line) for line in pattern]
    size = len(wanted)
    if size == 0:
        return []
    first = wanted[0]
    found = []
    for index in range(start, stop - size + 1):
        if norm(lines[index]) != first:
            continue
        if all(norm(lines[index + k]) == wanted[k] for k in range(1, size)):
            found.append(index)
    return found


def apart(starts: Sequence[int], size: int) -> list[int]:
    """The matches that do not overlap an earlier one (for replacing every occurrence)."""
    kept: list[int] = []
    for index in starts:
        if not kept or index >= kept[-1] + size:
            kept.append(index)
    return kept


# -- indentation ----------------------------------------------------------------------------


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _columns(indent: str, width: int) -> int:
    column = 0
    for char in indent:
        column += width - column % width if char == "\t" else 1
    return column


def reindent(new: Sequence[str], old: Sequence[str], found: Sequence[str]) -> list[str] | None:
    """`new` (the replacement for `old`) indented as the file indents the lines `old` matched
    (`found`): shifted by the difference between the two, in the file's tabs or spaces. None
    when the difference is not the same on every non-blank line, so the replacement's own
    structure cannot be trusted to fit."""
    pairs = [(o, f) for o, f in zip(old, found, strict=True) if o.strip() and f.strip()]
    if all(_indent(o) == _indent(f) for o, f in pairs):
        return list(new)
    uses_tabs = any(_indent(f).startswith("\t") for _, f in pairs)
    for width in _TAB_WIDTHS:
        shifts = {_columns(_indent(f), width) - _columns(_indent(o), width) for o, f in pairs}
        if len(shifts) == 1:
            shift = shifts.pop()
            return [_shifted(line, shift, width, uses_tabs) for line in new]
    return None


def _shifted(line: str, shift: int, width: int, tabs: bool) -> str:
    if not line.strip():
        return ""
    columns = max(0, _columns(_indent(line), width) + shift)
    indent = "\t" * (columns // width) + " " * (columns % width) if tabs else " " * columns
    return indent + line.lstrip(" \t")


def describe_shift(new: Sequence[str], shifted: Sequence[str]) -> str:
    """How `reindent` changed the replacement, for the tool's result ("" when it did not)."""
    for before, after in zip(new, shifted, strict=True):
        if before.strip() and before != after:
            return (
                f"new_text re-indented to the file's indentation: a line it began with "
                f"{_spell(_indent(before))} begins with {_spell(_indent(after))}"
            )
    return ""


def _spell(indent: str) -> str:
    if not indent:
        return "no indentation"
    tabs, spaces = indent.count("\t"), indent.count(" ")
    parts = [f"{tabs} tab{'s' * (tabs != 1)}"] if tabs else []
    parts += [f"{spaces} space{'s' * (spaces != 1)}"] if spaces else []
    return " and ".join(parts)


# -- what to tell the model when nothing matched ----------------------------------------------


def closest(lines: Sequence[str], pattern: Sequence[str]) -> tuple[int, int] | None:
    """The 0-based range of lines most like `pattern` (at least half alike), or None. Windows
    are anchored on lines like any of the pattern's first three non-blank lines (one of them
    may be the stale one), and may hold one line more (the pattern may lack one)."""
    anchors = [k for k, line in enumerate(pattern) if line.strip()][:3]
    if not anchors or len(lines) > _CLOSEST_MAX_LINES:
        return None
    import difflib  # only a failed edit needs it

    stripped = [line.strip() for line in lines]
    distinct = set(stripped)
    wanted = "\n".join(line.strip() for line in pattern)
    best: tuple[float, int, int] | None = None
    for anchor in anchors:
        near = set(difflib.get_close_matches(pattern[anchor].strip(), distinct, 5, 0.6))
        for index, line in enumerate(stripped):
            if line not in near:
                continue
            begin = max(0, index - anchor)
            for size in (len(pattern), len(pattern) + 1):
                window = "\n".join(stripped[begin : begin + size])
                ratio = difflib.SequenceMatcher(None, window, wanted).ratio()
                if best is None or ratio > best[0]:
                    best = (ratio, begin, min(len(lines), begin + size))
    if best is None or best[0] < 0.5:
        return None
    return best[1], best[2]


def nearest(lines: Sequence[str], pattern: Sequence[str], what: str) -> str:
    """What a failure tells the model to retry with: the lines most like `pattern`, with
    their numbers, or to read the file again."""
    near = closest(lines, pattern)
    if near is None:
        return f" Read the file again and copy {what} as it is now."
    begin, end = near
    return (
        f" The lines most like it are {begin + 1}-{end}; copy {what} from them as they are "
        "now:\n" + numbered(lines, begin, end)
    )


def numbered(lines: Sequence[str], begin: int, end: int, most: int = 20) -> str:
    """Lines `begin`..`end` (0-based, end excluded) with their 1-based numbers, as read_file
    shows them; at most `most` lines."""
    shown = [f"{number + 1:>6}\t{lines[number]}" for number in range(begin, min(end, begin + most))]
    if end - begin > most:
        shown.append(f"        ... ({end - begin - most} more lines)")
    return "\n".join(shown)


def line_list(numbers: Sequence[int], most: int = 10) -> str:
    """`3, 17 and 40` (1-based numbers), cut after `most`."""
    shown = [str(n) for n in numbers[:most]]
    if len(numbers) > most:
        shown.append(f"{len(numbers) - most} more")
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
