"""Reading and writing text files for read_file, write_file and edit_file.

The editor wins when it advertised the fs capability (ACP fs/read_text_file returns the unsaved
buffer, fs/write_text_file lets it track the change); otherwise the disk is used: UTF-8 with
invalid bytes replaced when only showing text, an atomic replace when writing.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from acp_fsm.tools.base import ToolEnv
from acp_fsm.tools.common import ToolError, ask_client, describe_os_error

# A NUL byte in the first 8 KiB marks a file as binary (the heuristic git uses).
BINARY_SNIFF_BYTES = 8 * 1024
# write_file and edit_file hold the whole old and new text for the diff: larger files are refused.
MAX_WHOLE_FILE_BYTES = 10 * 1024 * 1024


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file contain a NUL byte."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def is_binary_file(path: Path) -> bool:
    with path.open("rb") as handle:
        return looks_binary(handle.read(BINARY_SNIFF_BYTES))


def check_text_file(path: Path, shown: str) -> None:
    """Raise `ToolError` unless `path` is an existing, readable, non-binary regular file."""
    if not path.exists():
        raise ToolError(f"File not found: {shown}")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use list_directory to see its entries")
    try:
        binary = is_binary_file(path)
    except OSError as exc:
        raise ToolError(f"Could not read {shown}: {describe_os_error(exc)}") from exc
    if binary:
        raise ToolError(f"{shown} is a binary file; only text files can be read")


def _whole_file_size(path: Path, shown: str) -> int | None:
    """The size of an existing text file, None when there is no file (`ToolError` if unusable)."""
    if not path.exists():
        return None
    check_text_file(path, shown)
    return path.stat().st_size


async def load_text(env: ToolEnv, path: Path, shown: str, *, exact: bool) -> str | None:
    """The whole current text of `path` (editor buffer first), or None when it does not exist.

    `exact` refuses a file that is not valid UTF-8 on disk, so rewriting it cannot replace
    its undecodable bytes.
    """
    size = await asyncio.to_thread(_whole_file_size, path, shown)
    if size is None:
        return None
    if size > MAX_WHOLE_FILE_BYTES:
        raise ToolError(
            f"{shown} is {size:,} bytes, over the {MAX_WHOLE_FILE_BYTES:,}-byte limit for "
            "editing; change it with run_command instead"
        )
    if env.client.can_read_files:
        return await ask_client(env, env.client.read_text_file(str(path)), f"read {shown}")
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except OSError as exc:
        raise ToolError(f"Could not read {shown}: {describe_os_error(exc)}") from exc
    try:
        return data.decode("utf-8", errors="strict" if exact else "replace")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); editing it would corrupt it"
        ) from exc


async def store_text(env: ToolEnv, path: Path, shown: str, content: str) -> None:
    """Write `content` to `path`: through the editor when it can write files, else atomically."""
    if env.client.can_write_files:
        await ask_client(env, env.client.write_text_file(str(path), content), f"write {shown}")
        return
    try:
        await asyncio.to_thread(atomic_write, path, content)
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {describe_os_error(exc)}") from exc


def atomic_write(path: Path, content: str) -> None:
    """Replace `path` with `content` (UTF-8) so readers see the old or the new file, never part.

    The text goes to a temporary file in the same directory (same file system), is flushed to
    disk, then renamed over the target. Missing parent directories are created; an existing
    file keeps its permission bits, a new one gets the usual umask-derived mode.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(content.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def diff_block(path: Path, old_text: str | None, new_text: str) -> dict[str, Any]:
    """An ACP ToolCallContent `diff` (absolute path; `oldText` omitted for a new file)."""
    block: dict[str, Any] = {"type": "diff", "path": str(path), "newText": new_text}
    if old_text is not None:
        block["oldText"] = old_text
    return block


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
