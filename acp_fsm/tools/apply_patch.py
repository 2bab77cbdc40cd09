"""apply_patch: add, delete, update and move files with one patch in the format OpenAI's models
are trained on (`patch_format`), shown to the editor as one diff per file.

The whole patch is parsed and every file's new text computed before anything is written; a
patch that cannot apply anywhere writes nothing and says which file and hunk failed. Writing is
all or none (`acp_fsm.tools.file_sets`). Deleting a file is a change like any other: asked for,
confined to the session's roots, shown as a diff to empty text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import redact
from acp_fsm.tools.base import Checkpoint, Drafts, ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import (
    MutatingTool,
    ToolError,
    linked_elsewhere,
)
from acp_fsm.tools.file_sets import write_all
from acp_fsm.tools.hunks import apply_hunks
from acp_fsm.tools.patch_format import FileOp, parse_patch
from acp_fsm.tools.paths import display, inside_roots, resolve
from acp_fsm.tools.replace import first_changed_line
from acp_fsm.tools.syntax import syntax_note
from acp_fsm.tools.text_files import (
    check_approved,
    check_as_shown,
    current_text,
    diff_block,
    load_text,
)

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContent, ToolCallLocation

log = structlog.get_logger("acp.tools")


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file as the patch leaves it: `after` None deletes it, `before` None creates it."""

    path: Path
    shown: str
    before: str | None
    after: str | None
    said: str  # what the result says of it ("updated a.py")


def _paths(op: FileOp) -> list[str]:
    return [op.path] if op.move_to is None else [op.path, op.move_to]


class ApplyPatch(MutatingTool):
    name = "apply_patch"
    description = (
        "Change files with a patch: add, delete, update or move several files in one call. "
        "The patch starts with `*** Begin Patch` and ends with `*** End Patch`; each file is "
        "`*** Add File: path` (then its lines, each starting with +), `*** Delete File: path`, "
        "or `*** Update File: path` (optionally followed by `*** Move to: new_path`) with hunks: "
        "an `@@` line (optionally with a line of the file that comes before the hunk, such as "
        "its function's `def` line), then the hunk's lines, each starting with ' ' (kept, "
        "about 3 before and after each change), '-' (removed) or '+' (added). Paths are "
        "relative to the working directory. Every file applies or none does."
    )
    arguments = "ApplyPatchArguments"
    kind = "edit"

    def check(self, args: dict[str, Any]) -> str | None:
        """A patch that does not parse; a file named twice is found by `_plan`, on the
        resolved paths (`a.py` and `./a.py` are one file)."""
        try:
            parse_patch(args["patch"])
        except ToolError as exc:
            return str(exc)
        return None

    def _ops(self, args: dict[str, Any]) -> list[FileOp]:
        try:
            return parse_patch(str(args.get("patch", "")))
        except ToolError:
            return []

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        paths = [resolve(path, env.cwd) for op in self._ops(args) for path in _paths(op)]
        shown = ", ".join(display(path, env.cwd) for path in paths[:5])
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        locations: tuple[ToolCallLocation, ...] = tuple({"path": str(path)} for path in paths)
        return ToolCallView(
            title=f"Patch {shown}{more}" if paths else "Apply a patch",
            kind=self.kind,
            locations=locations,
            raw_input=dict(args),
        )

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        paths = [resolve(path, env.cwd) for op in self._ops(args) for path in _paths(op)]
        return bool(paths) and all(
            inside_roots(path, env.roots) and not linked_elsewhere(path) for path in paths
        )

    async def _plan(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts | None
    ) -> tuple[list[FileChange], list[str]]:
        """Every file's change, and the notes of hunks that matched inexactly; `ToolError`
        when any file cannot be changed as the patch says."""
        changes, notes = [], []
        secrets = redact.configured()
        ops = parse_patch(args["patch"])
        given = [path for op in ops for path in _paths(op)]
        targets = [resolve(path, env.cwd) for path in given]
        twice = next((path for path in targets if targets.count(path) > 1), None)
        if twice is not None:  # two spellings of one file (`a.py`, `./a.py`)
            raise ToolError(
                f"The patch changes {display(twice, env.cwd)} more than once; give each file "
                "one entry. Nothing was changed."
            )
        if drafts is None:  # running, after the approval: nothing is read elsewhere
            for spelled, target in zip(given, targets, strict=True):
                check_approved(env, target, spelled)
        for op in ops:
            path = resolve(op.path, env.cwd)
            shown = display(path, env.cwd)
            text = await (
                current_text(env, drafts, path, shown, exact=True)
                if drafts is not None
                else load_text(env, path, shown, exact=True)
            )
            if op.kind == "add":
                if text is not None:
                    raise ToolError(
                        f"Cannot add {shown}: it exists. Use `*** Update File: {op.path}` to "
                        "change it; nothing was changed."
                    )
                content = secrets.restore(op.content, None)
                changes.append(FileChange(path, shown, None, content, f"added {shown}"))
                continue
            if text is None:
                raise ToolError(
                    f"Cannot {op.kind} {shown}: there is no such file; nothing was changed."
                )
            if op.kind == "delete":
                changes.append(FileChange(path, shown, text, None, f"deleted {shown}"))
                continue
            after, hunk_notes = apply_hunks(secrets.scrub_text(text), op.hunks, shown)
            after = secrets.restore(after, text)
            notes += hunk_notes
            if op.move_to is None:
                line = first_changed_line(text, after)
                said = f"updated {shown} (first change at line {line})"
                changes.append(FileChange(path, shown, text, after, said))
                continue
            dest = resolve(op.move_to, env.cwd)
            dest_shown = display(dest, env.cwd)
            if await load_text(env, dest, dest_shown, exact=False) is not None:
                raise ToolError(
                    f"Cannot move {shown} to {dest_shown}: it exists; nothing was changed."
                )
            said = f"moved {shown} to {dest_shown}"
            changes.append(FileChange(dest, dest_shown, None, after, said))
            changes.append(FileChange(path, shown, text, None, f"removed {shown} (moved)"))
        return changes, notes

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        changes, _ = await self._plan(args, env, drafts)
        for change in changes:
            if change.after is not None:
                drafts[change.path] = change.after
            else:
                drafts.pop(change.path, None)
        return tuple(diff_block(c.path, c.before, c.after or "") for c in changes)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        changes, notes = await self._plan(args, env, None)  # now, after the approval
        for change in changes:
            check_as_shown(env, change.path, change.shown, change.before)
        await env.checkpoint([Checkpoint(c.path, c.before, c.after) for c in changes])
        await write_all(env, changes, "the patch")
        said = [c.said for c in changes if not c.said.startswith("removed ")]
        summary = f"Applied the patch: {', '.join(said)}."
        if notes:
            summary += f" Not every hunk matched exactly ({'; '.join(notes)}): check the result."
        for change in changes:
            if change.after is not None:
                summary += await syntax_note(
                    env, change.path, change.shown, change.before, change.after
                )
        return ToolOutcome(
            summary,
            content=tuple(diff_block(c.path, c.before, c.after or "") for c in changes),
            locations=tuple({"path": str(c.path)} for c in changes),
        )
