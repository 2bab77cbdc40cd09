"""A client for the real `acp-fsm` subprocess over pipes, for end-to-end tests.

Every line the agent writes is parsed and checked to be a JSON-RPC 2.0 message; lines that are
not are kept in `bad_lines` (the fixture fails the test on any). Every message is also kept in
`records` with the method it belongs to: `tests.conftest.assert_clean` checks them against the
official ACP schema when the agent is closed. The agent run is the checkout under test
(`python -m acp_fsm` with the checkout first on the path), whatever the venv has installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

READ_LIMIT = 256 * 1024 * 1024
TIMEOUT = 10.0

ROOT = Path(__file__).resolve().parents[1]  # the checkout under test


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
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


class AgentProcess:
    """One running agent and the client side of its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.messages: list[dict[str, Any]] = []
        # (kind, method, payload, whole message) of every message the agent wrote: kind is
        # "result" or "error" (the answer to our request of `method`), "request" or
        # "notification" (sent by the agent; payload = params)
        self.records: list[tuple[str, str | None, Any, dict[str, Any]]] = []
        self.raw_lines: list[bytes] = []
        self.bad_lines: list[bytes] = []
        self.stderr = bytearray()
        self.requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.others: asyncio.Queue[Any] = asyncio.Queue()
        self._responses: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        # `kill -9` the agent the instant a message for which this returns True is read
        self.kill_on: Callable[[dict[str, Any]], bool] | None = None
        self._sent_methods: dict[Any, str] = {}
        self._ids = itertools.count(1)
        self._readers = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]

    @classmethod
    async def start(cls, env: dict[str, str] | None = None, *args: str) -> AgentProcess:
        proc = await asyncio.create_subprocess_exec(
            *agent_command(),
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env or agent_env(),
            limit=READ_LIMIT,
        )
        return cls(proc)

    # ---------------------------------------------------------------- reading

    async def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.raw_lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                self.bad_lines.append(line)
                continue
            items = message if isinstance(message, list) else [message]
            if not items or not all(_is_jsonrpc(item) for item in items):
                self.bad_lines.append(line)
            if isinstance(message, list):
                self.others.put_nowait(message)
                for item in message:
                    self._record_response(item)
                continue
            self.messages.append(message)
            if self.kill_on is not None and self.kill_on(message):
                self.proc.kill()
                self.kill_on = None
            self._route(message)

    def _route(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self.records.append(("request", message["method"], message.get("params"), message))
            self.requests.put_nowait(message)
        elif "method" in message:
            self.records.append(("notification", message["method"], message.get("params"), message))
            self.notifications.put_nowait(message)
        else:
            self._record_response(message)
            future = self._responses.get(message.get("id"))
            if future is not None and not future.done():
                future.set_result(message)
            else:
                self.others.put_nowait(message)

    def _record_response(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        method = self._sent_methods.get(message.get("id"))
        if "result" in message:
            self.records.append(("result", method, message["result"], message))
        elif "error" in message:
            self.records.append(("error", method, message["error"], message))

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    def log_events(self) -> list[dict[str, Any]]:
        """The agent's JSON log lines so far."""
        events = []
        for line in self.stderr.decode("utf-8", "replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and "event" in event:
                    events.append(event)
        return events

    # ---------------------------------------------------------------- writing

    async def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    def expect(self, msg_id: Any, method: str | None = None) -> asyncio.Future[dict[str, Any]]:
        future = self._responses.get(msg_id)
        if future is None:
            future = self._responses[msg_id] = asyncio.get_running_loop().create_future()
        if method is not None:
            self._sent_methods[msg_id] = method
        return future

    async def request(
        self, method: str, params: Any = None, *, msg_id: Any = None, timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        """Send a request and return the whole response message."""
        if msg_id is None:
            msg_id = next(self._ids)
        future = self.expect(msg_id, method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await asyncio.wait_for(future, timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

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
        return response["result"]

    async def respond(self, request: dict[str, Any], result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def next_request(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        return await asyncio.wait_for(self.requests.get(), timeout)

    async def next_other(self, timeout: float = TIMEOUT) -> Any:
        return await asyncio.wait_for(self.others.get(), timeout)

    async def next_notification(self, timeout: float = TIMEOUT) -> dict[str, Any]:
        return await asyncio.wait_for(self.notifications.get(), timeout)

    # -------------------------------------------------------------- lifecycle

    async def close(self, timeout: float = TIMEOUT) -> int:
        """Close stdin and wait for the exit code."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.proc.stdin.wait_closed()
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        await asyncio.wait_for(asyncio.gather(*self._readers), timeout)
        return code

    def logged(self, event: str, **fields: Any) -> bool:
        """Whether the agent has logged `event` (with these fields) so far."""
        return any(e["event"] == event and all(e.get(k) == v for k, v in fields.items())
                   for e in self.log_events())

    async def ended(self, timeout: float = TIMEOUT) -> None:
        """Wait until the agent's stdout and stderr are read to their end (after its exit)."""
        await asyncio.wait_for(asyncio.gather(*self._readers), timeout)

    def close_pipe(self, fd: int) -> None:
        """Close our end of the agent's stdout (1) or stderr (2), as an editor that quits or
        crashes does: the agent's writes to it fail from then on (EPIPE)."""
        transport = self.proc._transport.get_pipe_transport(fd)  # type: ignore[attr-defined]
        assert transport is not None
        transport.close()

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)


def _is_jsonrpc(item: Any) -> bool:
    return isinstance(item, dict) and item.get("jsonrpc") == "2.0"


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


def live_processes(marker: str) -> list[int]:
    """Pids of running (not zombie) processes, this one aside, whose command line contains
    `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if os.fsencode(marker) in cmdline and alive(int(entry)):
            pids.append(int(entry))
    return pids


def reading_a_pipe(pid: int) -> bool:
    """Whether process `pid` sleeps in a read of a pipe (Linux: /proc/<pid>/wchan)."""
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii") as handle:
            return "pipe_read" in handle.read()
    except OSError:
        return False
