"""Applying a patch's hunks to a file's text (apply_patch's `*** Update File`), as Codex does
and a little stricter.

Hunks apply in order, each after the place the one before changed. A hunk's `@@ line` is
looked for first and the hunk is then matched after it (the nearest place); without one, its
lines must occur at one place only in the rest of the file, else it is refused with the lines
where they occur. `*** End of File` holds the hunk to the end of the file. Lines are compared
as `matching.find` allows (exact first, then whitespace, then typographic quotes); a hunk
matched with its indentation ignored has its added lines re-indented to the file's. Kept lines
stay the file's own; added ones take the file's line ending.
"""

from __future__ import annotations

from collections.abc import Sequence

from acp_fsm.tools.common import ToolError
from acp_fsm.tools.matching import (
    INEXACT,
    Found,
    Level,
    eol_of,
    find,
    line_list,
    nearest,
    numbered,
    reindent,
    without_ending,
)
from acp_fsm.tools.patch_format import Hunk
from acp_fsm.tools.text_files import split_lines


class _Text:
    """A file's lines, each with its ending, and the same lines without."""

    def __init__(self, text: str) -> None:
        self.eol = eol_of(text)
        self.lines = split_lines(text)
        self.bare = [without_ending(line) for line in self.lines]

    def replace(self, start: int, size: int, put: list[str]) -> None:
        """Lines `start`..`start+size` replaced by `put` (lines with their endings)."""
        if start + size == len(self.lines) and self.lines and put:
            last = self.lines[-1]
            if size and not last.endswith("\n"):
                put[-1] = without_ending(put[-1])  # the file had no final line break: still none
            elif not size and not last.endswith("\n"):
                self.lines[-1] = last + self.eol  # lines added after a last unbroken line
        self.lines[start : start + size] = put
        self.bare[start : start + size] = [without_ending(line) for line in put]


def apply_hunks(text: str, hunks: Sequence[Hunk], shown: str) -> tuple[str, list[str]]:
    """The text after every hunk, and a note for each hunk that matched inexactly."""
    file = _Text(text)
    at, notes = 0, []
    for hunk in hunks:
        at, note = _apply(file, hunk, at, shown)
        if note:
            notes.append(f"{shown} hunk {hunk.number} {note}")
    return "".join(file.lines), notes


def _apply(file: _Text, hunk: Hunk, at: int, shown: str) -> tuple[int, str]:
    """Apply one hunk at or after line `at`; where the next may start, and how it matched."""
    where = f"{shown}, hunk {hunk.number}"
    nearest_first = False
    if hunk.context is not None:
        found_context = find(file.bare, [hunk.context], at)
        if found_context is None:
            raise ToolError(
                f"{where}: its `@@ {hunk.context}` line was not found"
                + (f" after line {at}" if at else "")
                + "; nothing was changed."
                + nearest(file.bare, [hunk.context], "the @@ line")
            )
        at = found_context.starts[0] + 1
        nearest_first = True
    old = hunk.old
    if not old:  # only added lines: after the @@ line, else at the end of the file
        start = at if hunk.context is not None else len(file.lines)
        file.replace(start, 0, [line + file.eol for line in hunk.added])
        return start + len(hunk.added), ""
    lines, found = _find(file, hunk, at)
    if found is None:
        raise ToolError(
            f"{where}: its lines were not found"
            + (f" after line {at}" if at else "")
            + ", not even with whitespace and typographic quotes ignored; nothing was changed."
            + nearest(file.bare, hunk.old, "the context and removed lines")
        )
    if len(found.starts) > 1 and not nearest_first:
        places = line_list([start + 1 for start in found.starts])
        raise ToolError(
            f"{where}: its lines occur at {len(found.starts)} places (lines {places}), so "
            "nothing was changed. Add more context lines, or an `@@` line naming the function "
            "or class, so the hunk matches one place."
        )
    start = found.starts[0]
    old = [text for op, text in lines if op != "+"]
    window = file.bare[start : start + len(old)]
    added = reindent([text for op, text in lines if op == "+"], old, window)
    if added is None:
        raise ToolError(
            f"{where}: its lines match lines {start + 1}-{start + len(old)} only "
            f"{INEXACT[found.level]}, and their indentation differs by a different amount on "
            "different lines, so the added lines could not be indented to fit; nothing was "
            "changed. The lines as they are:\n" + numbered(file.bare, start, start + len(old))
        )
    put, kept, new = [], iter(file.lines[start : start + len(old)]), iter(added)
    for op, _ in lines:
        if op == " ":
            put.append(next(kept))
        elif op == "-":
            next(kept)
        else:
            put.append(next(new) + file.eol)
    file.replace(start, len(old), put)
    note = "" if found.level is Level.EXACT else f"matched {INEXACT[found.level]}"
    return start + len(put), note


def _find(file: _Text, hunk: Hunk, at: int) -> tuple[tuple[tuple[str, str], ...], Found | None]:
    """Where the hunk's lines occur (at the end only, for `*** End of File`); models often end
    a hunk with a blank context line the file does not have, so it is tried without it too."""
    candidates = [hunk.lines]
    if hunk.lines[-1] == (" ", "") and len(hunk.lines) > 1:
        candidates.append(hunk.lines[:-1])
    for lines in candidates:
        old = [text for op, text in lines if op != "+"]
        if hunk.at_end:
            begin = len(file.bare) - len(old)
            found = find(file.bare, old, begin) if begin >= at else None
        else:
            found = find(file.bare, old, at)
        if found is not None:
            return lines, found
    return hunk.lines, None
