"""Replacing text in a file's content: what edit_file and multi_edit do, without the file.

`apply_edits` applies replacements in order, each to the result of the one before, and
raises `ToolError` (saying which one and why) when any cannot be applied, so a caller writes
all of them or nothing. Each `old_text` is looked for exactly first (in the file's line
endings, then as given); when it is not there, line by line as `matching.find` allows, and
only a unique place is replaced (every place with `replace_all`). The lines put in have the
file's line ending, and the file's indentation when the match ignored it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from acp_fsm.tools.common import ToolError, plural
from acp_fsm.tools.matching import (
    INEXACT,
    Level,
    apart,
    describe_shift,
    eol_of,
    find,
    line_list,
    nearest,
    numbered,
    reindent,
    text_lines,
    with_eol,
    without_ending,
)
from acp_fsm.tools.text_files import split_lines

# Compared a piece at a time when looking for the first change (a 10 MB file stays fast).
_CHUNK = 4096


@dataclass(frozen=True, slots=True)
class Replacement:
    """One replacement the model asked for."""

    old_text: str
    new_text: str
    replace_all: bool = False


@dataclass(frozen=True, slots=True)
class Applied:
    """What one replacement did."""

    count: int  # places replaced
    level: Level
    note: str  # how new_text was adjusted ("" when it was not)


@dataclass(frozen=True, slots=True)
class Change:
    """A file's text before and after a list of replacements."""

    before: str
    after: str
    applied: tuple[Applied, ...]

    @property
    def line(self) -> int:
        """The first line that differs (1-based)."""
        return first_changed_line(self.before, self.after)


def replacement_problem(replacement: Replacement) -> str | None:
    """Why a replacement cannot be asked for at all (before any file is read), or None."""
    if replacement.old_text == "":
        return (
            "old_text is empty; give the exact text to replace (use write_file to create or "
            "overwrite a whole file)"
        )
    if replacement.old_text == replacement.new_text:
        return "old_text and new_text are the same; there is nothing to change"
    return None


def apply_edits(text: str, replacements: Sequence[Replacement], shown: str) -> Change:
    """`replacements` applied to `text` in order. `ToolError` when one cannot be: with more
    than one, the message names it (`edit 2 of 3`) and says nothing was changed."""
    current, applied = text, []
    for number, replacement in enumerate(replacements, 1):
        try:
            current, done = apply_one(current, replacement, shown)
        except ToolError as exc:
            if len(replacements) == 1:
                raise
            raise ToolError(
                f"Edit {number} of {len(replacements)} failed, so no edit was applied and "
                f"{shown} is unchanged: {exc}"
            ) from None
        applied.append(done)
    return Change(text, current, tuple(applied))


def apply_one(text: str, replacement: Replacement, shown: str) -> tuple[str, Applied]:
    """The text after one replacement, and what it did; `ToolError` when it cannot be done."""
    eol = eol_of(text)
    new_text = with_eol(replacement.new_text, eol)
    for old_text in dict.fromkeys((with_eol(replacement.old_text, eol), replacement.old_text)):
        count = text.count(old_text)
        if count > 1 and not replacement.replace_all:
            lines = _occurrence_lines(text, old_text)
            raise ToolError(
                f"old_text occurs {count} times in {shown} (at lines {line_list(lines)}). "
                "Include more surrounding lines so it occurs once, or set replace_all to true "
                "to replace every occurrence."
            )
        if count:
            after = text.replace(old_text, new_text, -1 if replacement.replace_all else 1)
            return after, Applied(count, Level.EXACT, "")
    return _replace_lines(text, replacement, eol, shown)


def _replace_lines(
    text: str, replacement: Replacement, eol: str, shown: str
) -> tuple[str, Applied]:
    """The replacement done line by line, at the strictest level where old_text occurs."""
    lines = split_lines(text)
    bare = [without_ending(line) for line in lines]
    pattern = text_lines(replacement.old_text)
    found = find(bare, pattern)
    if found is None:
        raise ToolError(_not_found(bare, pattern, shown))
    size = len(pattern)
    if len(found.starts) > 1 and not replacement.replace_all:
        raise ToolError(
            f"old_text does not occur exactly in {shown}, and {INEXACT[found.level]} it "
            f"matches {len(found.starts)} places (lines "
            f"{line_list([start + 1 for start in found.starts])}), so nothing was changed. "
            "Include more surrounding lines so it matches one place, or set replace_all."
        )
    new = text_lines(replacement.new_text) if replacement.new_text else []
    starts = apart(found.starts, size) if replacement.replace_all else found.starts[:1]
    note = ""
    for start in reversed(starts):
        shifted = reindent(new, pattern, bare[start : start + size])
        if shifted is None:
            raise ToolError(
                f"old_text matches lines {start + 1}-{start + size} of {shown} only "
                f"{INEXACT[found.level]}, and its indentation differs from theirs by a "
                "different amount on different lines, so new_text could not be indented to "
                "fit; nothing was changed. The lines as they are:\n"
                + numbered(bare, start, start + size)
            )
        note = note or describe_shift(new, shifted)
        ending = lines[start + size - 1][len(bare[start + size - 1]) :]
        put = [line + eol for line in shifted]
        if put and not ending:
            put[-1] = shifted[-1]  # the file's last line had no line break: nor does this
        lines[start : start + size] = put
    return "".join(lines), Applied(len(starts), found.level, note)


def _occurrence_lines(text: str, piece: str, most: int = 11) -> list[int]:
    """The 1-based lines where the first `most` occurrences of `piece` start."""
    lines: list[int] = []
    index = text.find(piece)
    while index >= 0 and len(lines) < most:
        lines.append(text.count("\n", 0, index) + 1)
        index = text.find(piece, index + len(piece))
    return lines


def _not_found(lines: Sequence[str], pattern: Sequence[str], shown: str) -> str:
    return (
        f"old_text was not found in {shown}, not even with whitespace and typographic quotes "
        "ignored." + nearest(lines, pattern, "the text to replace")
    )


def first_changed_line(before: str, after: str) -> int:
    """The 1-based line of `before` where `after` first differs from it."""
    same = 0
    limit = min(len(before), len(after))
    while same < limit and before[same : same + _CHUNK] == after[same : same + _CHUNK]:
        same += _CHUNK
    same = min(same, limit)
    while same < limit and before[same] == after[same]:
        same += 1
    return before.count("\n", 0, same) + 1


def summary(shown: str, change: Change) -> str:
    """What the tool's result says about a change it wrote: how much, where, and which
    replacements matched only inexactly (the model should look at those)."""
    count = sum(done.count for done in change.applied)
    what = plural(count, "occurrence")
    if len(change.applied) > 1:
        what = f"{plural(len(change.applied), 'edit')}, {what}"
    inexact = [
        (number, f"matched {INEXACT[done.level]}" + (f", {done.note}" if done.note else ""))
        for number, done in enumerate(change.applied, 1)
        if done.level is not Level.EXACT
    ]
    said = f"Edited {shown}: replaced {what}, first change at line {change.line}."
    if len(change.applied) == 1 and inexact:
        said += f" The match was not exact ({inexact[0][1]}): check the result."
    elif inexact:
        notes = "; ".join(f"edit {number} {note}" for number, note in inexact)
        said += f" Not every match was exact ({notes}): check the result."
    return said
