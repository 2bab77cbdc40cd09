"""Background commands through the real agent: a dev server started, polled, read and stopped;
the commands a session started gone after session/close, session/delete and a kill -9 of the
agent, even what left their process group; a job whose shell ended running while what it
started runs; the model told of them in later turns; an ended job's numbers never signalled."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from acp_fsm.system.kept import KEEPER_SCRIPT
from tests.e2e.support import (
    EDITOR,
    Agent,
    Launcher,
    args,
    system_of,
    tool_results,
    unique_sleep,
    unseen,
)
from tests.e2e.test_tools import result_of
from tests.harness import alive, live_processes, wait_until

LONG = f"echo $$ > pid; exec {sys.executable} -c 'import time; time.sleep(300)'"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def opened(
    launch: Launcher, project: Path, max_background: str | None = None
) -> tuple[Agent, str]:
    """An agent on the OpenAI API whose editor allows every command once, and its session."""
    agent = await launch.start("openai", ACP_FSM_MAX_BACKGROUND=max_background)
    agent.editor.permissions.extend(["allow_once"] * 5)
    return agent, await agent.new_session(project)


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
    agent, session = await opened(launch, project)
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


# -- what a job started, wherever it went -----------------------------------------------------

STOPS = ["kill_command", "session/close", "session/delete", "exit", "kill -9"]


async def stop(
    launch: Launcher, agent: Agent, server: ScriptedProvider, session: str, how: str
) -> None:
    """Stop the session's job `bg_1` the way `how` says."""
    if how == "kill_command":
        server.script(Reply(calls=(Call("k1", "kill_command", args(id="bg_1")),)), Reply(text="ok"))
        assert (await agent.prompt(session, "stop it")).stop_reason == "end_turn"
    elif how == "exit":
        await launch.close(agent)  # stdin closed: the agent exits 0
    elif how == "kill -9":
        await launch.kill(agent)
    else:
        response = await agent.request(how, {"sessionId": session})
        assert "result" in response, response


@pytest.mark.parametrize("how", STOPS)
async def test_what_left_the_group_is_stopped_too(
    launch: Launcher, server: ScriptedProvider, project: Path, how: str
) -> None:
    """A `setsid` child and a daemon's double fork leave the job's process group; they are
    stopped with the job all the same."""
    escaped, daemon = unique_sleep(), unique_sleep()
    command = (
        f"setsid {unseen(escaped)} & (setsid sh -c '{unseen(daemon)} &' &); echo started; wait"
    )
    agent, session = await opened(launch, project)
    text = await started(agent, server, session, command)
    assert "it is running" in text, text
    await wait_until(lambda: live_processes(escaped) and live_processes(daemon), "both sleeps")

    await stop(launch, agent, server, session, how)

    await wait_until(
        lambda: not live_processes(escaped) and not live_processes(daemon),
        f"what left the group to be stopped after {how}",
    )


async def test_a_job_whose_shell_ended_runs_while_what_it_started_does(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """`sleep &` outlives the shell: the job still runs, counts against the limit, and the
    model is told the shell ended and what still runs, never that the job ended."""
    child = unique_sleep()
    agent, session = await opened(launch, project, max_background="1")

    text = await started(agent, server, session, f"{unseen(child)} & echo started")

    assert text.startswith("Started in the background as bg_1; it is running (its shell ended, ")
    assert "exit code 0; 1 process it started is still running: " in text
    assert f"`{child}`" in text and "already ended" not in text
    server.script(
        Reply(calls=(Call("b2", "run_command", args(command="true", background=True)),)),
        Reply(calls=(Call("o1", "command_output", args(id="bg_1")),)),
        Reply(text="seen"),
    )
    assert (await agent.prompt(session, "another, then read the first")).stop_reason == "end_turn"
    refused, _ = tool_results(server.requests[-2])["b2"]
    assert "1 background command already running (bg_1)" in refused
    read = result_of(server, "o1")[0]
    assert read.startswith("bg_1 is running (its shell ended, exit code 0; 1 process"), read
    system = system_of(server.requests[-1])
    assert "running (its shell ended, exit code 0; processes it started still run)" in system
    assert "exit code 0\n" not in system and not system.rstrip().endswith("exit code 0")
    assert live_processes(child)

    server.script(Reply(calls=(Call("k1", "kill_command", args(id="bg_1")),)), Reply(text="ok"))
    assert (await agent.prompt(session, "stop it")).stop_reason == "end_turn"
    assert result_of(server, "k1")[0].startswith("bg_1 killed.")
    await wait_until(lambda: not live_processes(child), "the shell's child to be stopped")


def run_to_its_end(server: ScriptedProvider, command: str) -> None:
    """The model runs `command` (call `r1`, not in the background), then says "done"."""
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command=command)),)), Reply(text="done")
    )


