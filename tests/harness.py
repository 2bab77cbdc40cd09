"""A client for the real `acp-fsm` subprocess over pipes, for end-to-end tests.

Every line the agent writes is parsed and checked to be a JSON-RPC 2.0 message; lines that are
not are kept in `bad_lines` (the fixture fails the test on any). Every message is also appended
to `RECORDED` with the method it belongs to, for the conformance suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

READ_LIMIT = 256 * 1024 * 1024
TIMEOUT = 10.0

# Every message the agent wrote during the run, for the conformance suite:
# (kind, method, payload, whole message); kind is "result" or "error" (a response to our request
# of `method`), "request" (agent->client, payload = params) or "notification" (payload = params).
RECORDED: list[tuple[str, str | None, Any, dict[str, Any]]] = []


def agent_command() -> list[str]:
    script = Path(sys.executable).with_name("acp-fsm")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "acp_fsm"]


def agent_env(**overrides: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
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
            RECORDED.append(("request", message["method"], message.get("params"), message))
            self.requests.put_nowait(message)
        elif "method" in message:
            RECORDED.append(("notification", message["method"], message.get("params"), message))
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
            RECORDED.append(("result", method, message["result"], message))
        elif "error" in message:
            RECORDED.append(("error", method, message["error"], message))

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
