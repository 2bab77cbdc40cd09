"""The editor's side of an agent's pipes: one `acp-fsm` process, spawned and driven.

`AgentLink` writes requests and notifications, routes each answer to the future waiting for its
id, and keeps everything in order: `messages` (each message the agent wrote, batches aside),
`records` (the same as `Record`s, with the method each answer belongs to), `sent` (what was
written to it), `raw_lines` and `bad_lines` (stdout lines that are not JSON-RPC), and `stderr`,
the agent's JSON log lines (`log_events`). The agent's requests go to an answering `Editor`
(`acp_fsm.devkit.editor.answers`) when one is attached, else to the `requests` queue for the
caller to answer. The link does not validate what it reads: `acp_fsm.devkit.schema_check`
judges the records.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Self

from acp_fsm.devkit.editor.answers import Editor, Message, id_key
from acp_fsm.devkit.editor.v1_view import V1View
from acp_fsm.protocol.errors import RemoteError
from acp_fsm.system.kept import Kept, spawn_kept

AGENT_COMMAND: Final = (sys.executable, "-P", "-m", "acp_fsm")  # -P: not the cwd's modules
READ_LIMIT: Final = 64 * 1024 * 1024  # longest line read from the agent (its own limit)
TIMEOUT_S: Final = 10.0  # any single wait for the agent
KILL_WAIT_S: Final = 2.0  # after kill -9, for the pipes to close
# The member that carries the payload of a message, by its kind.
PAYLOAD: Final = {
    "request": "params",
    "notification": "params",
    "result": "result",
    "error": "error",
}


@dataclass(frozen=True, slots=True)
class Record:
    """One message the agent wrote. `kind` is "request" or "notification" (sent by the agent;
    `method` is its own) or "result" or "error" (the answer to the client's request of `method`,
    None when the request could not be read)."""

    kind: str
    method: str | None
    message: Message

    @property
    def payload(self) -> Any:
        return self.message.get(PAYLOAD[self.kind])

    @property
    def direction(self) -> str:
        """The method's direction: who called it."""
        return "agent->client" if self.kind in ("request", "notification") else "client->agent"


@dataclass(frozen=True, slots=True)
class Sent:
    """A message the client wrote (bytes when written raw); `probe` marks deliberately
    invalid ones."""

    message: Any
    probe: bool


class NoAnswer(TimeoutError):
    """The agent did not answer, or exit, in time (or exited while an answer was awaited)."""


