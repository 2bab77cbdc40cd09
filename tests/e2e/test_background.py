"""Background commands through the real agent: a dev server started, polled, read and stopped;
the commands a session started gone after session/close, session/delete and a kill -9 of the
agent; the model told of them in later turns."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import urllib.request
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import EDITOR, Agent, Launcher, args
from tests.e2e.test_instructions import system_of
from tests.e2e.test_tools import result_of
from tests.harness import wait_until

LONG = f"echo $$ > pid; exec {sys.executable} -c 'import time; time.sleep(300)'"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def started(agent: Agent, server: ScriptedProvider, session: str, command: str) -> str:
    """The model starts `command` in the background; the call's result."""
    server.script(
        Reply(calls=(Call("b1", "run_command", args(command=command, background=True)),)),
        Reply(text="started"),
    )
    turn = await agent.prompt(session, "start it")
    assert turn.stop_reason == "end_turn"
    return result_of(server, "b1")[0]


async def test_a_dev_server_keeps_running_is_read_and_is_stopped(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    port = free_port()
    (project / "index.html").write_text("<h1>hello</h1>\n")
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    command = f"{sys.executable} -u -m http.server {port} --bind 127.0.0.1"

    text = await started(agent, server, session, command)

    assert text.startswith("Started in the background as bg_1; it is running.")
    page = await wait_until_serving(port)
    assert "hello" in page
    server.script(
        Reply(calls=(Call("o1", "command_output", args(id="bg_1", wait_ms=2000)),)),
        Reply(calls=(Call("k1", "kill_command", args(id="bg_1")),)),
        Reply(text="stopped"),
    )
    turn = await agent.prompt(session, "read its log, then stop it")
    assert turn.stop_reason == "end_turn"
    assert "GET / HTTP" in result_of(server, "o1")[0]  # the request above, in its log
    assert result_of(server, "k1")[0].startswith("bg_1 killed.")
    assert len(agent.editor.of_method("session/request_permission")) == 1  # only the start
    assert "bg_1" in system_of(server.requests[-1]) and "killed" in system_of(server.requests[-1])
    assert await asyncio.to_thread(page_of, port) is None  # nothing serves the port now


@pytest.mark.parametrize("kill_stops", [True, False], ids=["editor", "toad"])
async def test_a_kill_in_the_editors_terminal_is_confirmed_by_its_exit(
    launch: Launcher, server: ScriptedProvider, project: Path, kill_stops: bool
) -> None:
    """Toad answers terminal/kill and leaves the command running: kill_command says so, and
    keeps the job (and its terminal) until it exits or the session ends."""
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    agent.editor.hang_commands = ("serve",)
    agent.editor.kill_stops = kill_stops
    session = await agent.new_session(project)
    assert "it is running" in await started(agent, server, session, "npm run serve")
    server.script(Reply(calls=(Call("k1", "kill_command", args(id="bg_1")),)), Reply(text="ok"))

    assert (await agent.prompt(session, "stop it")).stop_reason == "end_turn"

    text, is_error = result_of(server, "k1")
    released = agent.editor.of_method("terminal/release")
    if kill_stops:
        assert text.startswith("bg_1 killed.") and not is_error
        assert [r["params"]["terminalId"] for r in released] == ["term-1"]
        return
    assert text.startswith("bg_1 was told to stop, but it has not exited: it is still running.")
    assert is_error and released == []
    assert agent.proc.logged("background_terminal_survived_kill")
    assert not agent.proc.logged("background_terminal_stop_failed")  # no request failed
    assert "`npm run serve`: running" in system_of(server.requests[-1])
    assert "result" in await agent.request("session/close", {"sessionId": session})
    assert [r["params"]["terminalId"] for r in agent.editor.of_method("terminal/release")] == [
        "term-1"
    ]


def page_of(port: int) -> str | None:
    """What the server on `port` answers for `/`, None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1) as answer:
            return str(answer.read().decode())
    except OSError:
        return None


async def wait_until_serving(port: int) -> str:
    await wait_until(lambda: page_of(port) is not None, "the dev server to answer")
    return page_of(port) or ""


@pytest.mark.parametrize("how", ["session/close", "session/delete", "kill -9"])
async def test_what_a_session_started_is_gone_with_it(
    launch: Launcher, server: ScriptedProvider, project: Path, how: str
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    text = await started(agent, server, session, LONG)
    assert "it is running" in text
    pid = int((project / "pid").read_text())
    assert alive(pid)

    if how == "kill -9":
        await launch.kill(agent)
    else:
        response = await agent.request(how, {"sessionId": session})
        assert "result" in response, response

    await wait_until(lambda: not alive(pid), f"the background command to stop after {how}")
