"""Reading and writing text files for read_file, write_file and edit_file.

The editor wins when it advertised the fs capability (ACP fs/read_text_file returns the unsaved
buffer, fs/write_text_file lets it track the change); otherwise the disk is used: UTF-8 with
invalid bytes replaced when only showing text, a journaled set of changes when writing (all or
none, even across a kill: `acp_fsm.system.changes`). When the editor serves reads, the disk is
only asked to refuse what it proves wrong (a directory, a FIFO, a device, a binary or oversized
file); a path missing on disk is still asked of the editor, which may hold a new, unsaved
buffer for it (an empty answer for it means no file).

Only regular files are opened: a named pipe would block the open (until a writer comes) and a
device may do anything when opened. Each disk step runs through `run_blocking`, so a cancel
never waits for the file system.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import structlog

from acp_fsm.blocking import run_blocking
from acp_fsm.small_files import READ_FLAGS, kind_of
from acp_fsm.system import changes
from acp_fsm.tools.base import Drafts, ToolEnv
from acp_fsm.tools.common import (
    FileMissing,
    ToolError,
    ask_client,
    describe_os_error,
)
from acp_fsm.tools.paths import display, inside_roots, is_utf8, utf8_text

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContentDiff

log = structlog.get_logger("acp.tools")

# A NUL byte in the first 8 KiB marks a file as binary (the heuristic git uses).
BINARY_SNIFF_BYTES = 8 * 1024
# write_file and edit_file hold the whole old and new text for the diff: larger files are refused.
MAX_WHOLE_FILE_BYTES = 10 * 1024 * 1024


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file contain a NUL byte."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def require_regular(mode: int, shown: str) -> None:
    """Raise `ToolError` unless `mode` (an `st_mode`) is a regular file's."""
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory; use list_directory to see its entries")
    raise ToolError(
        f"Not a regular file: {shown} is a {kind_of(mode)}; only regular files "
        "can be read or changed with this tool"
    )


def open_text_file(path: Path, shown: str) -> BinaryIO:
    """Open an existing, non-binary regular file for reading, at its start (blocking: call it
    through `run_blocking`).

    Raises `FileMissing` when there is no file, `ToolError` when it cannot be used.
    """
    try:
        require_regular(os.stat(path).st_mode, shown)  # never open a FIFO or a device
        fd = os.open(path, READ_FLAGS)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise FileMissing(f"File not found: {shown}") from exc
    except OSError as exc:
        raise ToolError(f"Could not read {shown}: {describe_os_error(exc)}") from exc
    handle = os.fdopen(fd, "rb")
    try:
        require_regular(os.fstat(fd).st_mode, shown)  # what was opened is what was checked
        if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            raise ToolError(f"{shown} is a binary file; only text files can be read")
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return handle


def check_text_file(path: Path, shown: str) -> bool:
    """False when there is no file at `path`; True when it is a readable, non-binary regular
    file; `ToolError` when it is anything else."""
    try:
        open_text_file(path, shown).close()
    except FileMissing:
        return False
    return True


def _read_existing(path: Path, shown: str, content: bool) -> bytes | None:
    """The bytes of the text file at `path` (only checked, `b""`, unless `content`), or None
    when there is no file. `ToolError` when it cannot be edited."""
    try:
        handle = open_text_file(path, shown)
    except FileMissing:
        return None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_WHOLE_FILE_BYTES:
            raise ToolError(
                f"{shown} is {size:,} bytes, over the {MAX_WHOLE_FILE_BYTES:,}-byte limit for "
                "editing; change it with run_command instead"
            )
        return handle.read() if content else b""


def editor_serves(capable: bool, path: Path) -> bool:
    """Use the editor's fs/* for `path`: it advertised the capability and the path is UTF-8
    (JSON cannot carry a file name's other bytes)."""
    return capable and is_utf8(str(path))


async def read_from_editor(
    env: ToolEnv,
    path: Path,
    shown: str,
    on_disk: bool,
    line: int | None = None,
    limit: int | None = None,
) -> str | None:
    """The editor's text of `path` (its buffer, saved or not). None when the file does not
    exist: the disk has none, and the editor says it has no such file or answers empty text
    (CodeCompanion and Toad answer a missing file so, avante once it has opened one; an empty
    file on disk is an existing empty file). Every other failure (a timeout, a refusal)
    raises `ToolError` quoting the editor."""
    try:
        text = await _editor_text(env, path, shown, line, limit)
        if text or on_disk:
            return text
        if line not in (None, 1):  # a window past the end of a buffer is empty too
            return "" if await _editor_text(env, path, shown) else None
    except FileMissing as exc:
        if on_disk:
            raise
        log.debug("editor_has_no_buffer", path=shown, error=str(exc))
    return None


