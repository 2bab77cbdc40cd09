"""Writing several files all or none (a patch, a rewind): the files the editor writes first,
given their old text back through it if a later write fails or the turn is cancelled
meanwhile; then every disk change as one journaled set (`acp_fsm.system.changes`), which puts
back what it changed when one fails, and which the next process rolls back if this one is
killed midway."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import structlog

from acp_fsm.blocking import run_blocking
from acp_fsm.system.changes import Change
from acp_fsm.tools.base import ToolEnv
from acp_fsm.tools.common import ToolError, describe_os_error
from acp_fsm.tools.text_files import editor_serves, store_text, write_disk

log = structlog.get_logger("acp.tools")


class FileWrite(Protocol):
    """One file of a set: `after` None deletes it, `before` None means it did not exist."""

    @property
    def path(self) -> Path: ...
    @property
    def shown(self) -> str: ...
    @property
    def before(self) -> str | None: ...
    @property
    def after(self) -> str | bytes | None: ...


async def write_all(env: ToolEnv, changes: Sequence[FileWrite], what: str) -> None:
    """Write every change or none (`what` names the set for an error: "the patch"): the
    editor's first, undone if anything after fails (a cancel included); then the disk's in
    one step, which is not raced with the turn's token (local writes are short, and half a
    set is worse than a cancel a moment later)."""
    through_editor = [
        c
        for c in changes
        if isinstance(c.after, str) and editor_serves(env.client.can_write_files, c.path)
    ]
    on_disk = [c for c in changes if c not in through_editor]
    written: list[FileWrite] = []
    try:
        for change in through_editor:
            assert isinstance(change.after, str)
            await store_text(env, change.path, change.shown, change.after)
            written.append(change)
        await run_blocking(None, _write_disk, on_disk, what)
    except BaseException:
        await _undo_in_editor(env, written)
        raise


def _write_disk(changes: list[FileWrite], what: str) -> None:
    """Apply `changes` on disk, all or none (blocking), or raise `ToolError` saying why."""
    try:
        write_disk([Change(c.path, _bytes(c.after)) for c in changes])
    except OSError as exc:
        where = Path(os.fsdecode(exc.filename)) if exc.filename else None
        failed = next((c.shown for c in changes if where in (c.path, *c.path.parents)), None)
        raise ToolError(
            f"Could not write {failed or what}: {describe_os_error(exc)}. Nothing was changed."
        ) from exc


def _bytes(text: str | bytes | None) -> bytes | None:
    return text.encode() if isinstance(text, str) else text


async def _undo_in_editor(env: ToolEnv, written: list[FileWrite]) -> None:
    """Give the editor back the text of the files it wrote for the set (without the turn's
    token: the undo must happen even when the turn is being cancelled)."""
    for change in reversed(written):
        try:
            if change.before is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(change.path)  # a file it saved; an unsaved buffer stays its own
            else:
                await env.client.write_text_file(str(change.path), change.before)
        except Exception as exc:
            log.warning("undo_in_editor_failed", path=change.shown, error=str(exc))
