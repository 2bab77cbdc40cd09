"""Sets of file changes made all or none, even when the process is killed midway (kill -9).

`apply` writes or deletes several files so that they end up all changed or none: a failure
puts back what was done, and a process killed midway leaves a journal from which `recover`,
run by the next process, puts it back. A set goes through four steps:

1. **Journal.** Written into the journals' folder and locked (`flock`) for as long as the set
   is in flight: for each file its path, whether it existed, the hash of its new content, and
   the names beside it of the temporary file for that content and of the link that keeps its
   old one; and the folders the set will make.
2. **Stage.** Those folders are made, each new content is written to its temporary file
   (flushed to disk), each existing file is linked to its keeping name (a copy where the file
   system has no hard links). No file has changed yet.
3. **Apply.** Each temporary file is renamed over its file; each deleted file is unlinked.
4. **Commit.** The journal is marked done; the kept links, the journal and the mark go.
   A set that cannot be marked done is rolled back like one that failed earlier.

`recover` takes every journal whose lock nobody holds (a lock goes with its process): a set
marked done is cleaned up, any other rolled back. Rolling back gives a file that holds what
the set wrote its old content again (a new file is removed), and removes the temporary files
and the folders the set made. A file changed by someone else since (it holds neither) is left
as it is. Rolling back rather than finishing keeps the files as the conversation knows them:
the call that made the set never reported a result.

Every path here is a resolved one, and every folder is opened one name at a time from `/`
without following symbolic links: a folder replaced by a link since the path was resolved
fails the set (`Relinked`) instead of taking a change elsewhere. The journal guards against a
process that dies; a power cut is the file system's matter (the journal and the new contents
are flushed to disk, the renames are not waited for).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from acp_fsm.system import nofollow
from acp_fsm.system.nofollow import Relinked

log = structlog.get_logger("acp.tools")

JOURNAL = ".json"
DONE = ".done"  # the mark of a set that was applied whole
UNFINISHED = ".tmp"  # a journal being written: nothing of its set was staged yet
# Kept and temporary files are named after their file, cut to this many bytes of its name
# (with the set's id and a suffix, a name stays under the usual 255-byte limit).
NAME_BYTES = 200
# Called in the writing thread after each file of a set is changed, with the file's index: where
# a test holds a set midway to kill the process there. Only the devkit's diagnostic extension
# sets it (`ACP_FSM_DEBUG_HOLD_CHANGES`, docs/edits.md).
after_change: Callable[[int], None] | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """One file of a set: `content` written to `path` (absolute and resolved), or the file
    deleted when it is None."""

    path: Path
    content: bytes | None


@dataclass(frozen=True, slots=True)
class _Entry:
    """One file of a journal."""

    path: Path
    existed: bool
    digest: str | None  # sha256 of the new content; None: the file is deleted
    new: str  # the temporary file of the new content, beside `path`
    kept: str  # the name the old content is kept under, beside `path`

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "existed": self.existed,
            "digest": self.digest,
            "new": self.new,
            "kept": self.kept,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Entry:
        return cls(Path(data["path"]), data["existed"], data["digest"], data["new"], data["kept"])


def apply(changes: Sequence[Change], journals: Path) -> None:
    """Make every change or none (blocking: run it off the event loop), journaled in
    `journals`. `OSError` (`Relinked` among them) when one cannot be made: then none was."""
    if not changes:
        return
    journal = _Journal.begin(changes, journals)
    try:
        for entry, change in zip(journal.entries, changes, strict=True):
            _stage(entry, change.content)
        for index, entry in enumerate(journal.entries):
            with nofollow.folder(entry.path) as fd:
                if entry.digest is None:
                    os.unlink(entry.path.name, dir_fd=fd)
                else:
                    os.replace(entry.new, entry.path.name, src_dir_fd=fd, dst_dir_fd=fd)
            if after_change is not None:
                after_change(index)
        journal.mark_done()
    except BaseException:
        journal.roll_back()
        raise
    journal.clean_up()


def recover(journals: Path) -> list[Path]:
    """Finish or roll back each set in `journals` that no live process holds (blocking); the
    files it put back."""
    try:
        names = sorted(os.listdir(journals))
    except FileNotFoundError:
        return []
    restored: list[Path] = []
    for name in names:
        path = journals / name
        if name.endswith(JOURNAL):
            restored += _recover(path)
        elif name.endswith(DONE) and name.removesuffix(DONE) + JOURNAL not in names:
            path.unlink(missing_ok=True)  # its set ended; the mark outlived the journal
        elif name.endswith(UNFINISHED):
            with _unheld(path) as fd:
                if fd is not None:
                    path.unlink(missing_ok=True)
    return restored


# -- the journal --------------------------------------------------------------------------------


class _Journal:
    """A set's journal, locked by the process it is open in."""

    def __init__(self, path: Path, fd: int, entries: list[_Entry], folders: list[Path]) -> None:
        self.path = path
        self.fd = fd
        self.entries = entries
        self.folders = folders

    @classmethod
    def begin(cls, changes: Sequence[Change], journals: Path) -> _Journal:
        """The journal of `changes`, written to disk and locked."""
        ident = secrets.token_hex(8)
        entries = [_entry(change, ident) for change in changes]
        folders = list(dict.fromkeys(f for c in changes for f in _missing(c.path.parent)))
        body = {"files": [e.to_json() for e in entries], "folders": [str(f) for f in folders]}
        unfinished = journals / f"{ident}{UNFINISHED}"
        try:
            journals.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(unfinished, nofollow.CREATE, 0o600)
        except OSError as exc:  # nothing was changed: say it is the journal that failed
            why = f"the journal of changes cannot be written ({exc.strerror or exc})"
            raise OSError(exc.errno, why, str(journals)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held until the set ends: the process is alive
            nofollow.write_all(fd, json.dumps(body).encode())
            path = journals / f"{ident}{JOURNAL}"
            os.replace(unfinished, path)
            nofollow.sync_folder(journals)
        except BaseException:
            os.close(fd)
            unfinished.unlink(missing_ok=True)
            raise
        return cls(path, fd, entries, folders)

    @classmethod
    def read(cls, path: Path, fd: int) -> _Journal:
        """The journal at `path`, open as `fd` (a copy of the descriptor is kept)."""
        with os.fdopen(os.dup(fd), "rb") as handle:
            body = json.loads(handle.read())
        entries = [_Entry.from_json(data) for data in body["files"]]
        return cls(path, os.dup(fd), entries, [Path(folder) for folder in body["folders"]])

    def mark_done(self) -> None:
        """Mark the set applied whole: from here on it is finished, never rolled back."""
        os.close(os.open(self.path.with_suffix(DONE), os.O_WRONLY | os.O_CREAT, 0o600))

    def clean_up(self) -> None:
        """Remove what the set kept and staged, then the journal."""
        for entry in self.entries:
            with contextlib.suppress(OSError), nofollow.folder(entry.path) as fd:
                nofollow.remove(fd, entry.new)
                nofollow.remove(fd, entry.kept)
        self._end()

    def roll_back(self) -> list[Path]:
        """Put back every file of the set that still holds what the set wrote; the journal
        stays (for the next start) unless every file could be looked at."""
        restored: list[Path] = []
        whole = True
        for entry in reversed(self.entries):
            try:
                if _roll_back(entry):
                    restored.append(entry.path)
            except OSError as exc:
                whole = False
                log.warning("change_roll_back_failed", path=str(entry.path), error=str(exc))
        for folder in reversed(self.folders):
            with contextlib.suppress(OSError), nofollow.folder(folder) as fd:
                os.rmdir(folder.name, dir_fd=fd)  # only when empty
        if whole:
            self._end()
        else:
            os.close(self.fd)
        return restored

    def _end(self) -> None:
        with contextlib.suppress(OSError):  # a journal left behind is ended by the next start
            self.path.unlink(missing_ok=True)
            self.path.with_suffix(DONE).unlink(missing_ok=True)
        os.close(self.fd)  # the lock goes last: no one recovers a set still being ended


def _recover(path: Path) -> list[Path]:
    with _unheld(path) as fd:
        if fd is None:
            return []
        try:
            journal = _Journal.read(path, fd)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("change_journal_unreadable", journal=str(path), error=str(exc))
            return []
        if path.with_suffix(DONE).exists():
            journal.clean_up()
            log.info("change_set_finished", journal=str(path))
            return []
        restored = journal.roll_back()
        restored_paths = [str(p) for p in restored]
        log.warning("change_set_rolled_back", journal=str(path), restored=restored_paths)
        return restored


@contextlib.contextmanager
def _unheld(path: Path) -> Iterator[int | None]:
    """A locked descriptor of the journal at `path` when no live process holds it, else None
    (held, or ended and unlinked since it was listed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield fd if os.fstat(fd).st_nlink else None
    finally:
        os.close(fd)


def _entry(change: Change, ident: str) -> _Entry:
    stem = os.fsdecode(os.fsencode(change.path.name)[:NAME_BYTES])
    content = change.content
    return _Entry(
        change.path,
        existed=nofollow.exists(change.path),
        digest=None if content is None else hashlib.sha256(content).hexdigest(),
        new=f".{stem}.{ident}.new",
        kept=f".{stem}.{ident}.old",
    )


def _missing(folder: Path) -> list[Path]:
    """The folders of `folder`'s path that do not exist, outermost first."""
    missing: list[Path] = []
    while not folder.exists() and folder != folder.parent:
        missing.insert(0, folder)
        folder = folder.parent
    return missing


# -- staging and rolling back ------------------------------------------------------------------


def _stage(entry: _Entry, content: bytes | None) -> None:
    """Write the new content beside the file and keep the old one; the file is untouched."""
    name = entry.path.name
    with nofollow.folder(entry.path, create=content is not None) as fd:
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise Relinked(errno.ELOOP, "The file is now a symbolic link", str(entry.path))
        if info is not None and not entry.existed:  # made since the journal was written
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(entry.path))
        if info is None and entry.existed:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(entry.path))
        if content is not None:
            mode = 0o666 if info is None else stat.S_IMODE(info.st_mode)
            nofollow.write_file(fd, entry.new, content, mode, exact=info is not None)
        if info is not None:
            nofollow.keep(fd, name, entry.kept, stat.S_IMODE(info.st_mode))


