"""Background commands: started by run_command, read by command_output, stopped by
kill_command or with the session; locally and in the editor's terminal."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.system.keeper import proc_stat
from acp_fsm.tools.local_job import LocalJob
from tests.harness import wait_until
from tests.timing import INTERRUPTED_S
from tests.tools.conftest import Editor, Env, call

SERVER = f"{sys.executable} -u -c \"print('ready'); import time; time.sleep(60)\""
TICKS = "for i in 1 2 3; do echo tick $i; sleep 0.6; done"


def running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    fields = proc_stat(pid)
    return fields is not None and fields[0] != b"Z"


def local_job(env: Env, job_id: str = "bg_1") -> LocalJob:
    job = env.background.get(job_id)
    assert isinstance(job, LocalJob)
    return job


async def test_a_background_command_starts_reads_and_stops(env: Env) -> None:
    started = await call(env, "run_command", command=SERVER, background=True)
    assert not started.is_error, started.output
    assert started.output.startswith("Started in the background as bg_1; it is running.")
    assert "ready" in started.output
    job = local_job(env)
    assert job.ended is None and running(job.pid)

    quiet = await call(env, "command_output", id="bg_1")
    assert quiet.output == "bg_1 is running.\n(no new output)"

    killed = await call(env, "kill_command", id="bg_1")
    assert killed.output.startswith("bg_1 killed.")
    assert not running(job.pid)
    again = await call(env, "kill_command", id="bg_1")
    assert again.output.startswith("bg_1 had already ended (killed).")


async def test_output_comes_as_it_is_printed_and_the_exit_status_at_the_end(env: Env) -> None:
    started = await call(env, "run_command", command=TICKS, background=True)
    seen = [started.output]
    for _ in range(10):
        read = await call(env, "command_output", id="bg_1", wait_ms=2000)
        seen.append(read.output)
        if "exit code" in read.output:
            break
    text = "\n".join(seen)
    assert "tick 1" in text and "tick 2" in text and "tick 3" in text
    assert text.count("tick 3") == 1  # each line once: a read returns what is new
    assert seen[-1].startswith("bg_1 exit code 0.")


async def test_a_quick_command_has_ended_when_the_call_answers(env: Env) -> None:
    done = await call(env, "run_command", command="echo done; exit 3", background=True)
    assert (
        done.output == "Started in the background as bg_1; it already ended (exit code 3).\ndone\n"
    )


async def test_the_session_runs_a_bounded_number_at_once(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACP_FSM_MAX_BACKGROUND", "1")
    await call(env, "run_command", command=SERVER, background=True)
    refused = await call(env, "run_command", command=SERVER, background=True)
    assert refused.is_error
    assert "1 background command already running (bg_1)" in refused.output
    await env.background.stop_all()
    assert not running(local_job(env).pid)
    third = await call(env, "run_command", command="true", background=True)
    assert third.output.startswith("Started in the background as bg_2")


async def test_an_unknown_id_is_an_error_naming_the_known_ones(env: Env) -> None:
    await call(env, "run_command", command="true", background=True)
    missing = await call(env, "command_output", id="bg_9")
    assert missing.is_error and missing.output == (
        "No background command 'bg_9' in this session (known: bg_1)."
    )


async def test_a_cancel_ends_a_wait_at_once_and_leaves_the_command_running(env: Env) -> None:
    await call(env, "run_command", command=SERVER, background=True)
    waiting = asyncio.create_task(call(env, "command_output", id="bg_1", wait_ms=30_000))
    await asyncio.sleep(0.2)
    fired = time.monotonic()
    env.token.cancel()
    with pytest.raises(Cancelled):
        await waiting
    assert time.monotonic() - fired < INTERRUPTED_S  # not the 30 s wait or page
    assert local_job(env).ended is None
    await env.background.stop_all()


async def test_in_the_editor_terminal_the_call_embeds_it(editor: Editor, project: Path) -> None:
    editor.has_terminal = True
    env = Env(project, editor)
    started = await call(env, "run_command", command=TICKS, background=True)
    assert started.output.startswith("Started in the background as bg_1; it is running.")
    assert ("report", ({"type": "terminal", "terminalId": "term-1"},)) in editor.calls
    assert started.content == ()  # the terminal stays embedded
    seen = ""
    for _ in range(10):
        seen += (await call(env, "command_output", id="bg_1", wait_ms=2000)).output
        if "exit code" in seen:
            break
    assert "tick 3" in seen and "bg_1 exit code 0." in seen
    await env.background.stop_all()
    await wait_until(lambda: "term-1" in editor.released, "the terminal's release")