async def test_a_command_run_to_its_end_stops_what_left_the_group(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    escaped = unique_sleep()
    agent, session = await opened(launch, project)
    run_to_its_end(server, f"setsid {unseen(escaped)} & :")
    assert (await agent.prompt(session, "run it")).stop_reason == "end_turn"
    assert result_of(server, "r1")[0].startswith(
        "Exit code: 0\n[Processes the command left running in the background were stopped.]"
    )
    await wait_until(lambda: not live_processes(escaped), "the escaped sleep to be stopped")


# -- a job that ended is never signalled again ------------------------------------------------

WATCHER_MARK = "groups = set()"  # a line of the kill -9 watcher's program, on its command line


def reuse_pid(pid: int, command: list[str]) -> subprocess.Popen[bytes] | None:
    """A new process, leading a process group of its own, whose pid (so group id) is `pid`;
    None when pids cannot be steered here (that takes root: /proc/sys/kernel/ns_last_pid)."""
    for _ in range(50):
        try:
            Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(command, start_new_session=True)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


def watchers_of(agent: Agent) -> list[int]:
    """The kill -9 watchers the agent started and that still run."""
    return children_of(agent, WATCHER_MARK)


def keepers_of(agent: Agent) -> list[int]:
    """The keepers of the agent's commands that still run."""
    return children_of(agent, str(KEEPER_SCRIPT))


def has_said_started(keeper: int) -> bool:
    """Whether `keeper` has said `started` to the agent: right after, it points its own
    standard streams at /dev/null (killed before that, the command's start is unknown)."""
    try:
        return os.readlink(f"/proc/{keeper}/fd/1") == os.devnull
    except OSError:
        return False


def children_of(agent: Agent, marker: str) -> list[int]:
    """The agent's child processes still running whose command line holds `marker`."""
    assert agent.proc.proc is not None
    return live_processes(marker, parent=agent.proc.proc.pid)


@pytest.mark.alone  # it steers the pids the system hands out, other workers' processes' too
@pytest.mark.parametrize("how", STOPS)
async def test_an_ended_job_is_never_signalled_again(
    launch: Launcher, server: ScriptedProvider, project: Path, how: str
) -> None:
    """The number of a job's process group is free once the job ended; an unrelated process
    group that gets it is left alone by every stop, the kill -9 watcher's included."""
    agent, session = await opened(launch, project)
    text = await started(agent, server, session, "echo $$ > pid")
    assert "it already ended (exit code 0)" in text
    group = int((project / "pid").read_text())  # the shell led the job's process group
    watchers = watchers_of(agent)
    stranger = reuse_pid(group, ["sleep", "300"])
    if stranger is None:
        pytest.skip("pids cannot be steered here (needs root and /proc/sys/kernel/ns_last_pid)")
    try:
        await stop(launch, agent, server, session, how)
        if how in ("exit", "kill -9"):  # the watcher acts when the agent is gone
            await wait_until(lambda: not any(map(alive, watchers)), "the watcher to finish")
        await asyncio.sleep(0.2)  # a signal sent is delivered by then
        assert stranger.poll() is None, f"the unrelated group {group} was killed after {how}"
    finally:
        stranger.kill()
        stranger.wait()


# -- a keeper killed from outside -------------------------------------------------------------


async def test_a_job_whose_keeper_is_killed_by_hand_is_not_said_to_be_killed(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The keeper killed with SIGKILL (by hand, `pkill -9 python`): the command loses it and
    runs on out of reach (docs/shutdown.md). The model is told so, not that the command was
    killed by signal 9, in the read and in the system prompt."""
    child = unique_sleep()
    agent, session = await opened(launch, project)
    assert "it is running" in await started(agent, server, session, f"{unseen(child)}; :")
    [keeper] = keepers_of(agent)
    try:
        os.kill(keeper, signal.SIGKILL)
        await wait_until(lambda: not alive(keeper), "the keeper to be gone")
        server.script(
            Reply(calls=(Call("o1", "command_output", args(id="bg_1")),)),
            Reply(calls=(Call("k1", "kill_command", args(id="bg_1")),)),
            Reply(text="seen"),
        )
        assert (await agent.prompt(session, "read it, stop it")).stop_reason == "end_turn"

        lost = "bg_1 lost its keeper (killed by signal 9) while it ran"
        assert result_of(server, "o1")[0].startswith(lost), result_of(server, "o1")
        assert "may still be running" in result_of(server, "o1")[0]
        assert result_of(server, "k1")[0].startswith(f"bg_1 had already ended ({lost[5:]}")
        assert "signal 9" not in system_of(server.requests[-1]).replace(lost[5:], "")
        assert live_processes(child)  # as said: out of reach
    finally:
        for pid in live_processes(child):
            os.kill(pid, signal.SIGKILL)


async def test_a_command_whose_keeper_is_killed_by_hand_has_no_exit_status(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A command run to its end: its keeper's SIGKILL is not the command's exit status."""
    child = unique_sleep()
    agent, session = await opened(launch, project)
    run_to_its_end(server, f"{unseen(child)}; :")
    pending = await agent.start_prompt(session, "run it")
    try:
        await wait_until(lambda: live_processes(child), "the command to run")
        [keeper] = keepers_of(agent)
        await wait_until(lambda: has_said_started(keeper), "the keeper to say it started it")
        os.kill(keeper, signal.SIGKILL)
        assert (await pending.result()).stop_reason == "end_turn"

        assert result_of(server, "r1")[0].startswith("Exit status unknown.")
    finally:
        for pid in live_processes(child):
            os.kill(pid, signal.SIGKILL)
