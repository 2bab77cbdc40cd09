"""read_file through the disk and through the editor's buffers."""

from __future__ import annotations

from pathlib import Path

from acp_fsm.tools.read_file import MAX_READ_BYTES, MAX_READ_LINES
from tests.tools.conftest import Env, call


def _numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


async def test_reads_the_whole_file(env: Env, project: Path) -> None:
    (project / "a.txt").write_text("one\ntwo\n")
    outcome = await call(env, "read_file", path="a.txt")
    assert not outcome.is_error
    assert outcome.output == "one\ntwo\n"
    assert outcome.locations == ({"path": str(project / "a.txt"), "line": 1},)


async def test_offset_and_limit_are_one_based_lines(env: Env, project: Path) -> None:
    (project / "a.txt").write_text(_numbered(10))
    outcome = await call(env, "read_file", path="a.txt", offset=3, limit=2)
    assert outcome.output.startswith("line 3\nline 4\n")
    assert "continues at offset=5" in outcome.output
    assert outcome.locations == ({"path": str(project / "a.txt"), "line": 3},)
    last = await call(env, "read_file", path="a.txt", offset=9, limit=5)
    assert last.output == "line 9\nline 10\n"


async def test_offset_past_the_end(env: Env, project: Path) -> None:
    (project / "a.txt").write_text("x\n")
    outcome = await call(env, "read_file", path="a.txt", offset=5)
    assert not outcome.is_error
    assert "fewer than 5 lines" in outcome.output


async def test_empty_file_says_so(env: Env, project: Path) -> None:
    (project / "empty.txt").write_text("")
    outcome = await call(env, "read_file", path="empty.txt")
    assert outcome.output == "(empty.txt is empty)"


async def test_default_line_cap_says_how_to_read_on(env: Env, project: Path) -> None:
    (project / "long.txt").write_text(_numbered(MAX_READ_LINES + 50))
    outcome = await call(env, "read_file", path="long.txt")
    body, note = outcome.output.rsplit("\n[", 1)
    assert body.splitlines()[-1] == f"line {MAX_READ_LINES}"
    assert len(body.splitlines()) == MAX_READ_LINES
    assert f"offset={MAX_READ_LINES + 1}" in note
    rest = await call(env, "read_file", path="long.txt", offset=MAX_READ_LINES + 1)
    assert rest.output.splitlines()[0] == f"line {MAX_READ_LINES + 1}"
    assert rest.output.endswith("line 2050\n")


async def test_byte_cap_truncates_between_lines(env: Env, project: Path) -> None:
    line = "x" * 999 + "\n"  # 1000 bytes per line
    (project / "wide.txt").write_text(line * 400)
    outcome = await call(env, "read_file", path="wide.txt")
    shown = MAX_READ_BYTES // 1000
    assert f"truncated at {MAX_READ_BYTES // 1024} KiB" in outcome.output
    assert f"lines 1-{shown}" in outcome.output
    assert f"offset={shown + 1}" in outcome.output
    assert len(outcome.output.encode()) < MAX_READ_BYTES + 500


async def test_a_single_huge_line_is_cut(env: Env, project: Path) -> None:
    (project / "min.js").write_text("a" * (MAX_READ_BYTES * 2) + "\nnext\n")
    outcome = await call(env, "read_file", path="min.js")
    assert outcome.output.startswith("a" * 1000)
    assert "Line 1 is longer than" in outcome.output and "offset=2" in outcome.output
    assert len(outcome.output) < MAX_READ_BYTES + 500


async def test_invalid_utf8_is_replaced(env: Env, project: Path) -> None:
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    outcome = await call(env, "read_file", path="latin1.txt")
    assert outcome.output == "caf\ufffd\n"


async def test_crlf_is_kept(env: Env, project: Path) -> None:
    (project / "dos.txt").write_bytes(b"a\r\nb\r\n")
    outcome = await call(env, "read_file", path="dos.txt", offset=2)
    assert outcome.output == "b\r\n"


async def test_failures_are_error_outcomes(env: Env, project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    (project / "dir").mkdir()
    binary = await call(env, "read_file", path="blob.bin")
    assert binary.is_error and "binary" in binary.output
    missing = await call(env, "read_file", path="nope.txt")
    assert missing.is_error and "not found" in missing.output
    directory = await call(env, "read_file", path="dir")
    assert directory.is_error and "list_directory" in directory.output
    invalid = await call(env, "read_file", path="a.txt", offset=0)
    assert invalid.is_error and "offset" in invalid.output
    extra = await call(env, "read_file", path="a.txt", lines=3)
    assert extra.is_error and "lines" in extra.output


async def test_the_editor_buffer_wins(editor_env: Env, project: Path) -> None:
    path = project / "a.py"
    path.write_text("on disk\n")
    editor_env.client.buffers[str(path)] = "unsaved 1\nunsaved 2\nunsaved 3\n"
    outcome = await call(editor_env, "read_file", path="a.py", offset=2, limit=1)
    assert outcome.output.startswith("unsaved 2\n")
    assert "continues at offset=3" in outcome.output
    # Asked for one line more than the window, to know whether the file continues.
    assert editor_env.client.calls == [("read", str(path), 2, 2)]


async def test_editor_read_failure_is_an_error_outcome(editor_env: Env, project: Path) -> None:
    path = project / "locked.txt"
    path.write_text("x")
    editor_env.client.unreadable.add(str(path))
    outcome = await call(editor_env, "read_file", path="locked.txt")
    assert outcome.is_error
    assert "editor could not read locked.txt" in outcome.output
    assert "cannot open" in outcome.output
