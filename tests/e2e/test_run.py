"""`acp-fsm run` through the real command against the scripted provider: a prompt from stdin
and from both, the answer on stdout and progress on stderr, `--json` line by line against
ACP's schema, every exit status, permission refusals with and without rules, Ctrl-C mid-stream
and mid-tool, continuing a session an editor made and loading one the run made, `--no-store`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acp_fsm import schemas
from acp_fsm.devkit.editor.link import AGENT_COMMAND
from acp_fsm.devkit.provider import Call, HttpError, Reply, ScriptedProvider
from acp_fsm.providers.types import StopReason
from tests.e2e.support import Launcher, args, history, tool_results, user_texts
from tests.e2e.test_sessions import restore
from tests.harness import ROOT, wait_until


@dataclass
class Ran:
    status: int
    stdout: str
    stderr: str

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines()]


async def start(
    launch: Launcher, project: Path, *argv: str, stdin: bytes | None = None, **env: str | None
) -> asyncio.subprocess.Process:
    environment = launch.env("anthropic", **env)
    environment.pop("ACP_FSM_DEBUG_METHODS", None)
    return await asyncio.create_subprocess_exec(
        *AGENT_COMMAND,  # as the `acp-fsm` script runs: the project's folder is not on sys.path
        "run",
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
        cwd=project,
    )


async def run(
    launch: Launcher, project: Path, *argv: str, stdin: bytes | None = None, **env: str | None
) -> Ran:
    proc = await start(launch, project, *argv, stdin=stdin, **env)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 30)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


async def test_a_prompt_from_stdin_is_answered_on_stdout_with_progress_on_stderr(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.script(Reply(text=("The answer ", "is 42.")))
    ran = await run(launch, project, stdin=b"what is it?\n")
    assert (ran.status, ran.stdout) == (0, "The answer is 42.\n")
    assert "— end_turn" in ran.stderr and "session sess_" in ran.stderr
    assert user_texts(server.requests[0])[-1].strip() == "what is it?"


async def test_piped_input_follows_the_prompt_and_json_lines_are_acp(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """`git diff | acp-fsm run "review this" --mode plan --json`: the diff follows the prompt;
    every line is JSON, each update a valid ACP session/update, the last the result."""
    server.script(Reply(text="Looks fine.", thinking="Reading the diff."))
    diff = b"diff --git a/x.py b/x.py\n-x = 1\n+x = 2\n"
    ran = await run(launch, project, "review this", "--mode", "plan", "--json", stdin=diff)
    assert ran.status == 0, ran.stderr
    lines = ran.lines()
    *updates, result = lines
    assert result["type"] == "result" and result["stopReason"] == "end_turn"
    assert result["usage"]["totalTokens"] > 0 and result["sessionId"].startswith("sess_")
    for line in updates:
        assert line["type"] == "update"
        body = {k: v for k, v in line.items() if k != "type"}
        assert schemas.validate("acp.SessionNotification", body) is None, line
    kinds = {line["update"]["sessionUpdate"] for line in updates}
    assert {"agent_message_chunk", "agent_thought_chunk", "current_mode_update"} & kinds
    sent = user_texts(server.requests[0])[-1]
    assert sent.startswith("review this\n\n") and "+x = 2" in sent
    assert ran.stderr == ""


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (Reply(text="no", stop=StopReason.REFUSAL), 3),
        (Reply(text="cut", stop=StopReason.MAX_TOKENS), 4),
        (HttpError(500, "the provider broke"), 1),
    ],
)
async def test_each_outcome_has_its_exit_status(
    launch: Launcher, server: ScriptedProvider, project: Path, reply: Any, status: int
) -> None:
    server.script(reply)
    ran = await run(launch, project, "go")
    assert ran.status == status, ran.stderr
    if status == 1:
        assert "acp-fsm run:" in ran.stderr and "500" in ran.stderr


async def test_the_turn_limit_and_bad_arguments_have_theirs(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.script(Reply(calls=(Call("r1", "run_command", args(command="echo hi")),)))
    limited = await run(
        launch, project, "go", "--mode", "full_access", ACP_FSM_MAX_TURN_REQUESTS="1"
    )
    assert limited.status == 5
    empty = project / "empty"  # a folder no session was made in
    empty.mkdir()
    for argv, said in (
        (("go", "--mode", "yolo"), "--mode 'yolo'"),
        (("go", "--allow", "Teleport(now)"), "no tool 'Teleport'"),
        (("go", "--session", "a", "--continue"), "cannot both"),
        (("--cwd", str(project / "nowhere"), "go"), "is not a folder"),
        ((), "no prompt"),
        (("go", "--session", "sess_missing"), "sess_missing"),
        (("--cwd", str(empty), "go", "--continue"), "no session to continue"),
    ):
        ran = await run(launch, project, *argv)
        assert ran.status == 2 and said in ran.stderr, (argv, ran.stderr)
    assert len(server.requests) == 1  # none of them reached the model


async def test_a_call_that_would_ask_is_refused_with_the_rule_that_allows_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Nobody to ask: refused at once (no hang), the model told which --allow would let it
    run; with that rule it runs; a --deny refuses it in Full access."""
    call = Call("r1", "run_command", args(command="npm test -- --ci"))
    server.script(Reply(calls=(call,)), Reply(text="could not run it"))
    refused = await run(launch, project, "test it")
    assert refused.status == 0
    result, is_error = tool_results(server.requests[-1])["r1"]
    assert is_error and "nobody can be asked" in result
    assert "--allow 'Bash(npm test:*)'" in result
    assert "✗ Run `npm test -- --ci`" in refused.stderr

    server.script(Reply(calls=(Call("r2", "run_command", args(command="echo ran")),)), Reply())
    allowed = await run(launch, project, "again", "--allow", "Bash(echo:*)")
    assert allowed.status == 0 and "ran" in tool_results(server.requests[-1])["r2"][0]

    server.script(Reply(calls=(Call("r3", "run_command", args(command="echo no")),)), Reply())
    denied = await run(launch, project, "again", "--mode", "full-access", "--deny", "Bash(echo:*)")
    assert denied.status == 0
    assert "`Bash(echo:*)` (in the command line" in tool_results(server.requests[-1])["r3"][0]


