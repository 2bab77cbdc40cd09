"""The real `acp-fsm` subprocess over pipes, for end-to-end tests, and helpers to wait on it.

`AgentProcess` is the product's scripted-editor link (`acp_fsm.devkit.editor.AgentLink`) with the
tests' defaults. Lines the agent writes that are not JSON-RPC are kept in `bad_lines` (the
fixture fails the test on any); every message is kept in `records` with the method it belongs
to: `tests.conftest.assert_clean` checks them against the official ACP schema when the agent is
closed. The agent run is the checkout under test (`python -m acp_fsm` with the checkout first on
the path), whatever the venv has installed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp_fsm.devkit.editor import AgentLink, Editor
from acp_fsm.devkit.editor.v1_view import V1View
from acp_fsm.devkit.provider import Reply, ScriptedProvider

READ_LIMIT = 256 * 1024 * 1024
TIMEOUT = 10.0
# The agent's title call (`acp_fsm.session.naming`) is made with this model in the tests, which
# the scripted provider answers on a lane of its own (`title_lane`): it takes none of the
# replies a test scripts for its turns.
TITLE_MODEL = "test-title-model"
MADE_TITLE = "Scripted session title"

ROOT = Path(__file__).resolve().parents[1]  # the checkout under test
# The ACP version the agents under test are spoken to in: `ACP_FSM_TEST_PROTOCOL=2` in the test
# run's environment runs the scenarios on ACP v2 (the agent gets `ACP_FSM_PROTOCOL_V2=1`), the
# client seeing it in v1's words (`acp_fsm.devkit.editor.v1_view`), so each scenario asserts
# the same behaviour; `records` keep what was on the wire, checked against v2's schemas.
PROTOCOL = int(os.environ.get("ACP_FSM_TEST_PROTOCOL") or 1)


def agent_command() -> list[str]:
    """The agent of this checkout (`agent_env` puts it first on the path)."""
    return [sys.executable, "-m", "acp_fsm"]


def agent_env(**overrides: str | None) -> dict[str, str]:
    env = dict(os.environ)
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(
        PYTHONPATH=path,
        ACP_FSM_STRICT_SCHEMAS="1",
        ACP_FSM_DEBUG_METHODS="1",
        ACP_FSM_LOG_FORMAT="json",
        ACP_FSM_LOG_LEVEL="debug",
    )
    if PROTOCOL == 2:
        env["ACP_FSM_PROTOCOL_V2"] = "1"
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def title_lane(server: ScriptedProvider) -> dict[str, str]:
    """Give `server` the lane of the title call (unless the test gave it its own answer); the
    agent's environment that makes the call there."""
    server.lanes.setdefault(TITLE_MODEL, Reply(text=MADE_TITLE))
    return {"ACP_FSM_TITLE_MODEL": TITLE_MODEL}


class AgentProcess(AgentLink):
    """One running agent and the client side of its pipes (`acp_fsm.devkit.editor.AgentLink`):
    with no editor attached, the agent's requests wait in `requests` for the test to answer."""

    @classmethod
    async def start(
        cls,
        env: dict[str, str] | None = None,
        *args: str,
        editor: Editor | None = None,
        command: list[str] | None = None,
    ) -> AgentProcess:
        return await cls.spawn(
            env or agent_env(),
            *args,
            command=command or agent_command(),
            limit=READ_LIMIT,
            editor=editor,
            view=V1View() if PROTOCOL == 2 else None,
        )

    async def initialize(self, **capabilities: Any) -> dict[str, Any]:
        response = await self.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": capabilities
                or {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
                "clientInfo": {"name": "acp-fsm-tests", "version": "0"},
            },
        )
        assert "result" in response, response
        return dict(response["result"])

    async def next_request(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        return await asyncio.wait_for(self.requests.get(), timeout)

    async def next_other(self, timeout: float = TIMEOUT) -> Any:
        return await asyncio.wait_for(self.others.get(), timeout)

    async def next_notification(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        return await asyncio.wait_for(self.notifications.get(), timeout)


async def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    """Poll `predicate` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)
    return value


def alive(pid: int) -> bool:
    """True while `pid` is a running process (a zombie counts as gone: it has exited)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def parent_of(pid: int) -> int | None:
    """The parent of process `pid`; None once it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def live_processes(marker: str, parent: int | None = None) -> list[int]:
    """Pids of running (not zombie) processes, this one aside, whose command line contains
    `marker`, and that are children of `parent` when given: a marker that is not unique
    (a worker's module) also finds the processes of tests that other pytest-xdist workers
    run meanwhile (tests/workers.py)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if os.fsencode(marker) not in cmdline or not alive(int(entry)):
            continue
        if parent is None or parent_of(int(entry)) == parent:
            pids.append(int(entry))
    return pids


def reading_a_pipe(pid: int) -> bool:
    """Whether process `pid` sleeps in a read of a pipe (Linux: /proc/<pid>/wchan)."""
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii") as handle:
            return "pipe_read" in handle.read()
    except OSError:
        return False


class Remote:
    """One `acp-fsm serve --listen` process: where it serves, its token, its log."""

    def __init__(self, proc: asyncio.subprocess.Process, url: str, token: str, log: Path) -> None:
        self.proc, self.url, self.token, self.log = proc, url, token, log

    async def stop(self) -> int:
        """SIGTERM, and its exit status (killed after 10 s)."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            return await self.proc.wait()


@asynccontextmanager
async def serving(env: dict[str, str], folder: Path, *extra: str) -> AsyncIterator[Remote]:
    """`acp-fsm serve --listen` on a free loopback port with a token file in `folder`, its
    stderr in `folder`/serve.log (a file: a pipe nobody reads would stall its logging);
    stopped at the end."""
    token_file, log = folder / "token", folder / "serve.log"
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "acp_fsm", "serve", "--listen", "127.0.0.1:0",
            "--token-file", str(token_file), *extra,
            env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=sink,
        )  # fmt: skip

    def announced() -> str | None:
        lines = log.read_text(errors="replace").splitlines()
        found = next((line for line in lines if "serving ACP at " in line), None)
        assert found is not None or proc.returncode is None, log.read_text()[-2000:]
        return found

    remote = None
    try:
        line = await wait_until(announced, "acp-fsm serve to say where it serves", 10.0)
        url = line.split("serving ACP at ")[1].split(" ")[0]
        remote = Remote(proc, url, token_file.read_text().strip(), log)
        yield remote
    finally:
        await (remote or Remote(proc, "", "", log)).stop()