def _roll_back(entry: _Entry) -> bool:
    """Put `entry`'s file back as it was if it holds what the set wrote; True when it did."""
    try:
        with nofollow.folder(entry.path) as fd:
            nofollow.remove(fd, entry.new)
            return _put_back(fd, entry)
    except (FileNotFoundError, Relinked):
        return False  # its folder is gone or elsewhere: nothing of the set is left there


def _put_back(fd: int, entry: _Entry) -> bool:
    name = entry.path.name
    current = nofollow.digest(fd, name)
    if entry.existed:
        kept = nofollow.stat_of(fd, entry.kept)
        if kept is None:
            return False  # staging stopped before this file: it was never changed
        now = nofollow.stat_of(fd, name)
        if now is not None and (
            os.path.samestat(kept, now) or current == nofollow.digest(fd, entry.kept)
        ):
            nofollow.remove(fd, entry.kept)  # never changed (or changed to the same bytes)
            return False
        if current == entry.digest:  # what the set wrote (a deleted file: none)
            os.replace(entry.kept, name, src_dir_fd=fd, dst_dir_fd=fd)
            return True
        nofollow.remove(fd, entry.kept)
    elif current is None:
        return False  # a new file that was never made
    elif current == entry.digest:
        os.unlink(name, dir_fd=fd)
        return True
    log.warning("change_left_as_changed_since", path=str(entry.path))
    return False