class AgentLink:
    """One agent process seen from the editor's side of its pipes (see the module docstring).

    `write` takes the bytes for the agent's stdin; a link made without `proc` reads only what
    is handed to `receive`, so a client can be tested without a process."""

    def __init__(
        self,
        write: Callable[[bytes], object],
        *,
        proc: asyncio.subprocess.Process | None = None,
        editor: Editor | None = None,
        watch: Callable[[Message], None] | None = None,
        records: list[Record] | None = None,
        sent: list[Sent] | None = None,
        view: V1View | None = None,
    ) -> None:
        self.proc = proc
        # An ACP v2 agent seen in v1's words: `messages` and the answers are the view's,
        # `records` and `sent` what was on the wire.
        self.view = view
        self.kept: Kept | None = None  # `spawn(kept=True)`: the keeper it runs under
        self.editor = editor
        self.watch = watch  # called with every message read, before it is answered
        self.records: list[Record] = [] if records is None else records
        self.sent: list[Sent] = [] if sent is None else sent
        self.messages: list[Message] = []
        self.raw_lines: list[bytes] = []
        self.bad_lines: list[bytes] = []
        self.stderr = bytearray()
        self.editor_errors: list[str] = []  # requests the editor failed to answer
        self.requests: asyncio.Queue[Message] = asyncio.Queue()  # when no editor answers
        self.notifications: asyncio.Queue[Message] = asyncio.Queue()
        self.others: asyncio.Queue[Any] = asyncio.Queue()  # batches, unawaited answers
        self.eof = False
        # `kill -9` the agent the instant a message for which this returns True is read
        self.kill_on: Callable[[Message], bool] | None = None
        self._write = write
        self._pending: dict[tuple[str, Any], asyncio.Future[Message]] = {}
        self._methods: dict[tuple[str, Any], str] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()
        self._readers = (
            []
            if proc is None
            else [
                asyncio.create_task(self._read_stdout()),
                asyncio.create_task(self._read_stderr()),
            ]
        )

    @classmethod
    async def spawn(
        cls,
        env: Mapping[str, str],
        *args: str,
        command: Sequence[str] = AGENT_COMMAND,
        limit: int = READ_LIMIT,
        kept: bool = False,
        **options: Any,
    ) -> Self:
        """Start the agent (`command` and `args`) with `env`; `options` as for the link.
        `kept`: under a keeper (`acp_fsm.system.keeper`), which `kill` has end the agent and
        everything it started, a launcher's children and what left the group included, and
        which ends what the agent leaves when it exits (the tool dying ends them all too)."""
        argv = (*command, *args)
        spawn_options: dict[str, Any] = {
            "stdin": asyncio.subprocess.PIPE,
            "stdout": asyncio.subprocess.PIPE,
            "stderr": asyncio.subprocess.PIPE,
            "env": dict(env),
            "limit": limit,
        }
        keeper: Kept | None = None
        if kept:
            given_up: list[asyncio.subprocess.Process] = []
            try:
                proc, keeper = await spawn_kept(
                    asyncio.create_subprocess_exec,
                    argv,
                    given_up.append,
                    ends_with_leader=True,
                    **spawn_options,
                )
            finally:
                for started in given_up:  # its lifeline closed: it ends the agent, and exits
                    await _reaped(started)
                    started._transport.close()  # type: ignore[attr-defined]
        else:
            proc = await asyncio.create_subprocess_exec(*argv, **spawn_options)
        assert proc.stdin is not None
        link = cls(proc.stdin.write, proc=proc, **options)
        link.kept = keeper
        return link

    def __repr__(self) -> str:
        pid = "no process" if self.proc is None else f"pid={self.proc.pid}"
        return (
            f"<AgentLink {pid} messages={len(self.messages)} "
            f"pending={sum(not f.done() for f in self._pending.values())} eof={self.eof}>"
        )

    # ---------------------------------------------------------------------------- reading

    def receive(self, line: bytes) -> None:
        """One line the agent wrote: kept, parsed, routed."""
        self.raw_lines.append(line)
        try:
            value = json.loads(line)
        except ValueError:
            self.bad_lines.append(line)
            return
        if not is_jsonrpc(value):
            self.bad_lines.append(line)
        self.take(value)

    def take(self, value: Any) -> None:
        """One JSON value the agent wrote, routed: a batch, or a message."""
        if isinstance(value, list):
            self.others.put_nowait(value)
            for item in value:
                if isinstance(item, dict):
                    self._record_answer(item)
        elif isinstance(value, dict):
            if self.view is None:
                self._show(value)
            else:
                self._record(value)
                for shown in self.view.incoming(value):
                    self._show(shown)
        self._changed.set()

    def _show(self, message: Message) -> None:
        self.messages.append(message)
        if self.kill_on is not None and self.kill_on(message) and self.proc is not None:
            self._kill_now()
            self.kill_on = None
        self._route(message)

    def _record(self, message: Message) -> None:
        """A message as it came, kept in `records` (what the view shows is not)."""
        if "method" not in message:
            self._record_answer(message)
        else:
            kind = "request" if "id" in message else "notification"
            self.records.append(Record(kind, message["method"], message))

    def _route(self, message: Message) -> None:
        if self.watch is not None:
            self.watch(message)
        method = message.get("method")
        viewed = self.view is not None  # recorded as it came (`_record`)
        if "method" not in message:
            future = self._pending.get(id_key(message.get("id")))
            if not viewed:
                self._record_answer(message)
            if future is not None and not future.done():
                future.set_result(message)
            else:
                self.unmatched(message)
        elif "id" in message:
            if not viewed:
                self.records.append(Record("request", method, message))
            if self.editor is None:
                self.requests.put_nowait(message)
            else:
                self._answer(message)
        else:
            if not viewed:
                self.records.append(Record("notification", method, message))
            self.notifications.put_nowait(message)
            if method == "$/cancel_request" and self.editor is not None:
                self._write_now(self.editor.withdrawn(message.get("params")))

    def unmatched(self, message: Message) -> None:
        """An answer that no awaited request's id matches: kept in `others`."""
        self.others.put_nowait(message)

    def awaited(self) -> list[tuple[Any, str | None, asyncio.Future[Message]]]:
        """The requests whose answer is awaited: each one's id, method and future."""
        return [
            (key[1], self._methods.get(key), future)
            for key, future in self._pending.items()
            if not future.done()
        ]

    def requested(self) -> list[Any]:
        """The ids of every request whose answer was awaited, answered or not."""
        return [key[1] for key in self._pending]

    def _answer(self, request: Message) -> None:
        """The editor's answer, written at once so answers keep the order of the requests."""
        assert self.editor is not None
        try:
            answer = self.editor.answer(request)
        except Exception as exc:  # a bug of the scripted editor: reported, and answered
            self.editor_errors.append(f"{request.get('method')}: {type(exc).__name__}: {exc}")
            answer = {
                "jsonrpc": "2.0",
                "id": request.get("id"),
                "error": {"code": -32603, "message": "the scripted editor failed"},
            }
        self._write_now(answer)

    def _record_answer(self, message: Message) -> None:
        method = self._methods.get(id_key(message.get("id")))
        if self.view is not None:
            method = self.view.wire_method(method)
        if "result" in message:
            self.records.append(Record("result", method, message))
        elif "error" in message:
            self.records.append(Record("error", method, message))

    async def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                self.receive(line)
        finally:
            self.eof = True
            self._changed.set()

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    def log_events(self, event: str | None = None) -> list[dict[str, Any]]:
        """The agent's JSON log lines so far (those named `event`, when given)."""
        found = []
        for line in self.stderr.decode("utf-8", "replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and "event" in entry and event in (None, entry["event"]):
                    found.append(entry)
        return found

    def logged(self, event: str, **fields: Any) -> bool:
        """Whether the agent has logged `event` (with these fields) so far."""
        return any(all(e.get(k) == v for k, v in fields.items()) for e in self.log_events(event))

    def stderr_tail(self, size: int = 1500) -> str:
        return self.stderr.decode("utf-8", "replace")[-size:]

    async def wait_for(
        self,
        what: str,
        predicate: Callable[[Message], bool],
        start: int = 0,
        wait_s: float = TIMEOUT_S,
    ) -> Message:
        """The first message from index `start` on that satisfies `predicate`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            self._changed.clear()
            found = next((m for m in self.messages[start:] if predicate(m)), None)
            if found is not None:
                return found
            remaining = deadline - loop.time()
            if self.eof or remaining <= 0:
                raise NoAnswer(
                    f"{'the agent exited' if self.eof else 'timed out'} waiting "
                    f"for {what}; stderr: {self.stderr_tail()}"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    # ---------------------------------------------------------------------------- writing

    async def send_raw(self, data: bytes, *, probe: bool = True) -> None:
        """Write bytes as they are (a probe unless told otherwise); seen through a `view`,
        each line that is a JSON-RPC message is said in its words."""
        if self.view is not None:
            data = b"\n".join(self._viewed_line(line) for line in data.split(b"\n"))
        self.sent.append(Sent(data, probe))
        await self._drain(data)

    def _viewed_line(self, line: bytes) -> bytes:
        assert self.view is not None
        try:
            message = json.loads(line)
        except ValueError:
            return line
        if not isinstance(message, dict) or "method" not in message:
            return line
        return json.dumps(self.view.outgoing(message)).encode()

    async def send(self, message: Any, *, probe: bool = False) -> None:
        if self.view is not None:
            message = self.view.outgoing(message)
        self.sent.append(Sent(message, probe))
        await self._drain(json.dumps(message).encode() + b"\n")

    def _write_now(self, message: Message | None) -> None:
        """Write an answer without waiting for the pipe to drain (None: nothing to write)."""
        if message is not None:
            self.sent.append(Sent(message, False))
            self._write(json.dumps(message).encode() + b"\n")

    async def _drain(self, data: bytes) -> None:
        self._write(data)
        if self.proc is not None and self.proc.stdin is not None:
            await self.proc.stdin.drain()

    def expect(self, msg_id: Any, method: str | None = None) -> asyncio.Future[Message]:
        """The future of the answer to request `msg_id` (of `method`, named in the records)."""
        key = id_key(msg_id)
        future = self._pending.get(key)
        if future is None:
            future = self._pending[key] = asyncio.get_running_loop().create_future()
        if method is not None:
            self._methods[key] = method
        return future

    async def start_request(
        self, method: str, params: Any = None, *, msg_id: Any = None, probe: bool = False
    ) -> tuple[Any, asyncio.Future[Message]]:
        """Send a request; its id and the future of the whole response."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        future = self.expect(msg_id, method)
        message: Message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message, probe=probe)
        return msg_id, future

    async def response(
        self, future: asyncio.Future[Message], what: str, wait_s: float = TIMEOUT_S
    ) -> Message:
        """The awaited response (NoAnswer after `wait_s` seconds)."""
        try:
            return await asyncio.wait_for(future, wait_s)
        except TimeoutError:
            raise NoAnswer(
                f"no response to {what} within {wait_s} s; stderr: {self.stderr_tail()}"
            ) from None

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        msg_id: Any = None,
        probe: bool = False,
        wait_s: float = TIMEOUT_S,
    ) -> Message:
        """Send a request and return the agent's whole response."""
        _, future = await self.start_request(method, params, msg_id=msg_id, probe=probe)
        return await self.response(future, method, wait_s)

    async def call(self, method: str, params: Any = None, *, wait_s: float = TIMEOUT_S) -> Any:
        """Send a request and return its result; an error answer raises RemoteError."""
        return result_of(await self.request(method, params, wait_s=wait_s), method)

    async def notify(self, method: str, params: Any = None) -> None:
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def respond(self, request: Message, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def answer_held(self, request: Message, answer: Any) -> None:
        """Answer a request the editor held (a result, or an EditorError)."""
        assert self.editor is not None
        await self.send(self.editor.release(request, answer))

    # -------------------------------------------------------------------------- lifecycle

    async def close(self, wait_s: float = TIMEOUT_S) -> int:
        """Close the agent's stdin (an editor's way to end it) and return its exit code, once
        its output is read to the end; NoAnswer when it has not exited within `wait_s`."""
        assert self.proc is not None and self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.proc.stdin.wait_closed()
        try:
            code = await asyncio.wait_for(self.proc.wait(), wait_s)
            await self.ended(wait_s)
        except TimeoutError:
            raise NoAnswer(
                f"the agent did not exit within {wait_s} s of its stdin closing"
            ) from None
        return code

    async def ended(self, wait_s: float = TIMEOUT_S) -> None:
        """Wait until the agent's stdout and stderr are read to their end (after its exit)."""
        await asyncio.wait_for(asyncio.gather(*self._readers), wait_s)

    def close_pipe(self, fd: int) -> None:
        """Close our end of the agent's stdout (1) or stderr (2), as an editor that quits or
        crashes does: the agent's writes to it fail from then on (EPIPE)."""
        assert self.proc is not None
        transport = self.proc._transport.get_pipe_transport(fd)  # type: ignore[attr-defined]
        assert transport is not None
        transport.close()

    def _kill_now(self) -> None:
        """`kill -9` the agent (through its keeper, with everything it started)."""
        if self.kept is not None:
            self.kept.stop(0)
        elif self.proc is not None and self.proc.returncode is None:
            self.proc.kill()

    async def kill(self) -> None:
        """`kill -9` the agent if it still runs (`kept`: everything it started too, whatever
        process group it is in) and stop reading it (idempotent). Pipes a process out of
        reach still holds are closed after `KILL_WAIT_S`."""
        self._kill_now()
        if self.proc is not None:
            await _reaped(self.proc)
        if self.kept is not None:
            self.kept.close()
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)


async def _reaped(proc: asyncio.subprocess.Process) -> None:
    """Wait for `proc`'s exit; after `KILL_WAIT_S`, close its pipes (`kill -9` when it still
    runs) and wait for that. A process nobody waited for outlives the event loop that started
    it, and its `Popen` warns when collected, in whatever runs then."""
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_WAIT_S)
    except TimeoutError:
        proc._transport.close()  # type: ignore[attr-defined]
        await proc.wait()


def result_of(response: Message, method: str = "") -> Any:
    """The result of a response; its error raised as RemoteError."""
    if "error" in response:
        error = response["error"]
        raise RemoteError(error.get("code", 0), error.get("message", ""), error.get("data"), method)
    return response.get("result")


def is_jsonrpc(value: Any) -> bool:
    """A JSON-RPC 2.0 message, or a non-empty batch of them."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(
        isinstance(item, dict) and item.get("jsonrpc") == "2.0" for item in items
    )
