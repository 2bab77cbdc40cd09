"""The file's own line endings for what the tools write (write_file, edit_file, multi_edit)."""

from __future__ import annotations

from pathlib import Path

from tests.tools.conftest import Env, call


async def test_write_file_keeps_a_crlf_file_crlf(env: Env, project: Path) -> None:
    (project / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    outcome = await call(env, "write_file", path="win.txt", content="one\nthree\n")
    assert not outcome.is_error
    assert (project / "win.txt").read_bytes() == b"one\r\nthree\r\n"


async def test_write_file_writes_a_new_file_as_given(env: Env, project: Path) -> None:
    await call(env, "write_file", path="new.bat", content="@echo off\r\necho hi\r\n")
    assert (project / "new.bat").read_bytes() == b"@echo off\r\necho hi\r\n"


async def test_write_file_leaves_endings_alone_in_a_file_without_line_breaks(
    env: Env, project: Path
) -> None:
    (project / "one.txt").write_bytes(b"single")
    await call(env, "write_file", path="one.txt", content="a\r\nb\r\n")
    assert (project / "one.txt").read_bytes() == b"a\r\nb\r\n"


async def test_an_exact_edit_of_a_crlf_file_adds_crlf_lines(env: Env, project: Path) -> None:
    (project / "win.py").write_bytes(b"x = 1\r\ny = 2\r\n")
    outcome = await call(env, "edit_file", path="win.py", old_text="x = 1", new_text="x = 1\nz = 3")
    assert not outcome.is_error
    assert (project / "win.py").read_bytes() == b"x = 1\r\nz = 3\r\ny = 2\r\n"


async def test_multi_edit_of_a_crlf_file_keeps_it_crlf(env: Env, project: Path) -> None:
    (project / "win.py").write_bytes(b"a = 1\r\nb = 2\r\n")
    edits = [
        {"old_text": "a = 1\n", "new_text": "a = 1\n# note\n"},
        {"old_text": "b = 2", "new_text": "b = 20"},
    ]
    outcome = await call(env, "multi_edit", path="win.py", edits=edits)
    assert not outcome.is_error, outcome.output
    assert (project / "win.py").read_bytes() == b"a = 1\r\n# note\r\nb = 20\r\n"
