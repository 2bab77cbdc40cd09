"""write_file and edit_file: disk (atomic) and editor paths, diffs, edit_file's matching rules."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from acp_fsm.tools import TOOLS
from acp_fsm.tools.common import ToolError
from acp_fsm.tools.paths import utf8_text
from tests.tools.conftest import Env, call, diff_block


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------- write_file


async def test_write_creates_file_and_parents(env: Env, project: Path) -> None:
    outcome = await call(env, "write_file", path="src/pkg/new.py", content="a = 1\nb = 2\n")
    target = project / "src" / "pkg" / "new.py"
    assert not outcome.is_error
    assert target.read_text() == "a = 1\nb = 2\n"
    assert "Created src/pkg/new.py (2 lines)" in outcome.output
    assert outcome.content == (
        {"type": "diff", "path": str(target), "oldText": None, "newText": "a = 1\nb = 2\n"},
    )
    assert outcome.locations == ({"path": str(target)},)


async def test_new_file_gets_umask_mode_not_temp_file_mode(env: Env, project: Path) -> None:
    await call(env, "write_file", path="fresh.txt", content="x")
    umask = os.umask(0)
    os.umask(umask)
    assert _mode(project / "fresh.txt") == 0o666 & ~umask


async def test_overwrite_keeps_mode_and_shows_old_text(env: Env, project: Path) -> None:
    target = project / "run.sh"
    target.write_text("echo old\n")
    target.chmod(0o750)
    outcome = await call(env, "write_file", path="run.sh", content="echo new\n")
    assert target.read_text() == "echo new\n"
    assert _mode(target) == 0o750
    assert outcome.content == (
        {"type": "diff", "path": str(target), "oldText": "echo old\n", "newText": "echo new\n"},
    )
    assert "was 1 line" in outcome.output


async def test_write_through_symlink_updates_the_target(env: Env, project: Path) -> None:
    (project / "real.txt").write_text("old")
    os.symlink(project / "real.txt", project / "alias.txt")
    outcome = await call(env, "write_file", path="alias.txt", content="new")
    assert (project / "alias.txt").is_symlink()
    assert (project / "real.txt").read_text() == "new"
    assert diff_block(outcome.content[0])["path"] == str(project / "real.txt")


async def test_failed_replace_leaves_original_and_no_temp_file(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = project / "keep.txt"
    target.write_text("original\n")
    before = sorted(os.listdir(project))

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(os, "replace", broken_replace)
    outcome = await call(env, "write_file", path="keep.txt", content="new content\n" * 1000)
    assert outcome.is_error
    assert "Could not write keep.txt" in outcome.output and "No space left" in outcome.output
    assert target.read_text() == "original\n"
    assert sorted(os.listdir(project)) == before


async def test_failed_write_midway_leaves_no_temp_file(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    outcome = await call(env, "write_file", path="new.txt", content="x")
    assert outcome.is_error
    assert os.listdir(project) == []


async def test_a_call_writes_only_where_its_view_said(env: Env, project: Path) -> None:
    """The path is resolved again when the call runs: it must be one the view showed (a name's
    bytes that are not UTF-8 shown as `\\xNN` there)."""
    folder = project / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    (project / "link").symlink_to(folder, target_is_directory=True)
    env.locations = ({"path": utf8_text(str(folder / "a.txt"))},)
    written = await call(env, "write_file", path="link/a.txt", content="x")
    assert (written.is_error, (folder / "a.txt").read_text()) == (False, "x")
    env.locations = ({"path": str(project / "b.txt")},)
    refused = await call(env, "write_file", path="link/b.txt", content="x")
    assert refused.is_error
    assert refused.output.startswith("link/b.txt no longer leads to the file the user was asked")
    assert not (folder / "b.txt").exists()


async def test_write_to_a_directory_is_an_error(env: Env, project: Path) -> None:
    (project / "dir").mkdir()
    outcome = await call(env, "write_file", path="dir", content="x")
    assert outcome.is_error and "directory" in outcome.output


async def test_write_through_the_editor(editor_env: Env, project: Path) -> None:
    target = project / "a.txt"
    target.write_text("disk\n")
    editor_env.client.buffers[str(target)] = "buffer\n"
    outcome = await call(editor_env, "write_file", path="a.txt", content="new\n")
    assert editor_env.client.buffers[str(target)] == "new\n"
    assert target.read_text() == "disk\n"  # the editor owns the write
    assert diff_block(outcome.content[0])["oldText"] == "buffer\n"
    assert editor_env.client.names() == ["read", "write"]


async def test_write_new_file_through_the_editor(editor_env: Env, project: Path) -> None:
    """Missing on disk: the editor is still asked (it may hold an unsaved buffer); it has
    none, so the file is new."""
    target = str(project / "brand" / "new.txt")
    outcome = await call(editor_env, "write_file", path="brand/new.txt", content="hi")
    assert editor_env.client.calls == [("read", target, None, None), ("write", target)]
    assert diff_block(outcome.content[0])["oldText"] is None
    assert outcome.output.startswith("Created brand/new.txt")


async def test_an_unsaved_buffer_missing_on_disk_is_the_file(
    editor_env: Env, project: Path
) -> None:
    """A new buffer the user has open but never saved: read, edited and overwritten as the
    file it is, never refused because the disk does not have it."""
    target = str(project / "draft.md")
    editor_env.client.buffers[target] = "# Draft\ntodo\n"
    read = await call(editor_env, "read_file", path="draft.md")
    assert read.output == "# Draft\ntodo\n" and not read.is_error
    edited = await call(editor_env, "edit_file", path="draft.md", old_text="todo", new_text="done")
    assert not edited.is_error, edited.output
    assert editor_env.client.buffers[target] == "# Draft\ndone\n"
    written = await call(editor_env, "write_file", path="draft.md", content="new\n")
    assert diff_block(written.content[0])["oldText"] == "# Draft\ndone\n"
    assert not (project / "draft.md").exists()  # the editor owns it


async def test_missing_everywhere_is_file_not_found(editor_env: Env, project: Path) -> None:
    read = await call(editor_env, "read_file", path="nowhere.txt")
    assert read.is_error and read.output.startswith("File not found: nowhere.txt")
    edited = await call(editor_env, "edit_file", path="nowhere.txt", old_text="a", new_text="b")
    assert edited.is_error and edited.output.startswith("File not found: nowhere.txt")


async def test_edit_preview_is_the_diff_and_refuses_what_cannot_apply(
    env: Env, project: Path
) -> None:
    (project / "c.py").write_text("a = 1\n")
    edit = TOOLS["edit_file"]
    drafts: dict[Path, str] = {}
    shown = await edit.preview({"path": "c.py", "old_text": "1", "new_text": "2"}, env, drafts)
    assert shown == (
        {"type": "diff", "path": str(project / "c.py"), "oldText": "a = 1\n", "newText": "a = 2\n"},
    )
    assert drafts == {project / "c.py": "a = 2\n"}
    with pytest.raises(ToolError, match="old_text was not found"):
        await edit.preview({"path": "c.py", "old_text": "9", "new_text": "2"}, env, {})
    assert (project / "c.py").read_text() == "a = 1\n"  # a preview changes nothing


async def test_previews_build_on_the_calls_before_them(env: Env, project: Path) -> None:
    """A write then edits of the new file, in one message: each is shown against the text
    the calls before it leave, though none has run yet."""
    drafts: dict[Path, str] = {}
    path = project / "n.py"
    write = await TOOLS["write_file"].preview({"path": "n.py", "content": "x = 1\n"}, env, drafts)
    first = await TOOLS["edit_file"].preview(
        {"path": "n.py", "old_text": "x = 1", "new_text": "x = 2"}, env, drafts
    )
    second = await TOOLS["edit_file"].preview(
        {"path": "n.py", "old_text": "x = 2", "new_text": "x = 3"}, env, drafts
    )
    assert [diff_block(block)["oldText"] for (block,) in (write, first, second)] == [
        None,
        "x = 1\n",
        "x = 2\n",
    ]
    assert drafts == {path: "x = 3\n"}
    assert not path.exists()


async def test_a_file_changed_since_its_diff_was_shown_is_not_written(
    env: Env, project: Path
) -> None:
    """The user approved a change to the text the diff showed; if the file holds something
    else by the time the call runs, nothing is written."""
    target = project / "c.py"
    target.write_text("a = 1\n")
    args = {"path": "c.py", "old_text": "a = 1", "new_text": "a = 2"}
    shown = await TOOLS["edit_file"].preview(args, env, {})
    target.write_text("a = 1\nb = 9\n")  # the user typed while being asked
    env.previewed = shown
    edited = await call(env, "edit_file", **args)
    assert edited.is_error and "is not as it was when this change was shown" in edited.output
    written = await call(env, "write_file", path="c.py", content="new\n")
    assert written.is_error and "is not as it was when this change was shown" in written.output
    assert target.read_text() == "a = 1\nb = 9\n"
    target.write_text("a = 1\n")  # as shown again: it goes ahead
    assert not (await call(env, "edit_file", **args)).is_error


# -------------------------------------------------------------------------- edit_file


async def test_edit_replaces_the_single_occurrence(env: Env, project: Path) -> None:
    target = project / "app.py"
    old = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    target.write_text(old)
    target.chmod(0o640)
    outcome = await call(
        env, "edit_file", path="app.py", old_text="    return 2\n", new_text="    return 3\n"
    )
    new = old.replace("return 2", "return 3")
    assert not outcome.is_error
    assert target.read_text() == new
    assert _mode(target) == 0o640
    assert outcome.content == (
        {"type": "diff", "path": str(target), "oldText": old, "newText": new},
    )
    assert outcome.locations == ({"path": str(target), "line": 6},)
    assert "replaced 1 occurrence" in outcome.output


async def test_edit_location_skips_shared_leading_context(env: Env, project: Path) -> None:
    (project / "a.txt").write_text("a\nb\nc\nd\n")
    outcome = await call(env, "edit_file", path="a.txt", old_text="b\nc\n", new_text="b\nC\n")
    assert outcome.locations == ({"path": str(project / "a.txt"), "line": 3},)


async def test_edit_zero_occurrences(env: Env, project: Path) -> None:
    (project / "a.txt").write_text("hello\n")
    outcome = await call(env, "edit_file", path="a.txt", old_text="bye", new_text="x")
    assert outcome.is_error and "not found" in outcome.output
    assert (project / "a.txt").read_text() == "hello\n"


async def test_edit_many_occurrences_needs_context_or_replace_all(env: Env, project: Path) -> None:
    (project / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    outcome = await call(env, "edit_file", path="a.txt", old_text="x = 1", new_text="x = 2")
    assert outcome.is_error
    assert "3 times" in outcome.output and "replace_all" in outcome.output
    assert (project / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"
    done = await call(
        env, "edit_file", path="a.txt", old_text="x = 1", new_text="x = 2", replace_all=True
    )
    assert not done.is_error and "replaced 3 occurrences" in done.output
    assert (project / "a.txt").read_text() == "x = 2\nx = 2\nx = 2\n"


async def test_edit_rejects_empty_and_identical_text(env: Env, project: Path) -> None:
    (project / "a.txt").write_text("a\n")
    empty = await call(env, "edit_file", path="a.txt", old_text="", new_text="b")
    assert empty.is_error and "old_text is empty" in empty.output
    same = await call(env, "edit_file", path="a.txt", old_text="a", new_text="a")
    assert same.is_error and "the same" in same.output
    missing = await call(env, "edit_file", path="b.txt", old_text="a", new_text="b")
    assert missing.is_error and "write_file" in missing.output


async def test_edit_keeps_crlf_line_endings(env: Env, project: Path) -> None:
    (project / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    outcome = await call(env, "edit_file", path="dos.txt", old_text="one\ntwo\n", new_text="1\n2\n")
    assert not outcome.is_error
    assert (project / "dos.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_refuses_invalid_utf8(env: Env, project: Path) -> None:
    (project / "latin1.txt").write_bytes(b"caf\xe9 ok\n")
    outcome = await call(env, "edit_file", path="latin1.txt", old_text="ok", new_text="ko")
    assert outcome.is_error and "UTF-8" in outcome.output
    assert (project / "latin1.txt").read_bytes() == b"caf\xe9 ok\n"


async def test_edit_through_the_editor_uses_the_buffer(editor_env: Env, project: Path) -> None:
    target = project / "a.py"
    target.write_text("print('disk')\n")
    editor_env.client.buffers[str(target)] = "print('unsaved')\n"
    outcome = await call(
        editor_env, "edit_file", path="a.py", old_text="unsaved", new_text="edited"
    )
    assert not outcome.is_error
    assert editor_env.client.buffers[str(target)] == "print('edited')\n"
    assert target.read_text() == "print('disk')\n"
    assert diff_block(outcome.content[0])["oldText"] == "print('unsaved')\n"
    assert editor_env.client.calls == [("read", str(target), None, None), ("write", str(target))]


async def test_edit_failed_atomic_write_keeps_file(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "a.txt").write_text("keep me\n")

    def broken_replace(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(os, "replace", broken_replace)
    outcome = await call(env, "edit_file", path="a.txt", old_text="keep", new_text="lose")
    assert outcome.is_error
    assert (project / "a.txt").read_text() == "keep me\n"
    assert os.listdir(project) == ["a.txt"]


# ------------------------------------------------------------------------- special files

CHANGES = {
    "write_file": {"content": "new\n"},
    "edit_file": {"old_text": "a", "new_text": "b"},
}


@pytest.mark.parametrize("name", sorted(CHANGES))
async def test_a_fifo_is_neither_opened_nor_replaced(
    name: str, env: Env, editor_env: Env, project: Path
) -> None:
    os.mkfifo(project / "pipe")
    for session in (env, editor_env):
        outcome = await asyncio.wait_for(call(session, name, path="pipe", **CHANGES[name]), 2)
        assert outcome.is_error
        assert outcome.output.startswith("Not a regular file: pipe is a named pipe")
        assert stat.S_ISFIFO((project / "pipe").lstat().st_mode)
    assert editor_env.client.calls == []
    assert os.listdir(project) == ["pipe"]


@pytest.mark.parametrize("name", sorted(CHANGES))
async def test_a_directory_is_refused(name: str, env: Env, project: Path) -> None:
    (project / "dir").mkdir()
    outcome = await call(env, name, path="dir", **CHANGES[name])
    assert outcome.is_error
    assert outcome.output == "dir is a directory; use list_directory to see its entries"
    assert os.listdir(project / "dir") == []
