"""Sets of file changes (`acp_fsm.system.changes`): all or none when a change fails, when a
folder turns into a link, and when the process is killed midway (a real child process, killed
by `os._exit` at the chosen step, then `recover` as the next process runs it)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fsm.system import changes
from acp_fsm.system.changes import Change
from acp_fsm.system.nofollow import Relinked

OLD = {"a.py": "a = 1\n", "b.py": "b = 1\n", "gone.txt": "obsolete\n"}

# A child that applies a set and dies (exit code 9) where `AT` says: after the `index`-th file
# is changed, or once the set is marked done.
CHILD = """\
import json, os, sys
from pathlib import Path
from acp_fsm.system import changes
where, planned, journals = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
if where == "done":
    changes._Journal.clean_up = lambda self: os._exit(9)
else:
    changes.after_change = lambda index: index == int(where) and os._exit(9)
changes.apply(
    [changes.Change(Path(p), None if c is None else c.encode()) for p, c in planned],
    journals,
)
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A project holding the files of `OLD`."""
    path = tmp_path / "project"
    path.mkdir()
    path = path.resolve()  # the paths of a set are resolved ones
    for name, text in OLD.items():
        (path / name).write_text(text)
    return path


@pytest.fixture
def journals(tmp_path: Path) -> Path:
    return tmp_path / "home" / "changes"


def planned(folder: Path) -> list[tuple[Path, str | None]]:
    """Update a.py and b.py, add new/c.py (a new folder), delete gone.txt."""
    return [
        (folder / "a.py", "a = 2\n"),
        (folder / "b.py", "b = 2\n"),
        (folder / "new" / "c.py", "c = 1\n"),
        (folder / "gone.txt", None),
    ]


def as_changes(plan: list[tuple[Path, str | None]]) -> list[Change]:
    return [Change(path, None if text is None else text.encode()) for path, text in plan]


def texts(folder: Path) -> dict[str, str]:
    """Every file below `folder` (hidden ones included) and its text."""
    return {
        str(path.relative_to(folder)): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def killed_at(where: str, folder: Path, journals: Path) -> None:
    plan = [(str(path), text) for path, text in planned(folder)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, where, json.dumps(plan), str(journals)],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 9, done.stderr.decode()


def test_a_set_changes_every_file_and_leaves_nothing_behind(folder: Path, journals: Path) -> None:
    (folder / "a.py").chmod(0o640)
    changes.apply(as_changes(planned(folder)), journals)
    assert texts(folder) == {"a.py": "a = 2\n", "b.py": "b = 2\n", "new/c.py": "c = 1\n"}
    assert (folder / "a.py").stat().st_mode & 0o777 == 0o640
    assert os.listdir(journals) == []


def test_a_set_that_fails_midway_changes_nothing(
    folder: Path, journals: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(index: int) -> None:
        if index == 2:  # a.py, b.py and new/c.py are changed
            raise OSError(errno.EIO, "Input/output error", "gone.txt")

    monkeypatch.setattr(changes, "after_change", fail)
    with pytest.raises(OSError, match="Input/output error"):
        changes.apply(as_changes(planned(folder)), journals)
    assert texts(folder) == OLD  # new/ is gone too
    assert os.listdir(journals) == []


def test_without_hard_links_the_old_content_is_copied(
    folder: Path, journals: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    def fail(index: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    (folder / "a.py").chmod(0o600)
    monkeypatch.setattr(os, "link", no_links)
    monkeypatch.setattr(changes, "after_change", fail)
    with pytest.raises(OSError, match="Input/output error"):
        changes.apply(as_changes(planned(folder)), journals)
    assert texts(folder) == OLD
    assert (folder / "a.py").stat().st_mode & 0o777 == 0o600


def test_a_folder_replaced_by_a_link_fails_the_set_and_writes_nothing_outside(
    folder: Path, journals: Path, tmp_path: Path
) -> None:
    (folder / "sub").mkdir()
    target = folder / "sub" / "x.txt"  # resolved while sub/ is a folder
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "sub").rmdir()
    (folder / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Relinked) as raised:
        changes.apply([Change(target, b"x")], journals)
    assert raised.value.filename == str(folder / "sub")
    assert os.listdir(outside) == []
    assert not journals.exists()  # refused before its journal was written


def test_a_set_killed_midway_is_rolled_back_by_the_next_process(
    folder: Path, journals: Path
) -> None:
    killed_at("1", folder, journals)  # a.py and b.py changed, new/c.py staged
    assert texts(folder)["b.py"] == "b = 2\n"
    assert any(name.endswith(".new") for name in os.listdir(folder / "new"))

    restored = changes.recover(journals)

    assert sorted(restored) == [folder / "a.py", folder / "b.py"]
    assert texts(folder) == OLD
    assert os.listdir(journals) == []


def test_a_file_changed_since_the_kill_is_left_as_it_is(folder: Path, journals: Path) -> None:
    killed_at("1", folder, journals)
    (folder / "a.py").write_text("the user's own\n")

    assert changes.recover(journals) == [folder / "b.py"]
    assert texts(folder) == {**OLD, "a.py": "the user's own\n"}


def test_a_set_killed_once_marked_done_is_finished(folder: Path, journals: Path) -> None:
    killed_at("done", folder, journals)

    assert changes.recover(journals) == []
    assert texts(folder) == {"a.py": "a = 2\n", "b.py": "b = 2\n", "new/c.py": "c = 1\n"}
    assert os.listdir(journals) == []


def test_a_set_in_flight_in_a_live_process_is_not_recovered(
    folder: Path, journals: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[Path]] = []
    monkeypatch.setattr(
        changes, "after_change", lambda index: seen.append(changes.recover(journals))
    )
    changes.apply(as_changes(planned(folder)), journals)
    assert seen == [[], [], [], []]
    assert texts(folder) == {"a.py": "a = 2\n", "b.py": "b = 2\n", "new/c.py": "c = 1\n"}
