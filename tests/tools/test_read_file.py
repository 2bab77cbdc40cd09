"""read_file through the disk and through the editor's buffers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.blocking import BLOCKING_THREAD_NAME, run_blocking
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.tools import read_file
from acp_fsm.tools.common import ToolError
from acp_fsm.tools.read_file import MAX_READ_BYTES, MAX_READ_LINES
from acp_fsm.tools.text_files import open_text_file
from tests.harness import wait_until
from tests.timing import INTERRUPTED_S
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


async def test_an_empty_buffer_of_a_file_not_on_disk_is_no_file(
    editor_env: Env, project: Path
) -> None:
    """An empty editor answer for a file the disk lacks means no file; a window past the end
    of an unsaved buffer is empty too, and is not taken for that."""
    new, unsaved = project / "new.py", project / "unsaved.py"
    editor_env.client.buffers.update({str(new): "", str(unsaved): "one\ntwo\n"})
    missing = await call(editor_env, "read_file", path="new.py")
    assert missing.is_error
    assert missing.output == (
        "File not found: new.py (it is not on disk, and the editor has no text for it)"
    )
    past = await call(editor_env, "read_file", path="unsaved.py", offset=5)
    assert (past.is_error, past.output) == (False, "(no lines: unsaved.py has fewer than 5 lines)")
    assert editor_env.client.calls[-2:] == [
        ("read", str(unsaved), 5, MAX_READ_LINES + 1),
        ("read", str(unsaved), None, None),
    ]


async def test_editor_read_failure_is_an_error_outcome(editor_env: Env, project: Path) -> None:
    path = project / "locked.txt"
    path.write_text("x")
    editor_env.client.unreadable.add(str(path))
    outcome = await call(editor_env, "read_file", path="locked.txt")
    assert outcome.is_error
    assert "editor could not read locked.txt" in outcome.output
    assert "cannot open" in outcome.output


# ---------------------------------------------------- special files and blocking file systems


async def test_a_fifo_is_refused_without_opening_it(
    env: Env, editor_env: Env, project: Path
) -> None:
    os.mkfifo(project / "pipe")
    for session in (env, editor_env):
        outcome = await asyncio.wait_for(call(session, "read_file", path="pipe"), 2)
        assert outcome.is_error
        assert outcome.output == (
            "Not a regular file: pipe is a named pipe; only regular "
            "files can be read or changed with this tool"
        )
    assert editor_env.client.calls == []  # refused before the editor was asked


async def test_a_fifo_swapped_in_after_the_check_does_not_block(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The type check and the open are two steps: a FIFO can take the file's place between
    them. The open does not wait for a writer and what it opened is checked again."""
    (project / "file.txt").write_text("text\n")
    os.mkfifo(project / "pipe")
    real_stat = os.stat

    def stale_stat(path: Any, *rest: Any, **options: Any) -> os.stat_result:
        if Path(path) == project / "pipe":  # what the check saw before the swap
            return real_stat(project / "file.txt")
        return real_stat(path, *rest, **options)

    monkeypatch.setattr(os, "stat", stale_stat)
    with pytest.raises(ToolError, match="Not a regular file: pipe is a named pipe"):
        await asyncio.wait_for(
            run_blocking(CancellationToken(), open_text_file, project / "pipe", "pipe"), 2
        )


async def test_cancel_does_not_wait_for_a_blocked_read(
    env: Env, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read stuck in the kernel (here: a FIFO opened the blocking way) cannot be stopped;
    the cancel is answered at once and the stuck daemon thread is left behind."""
    fifo = project / "pipe"
    os.mkfifo(fifo)
    (project / "a.txt").write_text("x\n")
    entered = threading.Event()

    def blocked_read(*args: Any) -> list[str]:
        entered.set()
        with open(fifo, "rb"):  # waits for a writer
            return []

    monkeypatch.setattr(read_file, "read_disk_lines", blocked_read)
    before = set(threading.enumerate())
    task = asyncio.create_task(call(env, "read_file", path="a.txt"))
    await wait_until(entered.is_set, "the read to block")
    fired = time.monotonic()
    env.token.cancel()
    with pytest.raises(Cancelled):
        await task
    assert time.monotonic() - fired < INTERRUPTED_S  # else blocked for good
    (stuck,) = [t for t in set(threading.enumerate()) - before if t.name == BLOCKING_THREAD_NAME]
    assert stuck.is_alive() and stuck.daemon
    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a writer comes: the thread ends
    stuck.join(2)
    assert not stuck.is_alive()


def test_an_abandoned_blocking_call_does_not_keep_the_process_alive(project: Path) -> None:
    """`asyncio.run` joins the default executor's threads at shutdown: a read stuck there
    would keep the agent from exiting on stdin EOF. `run_blocking`'s threads do not."""
    fifo = project / "pipe"
    os.mkfifo(fifo)
    script = (
        "import asyncio, sys\n"
        "from acp_fsm.blocking import run_blocking\n"
        "from acp_fsm.protocol.cancel import CancellationToken, Cancelled\n"
        "async def main():\n"
        "    token = CancellationToken()\n"
        "    asyncio.get_running_loop().call_later(0.2, token.cancel)\n"
        "    try:\n"
        "        await run_blocking(token, open, sys.argv[1], 'rb')\n"
        "    except Cancelled:\n"
        "        print('cancelled')\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(fifo)],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=10,
        check=True,
    )
    assert done.stdout == b"cancelled\n"
