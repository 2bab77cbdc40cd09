"""Process-level contract: stdout carries only JSON-RPC, logs go to stderr with context and no
secrets, exit on stdin EOF (promptly, even with work running) and when stdout is closed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.harness import AgentProcess, agent_command, agent_env, reading_a_pipe, wait_until
from tests.timing import INTERRUPTED_S

INIT_LINE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'


async def test_stray_prints_and_child_output_never_reach_stdout(ready: AgentProcess) -> None:
    response = await ready.request("_acp_fsm/stray_output", {})
    assert response["result"] == {"childExitCode": 0}
    assert "result" in await ready.request("_acp_fsm/sleep", {"ms": 0})
    stderr = ready.stderr.decode()
    for text in (
        "stray print() from a handler",
        "stray sys.stdout.write",
        "stray write to fd 1",
        "stray output of a child process",
    ):
        assert text in stderr
    assert all(b"stray" not in line for line in ready.raw_lines)


async def test_stdin_eof_exits_zero_promptly_with_work_running(ready: AgentProcess) -> None:
    slow = ready.expect("slow", "_acp_fsm/sleep")
    await ready.send(
        {"jsonrpc": "2.0", "id": "slow", "method": "_acp_fsm/sleep", "params": {"ms": 600000}}
    )
    await wait_until(
        lambda: any(
            e["event"] == "received" and e["message"].get("id") == "slow"
            for e in ready.log_events()
        ),
        "the request to run",
    )
    started = time.monotonic()
    assert await ready.close(wait_s=5) == 0
    assert time.monotonic() - started < 3.0
    assert not slow.done()  # cancelled at shutdown, never answered as a success


async def test_exits_cleanly_when_stdout_is_closed(agent: AgentProcess) -> None:
    await agent.initialize()
    assert agent.proc is not None and agent.proc.stdout is not None
    agent.proc.stdout.feed_eof()
    agent.close_pipe(1)  # the client stops reading our output
    with contextlib.suppress(ConnectionResetError, BrokenPipeError):
        for i in range(5):  # its writes now fail with EPIPE: the agent must notice and exit
            await agent.send(
                {"jsonrpc": "2.0", "id": i, "method": "_acp_fsm/sleep", "params": {"ms": 0}}
            )
    code = await asyncio.wait_for(agent.proc.wait(), 5)
    assert code == 0


async def test_logs_are_json_on_stderr_with_request_context(ready: AgentProcess) -> None:
    await ready.request(
        "_acp_fsm/call_client",
        {
            "method": "fs/read_text_file",
            "params": {"sessionId": "sess-9", "path": "/a"},
            "timeoutMs": 50,
        },
        msg_id="ctx",
    )
    await ready.request("_acp_fsm/sleep", {"ms": 0})
    events = ready.log_events()
    abandoned = [e for e in events if e["event"] == "outbound_abandoned"]
    assert abandoned, events
    assert abandoned[0]["method"] == "fs/read_text_file"  # the outbound call's own method
    assert abandoned[0]["request_id"] == "ctx"
    assert all("timestamp" in e and "level" in e for e in events)


async def test_session_id_is_bound_in_request_logs(ready: AgentProcess) -> None:
    await ready.request(
        "_acp_fsm/call_client",
        {
            "method": "fs/read_text_file",
            "params": {"sessionId": "s-42", "path": "/a"},
            "timeoutMs": 50,
            "_meta": None,
        },
    )
    events = [e for e in ready.log_events() if e["event"] == "outbound_abandoned"]
    assert events and events[0].get("request_id") is not None


async def test_secrets_never_appear_in_logs() -> None:
    secret = "sk-test-0123456789abcdef"
    agent = await AgentProcess.start(agent_env(OPENAI_API_KEY=secret, ANTHROPIC_API_KEY=None))
    try:
        await agent.initialize()
        # Make the agent log a message that carries the secret in a value and under a key.
        await agent.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "no/such",
                "params": {"api_key": secret, "note": f"Bearer {secret}"},
            }
        )
        await agent.next_other()
        await agent.send_raw(f'{{"broken json {secret}\n'.encode())
        await agent.next_other()
        assert await agent.close() == 0
        log = agent.stderr.decode()
        assert secret not in log
        assert "[redacted]" in log
    finally:
        await agent.kill()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*agent_command(), *args], capture_output=True, text=True, timeout=30, env=agent_env()
    )


def test_help_and_version() -> None:
    from acp_fsm import __version__

    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"acp-fsm {__version__}"
    usage = run_cli("--help")
    assert usage.returncode == 0
    for needle in ("ACP_CLIENT_RPC_TIMEOUT_MS", "ACP_FSM_LOG_LEVEL", "serve", "stdin"):
        assert needle in usage.stdout
    bad = run_cli("--no-such-flag")
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    """Input redirected from a file and output to a file (no pipes): served, then EOF exit."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(
        INIT_LINE + b'{"jsonrpc":"2.0","id":1,"method":"_acp_fsm/sleep",'
        b'"params":{"ms":1}}\n{"jsonrpc":"2.0","id":2,"method":"nope"}\n'
    )
    sink = tmp_path / "out.jsonl"
    with source.open("rb") as stdin, sink.open("wb") as stdout:
        done = subprocess.run(
            agent_command(),
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=agent_env(),
            timeout=30,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    replies = [json.loads(line) for line in sink.read_bytes().splitlines()]
    assert sorted(r["id"] for r in replies) == [0, 1, 2]  # responses may go out in any order
    assert next(r for r in replies if r["id"] == 2)["error"]["code"] == -32601


def test_console_log_format_and_level(tmp_path: Path) -> None:
    env = agent_env(ACP_FSM_LOG_FORMAT="console", ACP_FSM_LOG_LEVEL="warning")
    done = subprocess.run(
        agent_command(), input=INIT_LINE + b"[]\n", capture_output=True, env=env, timeout=30
    )
    assert done.returncode == 0
    err = done.stderr.decode()
    assert "invalid_message" in err and not err.lstrip().startswith("{")
    assert "connection_closing" not in err  # info events are below the level
    assert len(done.stdout.splitlines()) == 2


def test_signal_during_startup_exits_zero() -> None:
    proc = subprocess.Popen(
        agent_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=agent_env(),
    )
    deadline = time.monotonic() + INTERRUPTED_S
    while not reading_a_pipe(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.005)  # until it waits for its first line
    proc.terminate()
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0 and out == b"" and b"Traceback" not in err


def test_exit_on_immediate_eof() -> None:
    done = subprocess.run(
        agent_command(), input=b"", capture_output=True, env=agent_env(), timeout=30
    )
    assert done.returncode == 0 and done.stdout == b""


def test_python_dash_m_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_fsm"],
        input=INIT_LINE,
        capture_output=True,
        env=agent_env(),
        timeout=30,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"]["protocolVersion"] == 1


def test_a_project_with_packages_named_like_our_layers_is_no_trouble(tmp_path: Path) -> None:
    """`python -m acp_fsm` puts the working folder first on the path: a project of the user's
    with its own `schemas`, `protocol`, `fsm` or `providers` package must not shadow ours."""
    for name in ("schemas", "protocol", "fsm", "providers"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the wrong package')\n")
    new = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "session/new",
        "params": {"cwd": str(tmp_path), "mcpServers": []},
    }
    bad = b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":1}}\n'
    # the second line is not the first: the full path (and its validators) answers it
    done = subprocess.run(
        [sys.executable, "-m", "acp_fsm"],
        input=INIT_LINE + json.dumps(new).encode() + b"\n" + bad,
        capture_output=True,
        timeout=30,
        cwd=tmp_path,
        env=agent_env(OPENAI_API_KEY="sk-layers-test-key"),
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    answers = sorted(
        (m for m in lines if "id" in m), key=lambda a: a["id"]
    )  # requests run concurrently: any order
    assert {m["method"] for m in lines if "id" not in m} == {"session/update"}  # its setup
    assert [a["id"] for a in answers] == [0, 1, 2]
    assert answers[1]["result"]["sessionId"]
    assert answers[2]["error"]["code"] == -32602 and "cwd" in answers[2]["error"]["message"]


async def test_sigterm_is_an_orderly_exit(ready: AgentProcess) -> None:
    await ready.request("_acp_fsm/sleep", {"ms": 0})  # the event loop is running
    assert ready.proc is not None
    ready.proc.terminate()
    code = await asyncio.wait_for(ready.proc.wait(), 5)
    assert code == 0
    await ready.ended()
    assert any(
        e["event"] == "connection_closing" and "SIGTERM" in e["reason"] for e in ready.log_events()
    )


async def test_idle_agent_keeps_serving(ready: AgentProcess) -> None:
    await asyncio.sleep(2.5)  # editors leave agents idle for hours; nothing may time out
    assert ready.proc is not None and ready.proc.returncode is None
    assert "result" in await ready.request("_acp_fsm/sleep", {"ms": 0})


def test_a_person_at_a_terminal_is_told_what_this_is_and_one_ctrl_d_ends_it() -> None:
    """Bare `acp-fsm` in a terminal: one line to stderr saying what it is and how to try it,
    and the first Ctrl+D (EOF on a terminal is not sticky) ends it."""
    import pty

    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            agent_command(),
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=agent_env(ACP_FSM_LOG_LEVEL=None),
        )
        os.close(terminal)
        assert proc.stderr is not None
        hint = proc.stderr.readline()  # written before it waits for its first line
        os.write(controller, b"\x04")  # Ctrl+D at the start of a line
        out, err = proc.communicate(timeout=INTERRUPTED_S)
        err = hint + err
    finally:
        os.close(controller)
    assert proc.returncode == 0
    assert out == b""
    [said] = err.decode().splitlines()  # one line, and no log lines after it
    assert "Agent Client Protocol" in said and "acp-fsm demo" in said and "--help" in said


def test_stderr_closed_at_start_is_no_reason_to_fail() -> None:
    done = subprocess.run(
        agent_command(),
        input=INIT_LINE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=agent_env(),
        timeout=30,
        preexec_fn=lambda: os.close(2),
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["result"]["protocolVersion"] == 1


def test_no_terminal_hint_for_an_editor() -> None:
    done = subprocess.run(
        agent_command(), input=INIT_LINE, capture_output=True, env=agent_env(), timeout=30
    )
    assert done.returncode == 0
    assert b"acp-fsm demo" not in done.stderr
