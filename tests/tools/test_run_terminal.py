"""run_command through the editor's terminal: the request sequence, timeout and cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.tools.run_command import TERMINAL_OUTPUT_BYTE_LIMIT
from tests.harness import alive
from tests.timing import INTERRUPTED_S
from tests.tools.conftest import Editor, Env, call


async def test_create_report_wait_output_release(editor_env: Env, project: Path) -> None:
    editor = editor_env.client
    outcome = await call(editor_env, "run_command", command="echo hi; echo oops >&2; exit 4")
    assert editor.names() == ["create", "report", "wait", "output", "release"]
    assert editor.calls[0] == (
        "create",
        "sh",
        ("-c", "echo hi; echo oops >&2; exit 4"),
        str(project),
        TERMINAL_OUTPUT_BYTE_LIMIT,
    )
    block = {"type": "terminal", "terminalId": "term-1"}
    assert editor.calls[1] == ("report", (block,))
    assert not outcome.is_error
    assert outcome.output == "Exit code: 4\nhi\noops\n"
    # the terminal stays as the editor shows it; a reload shows the output instead
    assert outcome.replay == (
        {"type": "content", "content": {"type": "text", "text": "Exit code: 4\nhi\noops\n"}},
    )


async def test_editor_truncation_is_reported(editor_env: Env) -> None:
    outcome = await call(
        editor_env,
        "run_command",
        command=f"head -c {TERMINAL_OUTPUT_BYTE_LIMIT * 2} /dev/zero | tr '\\0' y",
    )
    assert "editor kept only the last" in outcome.output
    assert outcome.output.endswith("y" * 100)


async def test_timeout_kills_then_reads_then_releases(editor_env: Env, project: Path) -> None:
    editor = editor_env.client
    started = time.monotonic()
    outcome = await call(editor_env, "run_command", command="echo begin; sleep 30", timeout_ms=200)
    assert time.monotonic() - started < 3
    assert editor.names() == ["create", "report", "wait", "kill", "output", "release"]
    assert outcome.output.startswith("Timed out after 200 ms; the command was killed.")
    assert "begin" in outcome.output
    assert not alive(editor.terminals["term-1"].process.pid)


async def test_cancel_kills_and_releases(editor_env: Env, project: Path) -> None:
    editor = editor_env.client
    task = asyncio.create_task(call(editor_env, "run_command", command="sleep 30"))
    await asyncio.wait_for(editor.waiting.wait(), 5)
    fired = time.monotonic()
    editor_env.token.cancel()
    with pytest.raises(Cancelled):
        await task
    assert time.monotonic() - fired < INTERRUPTED_S  # else the 30 s sleep
    assert editor.names() == ["create", "report", "wait", "kill", "release"]
    assert "term-1" in editor.released
    await asyncio.wait_for(editor.settle(), 5)
    assert not alive(editor.terminals["term-1"].process.pid)


async def test_create_failure_is_an_error_without_release(project: Path) -> None:
    editor = Editor(terminal=True, fail_create=True)
    env = Env(cwd=project, client=editor)
    outcome = await call(env, "run_command", command="true")
    assert outcome.is_error and "could not start a terminal" in outcome.output
    assert editor.names() == ["create"]