async def _editor_text(
    env: ToolEnv, path: Path, shown: str, line: int | None = None, limit: int | None = None
) -> str:
    return await ask_client(env, env.client.read_text_file(str(path), line, limit), f"read {shown}")


async def load_text(env: ToolEnv, path: Path, shown: str, *, exact: bool) -> str | None:
    """The whole current text of `path` (editor buffer first), or None when it does not exist.

    `exact` refuses a file that is not valid UTF-8 on disk, so rewriting it cannot replace
    its undecodable bytes.
    """
    editor = editor_serves(env.client.can_read_files, path)
    data = await run_blocking(env.token, _read_existing, path, shown, not editor)
    if editor:
        return await read_from_editor(env, path, shown, on_disk=data is not None)
    if data is None:
        return None
    try:
        return data.decode("utf-8", errors="strict" if exact else "replace")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); editing it would corrupt it"
        ) from exc


async def store_text(env: ToolEnv, path: Path, shown: str, content: str) -> None:
    """Write `content` to `path`: through the editor when it can write files, else as a set
    of one change (`write_disk`).

    A cancel does not wait for a disk write; the abandoned write still completes or fails as a
    whole.
    """
    if editor_serves(env.client.can_write_files, path):
        await ask_client(env, env.client.write_text_file(str(path), content), f"write {shown}")
        return
    try:
        await run_blocking(env.token, write_disk, [changes.Change(path, content.encode())])
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {describe_os_error(exc)}") from exc


async def original(env: ToolEnv, path: Path, text: str | None) -> str | bytes | None:
    """What `path` holds before a write, exactly, for its checkpoint: `text` as read, unless
    reading it replaced bytes that are not UTF-8; then the bytes on disk."""
    if text is None or "\ufffd" not in text or editor_serves(env.client.can_read_files, path):
        return text
    data = await run_blocking(env.token, path.read_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def write_disk(wanted: list[changes.Change]) -> None:
    """Make every change on disk or none, even if the process is killed midway (blocking):
    `system.changes` journals the set, and the next process rolls back one left half made.
    Each folder is opened without following links: one replaced by a link since the path was
    resolved fails the write (`nofollow.Relinked`) instead of taking it elsewhere."""
    from acp_fsm.sessions_db import changes_path  # the home, as the store finds it

    changes.apply(wanted, changes_path())


def diff_block(path: Path, old_text: str | None, new_text: str) -> ToolCallContentDiff:
    """An ACP ToolCallContent `diff` (absolute path; `oldText` null for a new file)."""
    return {"type": "diff", "path": str(path), "oldText": old_text, "newText": new_text}


async def current_text(
    env: ToolEnv, drafts: Drafts, path: Path, shown: str, *, exact: bool
) -> str | None:
    """The text `path` will have when the call runs: an earlier call's draft, else now."""
    if path in drafts:
        return drafts[path]
    return await load_text(env, path, shown, exact=exact)


def check_approved(env: ToolEnv, path: Path, given: str) -> None:
    """Refuse to change `path` (the model's `given` path, resolved now) unless the user was
    asked about it: the call's view and diffs named it when the call was announced (resolved
    then). A folder on the way replaced by a symbolic link while the user was asked would
    otherwise take the approved change elsewhere, out of the project even."""
    approved = {location["path"] for location in env.locations}
    approved.update(block["path"] for block in env.previewed if block["type"] == "diff")
    if not approved or utf8_text(str(path)) in {utf8_text(shown) for shown in approved}:
        return  # (views show a name's bytes that are not UTF-8 as `\xNN`)
    where = "" if inside_roots(path, env.roots) else ", outside the project"
    raise ToolError(
        f"{given} no longer leads to the file the user was asked about: it now resolves to "
        f"{display(path, env.cwd)}{where} (a folder on its path was replaced by a symbolic "
        "link, or moved, meanwhile). Nothing was changed; check the path and call the tool "
        "again if the change is still wanted."
    )


def check_as_shown(env: ToolEnv, path: Path, shown: str, text: str | None) -> None:
    """Refuse to change `path` unless it holds what its diff showed (`text`): the user
    approved that change, not one to a file that changed since."""
    for block in env.previewed:
        if block.get("type") == "diff" and block.get("path") == str(path):
            if block.get("oldText") != text:
                raise ToolError(
                    f"{shown} is not as it was when this change was shown for approval (it "
                    "changed since, or a call before this one did not run), so nothing was "
                    "written. Read it again and redo the change."
                )
            return


def split_lines(text: str) -> list[str]:
    """Lines split at `\\n` only (as editors count them), each keeping its ending; `\\r\\n`
    stays intact and the last line may have no newline."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def count_lines(text: str) -> int:
    """Lines as an editor counts them (a final newline does not start another line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