async def interrupt_when(proc: asyncio.subprocess.Process, ready: Any, what: str) -> Ran:
    await wait_until(ready, what, timeout=10)
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 15)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode())


async def test_ctrl_c_mid_stream_cancels_the_turn_and_it_is_stored(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.script(Reply(text=tuple(f"word{i} " for i in range(400)), delay_s=0.05))
    proc = await start(launch, project, "talk", "--json")
    ran = await interrupt_when(proc, lambda: server.requests, "the model call")
    assert ran.status == 130
    result = ran.lines()[-1]
    assert result["type"] == "result" and result["stopReason"] == "cancelled"

    agent = await launch.start("anthropic")
    _, replayed = await restore(agent, "session/load", result["sessionId"], project)
    assert "talk" in json.dumps(replayed)


async def test_ctrl_c_mid_tool_stops_the_command(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    pidfile = project / "pid"
    line = f"echo $$ > {pidfile}; sleep 30"
    server.script(Reply(calls=(Call("r1", "run_command", args(command=line)),)), Reply())
    proc = await start(launch, project, "wait", "--mode", "full_access")
    ran = await interrupt_when(proc, lambda: pidfile.exists() and pidfile.read_text(), "sleep")
    assert ran.status == 130 and "cancelled" in ran.stderr
    pid = int(pidfile.read_text())
    await wait_until(lambda: not Path(f"/proc/{pid}").exists(), "the command to end")


async def test_a_session_an_editor_made_is_continued_and_one_the_run_made_loads(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(Reply(text="first answer"), Reply(text="second answer"))
    await agent.prompt(session, "editor prompt")

    ran = await run(launch, project, "--continue", "run prompt")
    assert ran.status == 0 and ran.stdout == "second answer\n"
    sent = json.dumps(history(server.requests[-1]))
    assert "editor prompt" in sent and "first answer" in sent and "run prompt" in sent

    server.script(Reply(text="third answer"))
    own = await run(launch, project, "--json", "new one")
    made = own.lines()[-1]["sessionId"]
    _, replayed = await restore(agent, "session/load", made, project)
    assert "new one" in json.dumps(replayed) and "third answer" in json.dumps(replayed)

    server.script(Reply(text="gone"))
    gone = await run(launch, project, "--json", "--no-store", "leave nothing")
    result = gone.lines()[-1]
    assert result["stored"] is False
    listed = await agent.result("session/list", {"cwd": str(project)})
    assert result["sessionId"] not in {s["sessionId"] for s in listed["sessions"]}


def test_the_command_is_listed_and_explains_itself() -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shown = subprocess.run(
        [sys.executable, "-m", "acp_fsm", "run", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert "exit status: 0 the turn ended" in shown and "--allow RULE" in shown


async def test_mcp_servers_come_from_a_config_file_in_the_shape_editors_send(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    from tests.e2e.test_mcp import stdio_server

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": [stdio_server()]}))
    call = Call("m1", "mcp__tools__add", args(a=20, b=22))
    server.script(Reply(calls=(call,)), Reply(text="42"))
    ran = await run(launch, project, "add", "--mcp-config", str(config), "--mode", "full_access")
    assert ran.status == 0, ran.stderr
    assert "42" in tool_results(server.requests[-1])["m1"][0]
    assert "mcp__tools__add" in {t["name"] for t in server.requests[0].body["tools"]}

    config.write_text("{not json")
    bad = await run(launch, project, "add", "--mcp-config", str(config))
    assert bad.status == 2 and "--mcp-config" in bad.stderr


async def test_model_picks_the_model_and_a_terminal_gets_a_spinner(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """`--model` reaches the provider; where stderr is a terminal, the progress is drawn with
    a spinner (redrawn in place, cleared before each line)."""
    import pty

    server.script(Reply(text="slow", delay_s=0.5))
    leader, follower = pty.openpty()
    environment = launch.env("anthropic", ACP_FSM_MODELS="claude-a,claude-other-1")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acp_fsm",
        "run",
        "hi",
        "--model",
        "claude-other-1",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=follower,
        env=environment,
        cwd=project,
    )
    os.close(follower)
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    assert proc.returncode == 0 and out == b"slow\n"
    assert server.requests[0].body["model"] == "claude-other-1"
    assert "\r\x1b[K⠋ " in drawn.decode() and "— end_turn" in drawn.decode()


async def test_a_second_ctrl_c_exits_at_once(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.script(Reply(text=tuple(f"word{i} " for i in range(400)), delay_s=0.05))
    proc = await start(launch, project, "talk", "--json")
    await wait_until(lambda: server.requests, "the model call", timeout=10)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    out, _ = await asyncio.wait_for(proc.communicate(), 5)
    assert proc.returncode == 130
    assert json.loads(out.decode().splitlines()[-1])["type"] in ("error", "result")


async def test_the_projects_own_modules_never_run_and_odd_input_is_read(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A checkout under review may hold an `acp_fsm` package or a `json.py`: the agent is not
    imported from it. Stdin that is not UTF-8 is read with its bad bytes replaced; a run with
    --no-store that fails leaves no session either."""
    planted = project / "acp_fsm"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(f"open({str(project / 'pwned')!r}, 'w')\n")
    (project / "json.py").write_text("raise SystemExit('the project json.py was imported')\n")
    server.script(Reply(text="fine"))
    ran = await run(launch, project, "what is this?", stdin=b"caf\xe9 \x00 cr\xe8me\n")
    assert (ran.status, ran.stdout) == (0, "fine\n"), ran.stderr
    assert not (project / "pwned").exists()
    assert "caf\ufffd \ufffd cr\ufffdme" in user_texts(server.requests[-1])[-1]

    server.script(HttpError(500, "down"))
    failed = await run(launch, project, "--json", "--no-store", "again")
    assert failed.status == 1
    agent = await launch.start("anthropic")
    listed = await agent.result("session/list", {"cwd": str(project)})
    assert len(listed["sessions"]) == 1  # the first run's only


async def test_an_agent_that_cannot_store_a_session_is_an_error_not_bad_arguments(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the store's folder should be\n")
    ran = await run(launch, project, "go", ACP_FSM_HOME=str(blocked))
    assert ran.status == 1 and "acp-fsm run:" in ran.stderr
    assert server.requests == []
