"""The client's side of a headless run: one `acp-fsm` child over its pipes, spoken to in
newline-delimited JSON-RPC. Lean on purpose (a run may stream for hours): nothing is kept but
what is awaited, and the last of the agent's log (`stderr_tail`) for an error's sake.

The child leads its own process group, so the terminal's Ctrl-C reaches only this process,
which turns it into `session/cancel` (`acp_fsm.devkit.run`); should this process die, the
child's stdin closes and it exits."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.editor.link import AGENT_COMMAND

READ_LIMIT: Final = 64 * 1024 * 1024  # the agent's own longest line
TAIL_LINES: Final = 40  # of the agent's log, kept for an error
EXIT_WAIT_S: Final = 5.0  # for the agent to exit once its input ends

Handler = Callable[[str, Any], Awaitable[Any]]


class AgentError(Exception):
    """A JSON-RPC error the agent answered with."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(str(error.get("message", "error")))
        self.code = int(error.get("code", -32603))
        self.data = error.get("data")


class AgentGone(Exception):
    """The agent's output ended before it answered."""


class Peer:
    """The agent process, its pending requests, and what handles what it sends."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        on_notification: Callable[[str, Any], None],
        on_request: Handler,
        *,
        echo_log: bool = False,
    ) -> None:
        self.proc = proc
        self._on_notification = on_notification
        self._on_request = on_request
        self._echo_log = echo_log
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._answering: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self.log: deque[str] = deque(maxlen=TAIL_LINES)
        self._tasks = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]

    @classmethod
    async def spawn(
        cls,
        env: Mapping[str, str],
        cwd: Path,
        on_notification: Callable[[str, Any], None],
        on_request: Handler,
        *,
        echo_log: bool = False,
    ) -> Peer:
        proc = await asyncio.create_subprocess_exec(
            *AGENT_COMMAND,  # `python -P`: no module of the project's folder is imported
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            limit=READ_LIMIT,
            start_new_session=True,  # the terminal's Ctrl-C is ours to turn into a cancel
        )
        return cls(proc, on_notification, on_request, echo_log=echo_log)

    async def request(self, method: str, params: Any) -> Any:
        """The agent's result for `method`; `AgentError` for its error, `AgentGone` when it
        exited first."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        await self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await future
        finally:
            self._pending.pop(msg_id, None)

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        if stdin.is_closing():
            raise AgentGone("the agent's input is closed")
        stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            await stdin.drain()

    async def _read_stdout(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    self.log.append(f"(not JSON-RPC on stdout) {line[:200]!r}")
                    continue
                if isinstance(message, dict):
                    await self._route(message)
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(AgentGone(self.stderr_tail() or "the agent exited"))

    async def _route(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            answer = self._answer(message["id"], method, message.get("params"))
            self._answering.add(task := asyncio.create_task(answer))
            task.add_done_callback(self._answering.discard)
        elif isinstance(method, str):
            self._on_notification(method, message.get("params"))
        elif message.get("id") is None and "error" in message:  # a request it could not read
            for waiting in self._pending.values():
                if not waiting.done():
                    waiting.set_exception(AgentError(message["error"] or {}))
        elif (future := self._pending.get(message.get("id", -1))) is not None and not future.done():
            if "error" in message:
                future.set_exception(AgentError(message["error"] or {}))
            else:
                future.set_result(message.get("result"))

    async def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
        try:
            reply["result"] = await self._on_request(method, params)
        except AgentError as exc:
            reply["error"] = {"code": exc.code, "message": str(exc)}
        with contextlib.suppress(AgentGone):
            await self._send(reply)

    async def _read_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        while line := await stderr.readline():
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.log.append(text)
            if self._echo_log:
                print(text, file=sys.stderr, flush=True)

    def stderr_tail(self) -> str:
        return "\n".join(self.log)

    async def close(self) -> int:
        """End the agent's input and wait (bounded) for it to exit; its exit status."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), EXIT_WAIT_S)
        except TimeoutError:
            self.kill()
            await self.proc.wait()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return self.proc.returncode or 0

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
