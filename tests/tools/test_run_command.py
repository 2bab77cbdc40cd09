"""run_command as a local subprocess: exit codes, output, caps, timeouts, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.system.keeper import STOP_GRACE_SECONDS
from acp_fsm.tools import process
from acp_fsm.tools.process import OutputCapture
from acp_fsm.tools.run_command import MAX_TIMEOUT_MS
from tests.harness import alive, live_processes, wait_until
from tests.timing import INTERRUPTED_S
from tests.tools.conftest import Editor, Env, call


def _read_pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


async def _pids(path: Path, count: int) -> list[int]:
    """The pids a command wrote to `path`, once it wrote `count` of them."""
    pids: list[int] = await wait_until(
        lambda: (found := _read_pids(path)) and len(found) >= count and found,
        f"the command to write {count} pids to {path}",
    )
    return pids


async def test_success_output_and_content(env: Env, project: Path) -> None:
    (project / "marker.txt").write_text("")
    outcome = await call(env, "run_command", command="ls; echo done")
    assert not outcome.is_error
    assert outcome.output == "Exit code: 0\nmarker.txt\ndone\n"
    assert outcome.content == (
        {"type": "content", "content": {"type": "text", "text": outcome.output}},
    )


async def test_nonzero_exit_is_not_an_error(env: Env) -> None:
    outcome = await call(env, "run_command", command="echo out; echo err >&2; exit 3")
    assert not outcome.is_error
    assert outcome.output.splitlines() == ["Exit code: 3", "out", "err"]


async def test_no_output_and_empty_stdin(env: Env) -> None:
    outcome = await call(env, "run_command", command="cat")  # /dev/null: returns at once
    assert outcome.output == "Exit code: 0\n(no output)"


async def test_killed_by_signal(env: Env) -> None:
    outcome = await call(env, "run_command", command="kill -TERM $$")
    assert outcome.output.startswith("Killed by signal SIGTERM")


async def test_never_writes_to_the_agent_stdout(
    env: Env, capfd: pytest.CaptureFixture[str]
) -> None:
    outcome = await call(env, "run_command", command="echo to-stdout; echo to-stderr >&2")
    captured = capfd.readouterr()
    assert "to-stdout" not in captured.out and "to-stderr" not in captured.err
    assert "to-stdout" in outcome.output and "to-stderr" in outcome.output


async def test_output_keeps_head_and_tail(env: Env) -> None:
    total = 200_000
    outcome = await call(
        env,
        "run_command",
        command=f"printf START; head -c {total} /dev/zero | tr '\\0' x; printf END",
    )
    text = outcome.output
    head, tail = process.OUTPUT_HEAD_BYTES, process.OUTPUT_TAIL_BYTES
    assert text.startswith("Exit code: 0\nSTART")
    assert text.endswith("END")
    assert f"{total + 8 - head - tail:,} bytes of output omitted" in text
    assert len(text) < head + tail + 300


def test_capture_does_not_show_half_a_character() -> None:
    capture = OutputCapture(head=4, tail=5)
    capture.feed(b"head" + "\u00e9".encode() * 10)  # 2-byte characters
    text = capture.text()
    assert "\ufffd" not in text
    assert text.startswith("head\n[... ") and text.endswith("\u00e9\u00e9")


async def test_timeout_kills_the_whole_group(env: Env, project: Path) -> None:
    pidfile = project / "pids"
    started = time.monotonic()
    outcome = await call(
        env,
        "run_command",
        command=f"echo $$ > {pidfile}; sleep 30 & echo $! >> {pidfile}; wait",
        timeout_ms=300,
    )
    assert time.monotonic() - started < 3
    assert not outcome.is_error
    assert outcome.output.startswith("Timed out after 300 ms; the command was killed.")
    shell, child = await _pids(pidfile, 2)
    assert not alive(shell)
    assert not alive(child)


async def test_background_children_are_stopped_after_exit(env: Env, project: Path) -> None:
    pidfile = project / "pids"
    outcome = await call(
        env, "run_command", command=f"sleep 30 >/dev/null 2>&1 & echo $! > {pidfile}; echo ok"
    )
    assert outcome.output.startswith("Exit code: 0\n[Processes the command left running")
    (child,) = await _pids(pidfile, 1)
    assert not alive(child)


async def test_cancel_mid_run_is_fast_and_leaves_no_process(env: Env, project: Path) -> None:
    pidfile = project / "pids"
    task = asyncio.create_task(
        call(
            env,
            "run_command",
            command=f"echo $$ > {pidfile}; sleep 30 & echo $! >> {pidfile}; wait",
        )
    )
    shell, child = await _pids(pidfile, 2)
    fired = time.monotonic()
    env.token.cancel()
    with pytest.raises(Cancelled):
        await task
    assert time.monotonic() - fired < INTERRUPTED_S  # else the 30 s sleep
    assert not alive(shell)
    assert not alive(child)


async def test_already_cancelled_token_starts_nothing(env: Env, project: Path) -> None:
    env.token.cancel()
    with pytest.raises(Cancelled):
        await call(env, "run_command", command=f"touch {project / 'ran'}")
    assert not (project / "ran").exists()


async def test_start_failure_is_an_error(tmp_path: Path) -> None:
    env = Env(cwd=tmp_path / "missing-dir", client=Editor())
    outcome = await call(env, "run_command", command="true")
    assert outcome.is_error and "Could not start the command" in outcome.output


async def test_invalid_arguments(env: Env) -> None:
    too_long = await call(env, "run_command", command="true", timeout_ms=MAX_TIMEOUT_MS + 1)
    assert too_long.is_error and "timeout_ms" in too_long.output
    blank = await call(env, "run_command", command="   ")
    assert blank.is_error and "blank" in blank.output


async def test_a_process_that_left_the_group_is_stopped_and_does_not_hang_the_call(
    env: Env,
) -> None:
    """`setsid` escapes the group but keeps the output pipe: the call still returns, and the
    escaped process is stopped with the rest (the keeper adopted it)."""
    started = time.monotonic()
    outcome = await call(env, "run_command", command="setsid sleep 5 & echo $!; echo hi")
    escaped = int(outcome.output.splitlines()[2])
    try:
        assert time.monotonic() - started < 3
        assert outcome.output.startswith("Exit code: 0\n[Processes the command left running")
        assert outcome.output.endswith("hi\n")
        assert not alive(escaped)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


async def test_cancel_of_a_command_that_ignores_sigterm_is_quick(env: Env, project: Path) -> None:
    """SIGKILL follows SIGTERM after a short grace on a cancel (the answer waits for it)."""
    pidfile = project / "pids"
    task = asyncio.create_task(
        call(env, "run_command", command=f"trap '' TERM; echo $$ > {pidfile}; sleep 30.0417")
    )
    (shell,) = await _pids(pidfile, 1)
    await wait_until(lambda: live_processes("sleep 30.0417"), "the shell to start sleep")
    fired = time.monotonic()
    env.token.cancel()
    with pytest.raises(Cancelled):
        await task
    assert time.monotonic() - fired < STOP_GRACE_SECONDS  # not the long grace
    await wait_until(lambda: not alive(shell), "the shell to be gone", 1.0)


async def test_a_nul_byte_in_the_command_is_an_error(env: Env) -> None:
    outcome = await call(env, "run_command", command="echo a\0b")
    assert outcome.is_error
    assert outcome.output == "Could not start the command: embedded null byte"
