"""The agent under test, started the way an editor starts it, and the steps checks share.

A check gets a `Context` (`conformance.context`) and starts one or more `Probe`s from it,
each a fresh agent process, an `AgentLink` that reads the agent's output through a bounded
`Output` (the messages for the checks, the transcript's tail, counts); the context ends them
and renders the evidence: the tail of the transcript."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Self

from acp_fsm import __version__
from acp_fsm.devkit.conformance.ids import id_shown, json_type, misanswered
from acp_fsm.devkit.conformance.output import (
    MESSAGE_LIMIT,
    MIB,
    READ_CHUNK,
    Flood,
    Output,
)
from acp_fsm.devkit.conformance.reading import (
    ModelCalls,
    Turn,
    asks_authentication,
    clip,
    is_update,
    model_not_called,
    of_turn,
)
from acp_fsm.devkit.conformance.verdicts import Blocked, Misanswered, Violation
from acp_fsm.devkit.editor import AgentLink, Message, NoAnswer, permission_outcome

if TYPE_CHECKING:
    from acp_fsm.devkit.provider import ScriptedProvider

# The longest wait for one answer or exit: an agent that starts an SDK or a CLI per session
# takes seconds for session/new, more with four checks at once on two cores.
WAIT_S: Final = 10.0
PING: Final = "_conformance/ping"  # an extension request: any answer shows the agent serves
Moment = tuple[str, Callable[[], bool]]
"""When to do something in a turn: what is awaited (for the reason when it never comes), and
the test of it."""
CLIENT_CAPABILITIES: Final[dict[str, Any]] = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
}
INITIALIZE: Final = {
    "protocolVersion": 1,
    "clientCapabilities": CLIENT_CAPABILITIES,
    "clientInfo": {"name": "acp-fsm-conformance", "version": __version__},
}


class Probe(AgentLink):
    """One agent process, its output kept by `output` (bounded: see `conformance.output`):
    `values` and `messages` hold what the checks read, `output.recent` the transcript's tail.
    An answer that can only be to an awaited request, in a form that does not match it, fails
    that request's wait at once (`Misanswered`)."""

    def __init__(self, write: Callable[[bytes], object], **options: Any) -> None:
        self.output = Output()
        self.values: list[Any] = []  # every JSON value kept, batches included
        self.stopped: str | None = None  # why the tool stopped reading the agent (a flood)
        self.ids_only = True  # every message written so far carried an id
        self.wait_s = WAIT_S
        self.settle_s = 0.3
        self.session_cwd = "/"
        self.initialized: dict[str, Any] | None = None
        self.auth_method: str | None = None  # authenticate with it when session/new asks
        self.model: ScriptedProvider | None = None

        def logged(data: bytes) -> object:
            self.output.wrote(data)
            return write(data)

        super().__init__(logged, **options)

    @classmethod
    async def spawn(
        cls, env: Mapping[str, str], *args: str, limit: int = READ_CHUNK, **options: Any
    ) -> Self:
        """As `AgentLink.spawn`, each pipe's reader buffering at most about `limit` bytes."""
        return await super().spawn(env, *args, limit=limit, **options)

    # ---------------------------------------------------------------------------- reading

    def receive(self, line: bytes) -> None:
        self._take_all(self.output.read(line + b"\n"))

    async def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while chunk := await self.proc.stdout.read(READ_CHUNK):
                self._take_all(self.output.read(chunk))
            self._take_all(self.output.end())
        except Flood as exc:
            self.stopped = str(exc)
        finally:
            self.eof = True
            self._changed.set()

    def _take_all(self, values: Iterator[Any]) -> None:
        for value in values:
            self.values.append(value)
            self.take(value)

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(READ_CHUNK):
            self.output.stderr.add(chunk)

    def stderr_tail(self, size: int = 1500) -> str:
        return self.output.stderr.kept.decode("utf-8", "replace")[-size:]

    def unmatched(self, message: Message) -> None:
        """An answer no awaited id matches: when it can only be the answer to one of them
        (`ids.misanswered`), that request's wait fails with it."""
        super().unmatched(message)
        awaited = self.awaited()
        ids = [sent for sent, _, _ in awaited]
        index = misanswered(message, ids, self.ids_only, self.requested())
        if index is None:
            return
        sent, method, future = awaited[index]
        future.set_exception(
            Misanswered(
                f"{method or 'a request'} answered {id_shown(message)} for request id "
                f"{json.dumps(sent)} ({json_type(sent)}): {clip(json.dumps(message))}"
            )
        )
        future.exception()  # seen: whoever awaits the request gets it, nobody else need

    # ---------------------------------------------------------------------------- writing

    async def send(self, message: Any, *, probe: bool = False) -> None:
        self.ids_only &= isinstance(message, dict) and "id" in message
        await super().send(message, probe=probe)

    async def send_raw(self, data: bytes, *, probe: bool = True) -> None:
        """Bytes as they are: a probe (a line that is no message, a malformed one), or with
        `probe` False requests with their ids, written in pieces or several at once."""
        if probe:
            self.ids_only = False
        await super().send_raw(data, probe=probe)

    # ------------------------------------------------------------------------------ waits

    async def until(self, what: str, ready: Callable[[], bool]) -> None:
        """Wait until `ready()` holds; NoAnswer after `wait_s` or when the agent exits."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while True:
            self._changed.clear()
            if ready():
                return
            if self.stopped is not None:
                raise NoAnswer(f"no {what}: {self.stopped}")
            if self.eof:
                raise NoAnswer(f"no {what}: the agent exited{await self.exit_note()}")
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise NoAnswer(f"no {what} within {self.wait_s:g} s{self._overlong_note()}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def value(self, what: str, predicate: Callable[[Any], bool], since: int = 0) -> Any:
        """The first JSON value read from index `since` of `values` on that satisfies
        `predicate`."""
        found: list[Any] = []

        def ready() -> bool:
            found[:] = [v for v in self.values[since:] if predicate(v)][:1]
            return bool(found)

        await self.until(what, ready)
        return found[0]

    async def answer(self, method: str, params: Any = None, *, msg_id: Any = None) -> Message:
        """Send a request and wait for the response to it."""
        _, future = await self.start_request(method, params, msg_id=msg_id)
        await self.until(f"answer to {method}", future.done)
        return future.result()

    async def _drain(self, data: bytes) -> None:
        """A write the agent does not read (its pipe full) is NoAnswer after `wait_s`."""
        try:
            await asyncio.wait_for(super()._drain(data), self.wait_s)
        except TimeoutError:
            raise NoAnswer(
                f"the agent did not read {len(data)} bytes written to it within {self.wait_s:g} s"
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            raise NoAnswer(f"the agent closed its stdin{await self.exit_note()}") from None

    def _overlong_note(self) -> str:
        overlong = self.output.strays.overlong
        if not overlong:
            return ""
        return (
            f" (the agent wrote {overlong} line(s) longer than the {MESSAGE_LIMIT // MIB} MiB "
            "the tool reads as one message: not read)"
        )

    async def exit_note(self) -> str:
        if self.proc is None:
            return ""
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(self.proc.wait(), 1.0)
            return f" (exit status {code})"
        return ""

    # ------------------------------------------------------------------------ shared steps

    async def initialize(self, params: Any = None) -> dict[str, Any]:
        """The handshake; Blocked when it does not succeed."""
        try:
            response = await self.answer("initialize", INITIALIZE if params is None else params)
        except NoAnswer as exc:
            raise Blocked(f"initialize: {exc}") from None
        result = response.get("result")
        if not isinstance(result, dict):
            raise Blocked(f"initialize failed: {clip(json.dumps(response))}")
        self.initialized = result
        return result

    def capability(self, *path: str) -> Any:
        """A member of the advertised `agentCapabilities` (None when absent)."""
        node: Any = (self.initialized or {}).get("agentCapabilities")
        for name in path:
            node = node.get(name) if isinstance(node, dict) else None
        return node

    async def new_session(self) -> str:
        """initialize, then session/new; the session id (Blocked when either fails)."""
        if self.initialized is None:
            await self.initialize()
        try:
            response = await self.open_session()
        except NoAnswer as exc:
            raise Blocked(f"session/new: {exc}") from None
        session_id = (response.get("result") or {}).get("sessionId")
        if not isinstance(session_id, str):
            raise Blocked(f"session/new failed: {clip(json.dumps(response))}")
        return session_id

    async def open_session(self) -> Message:
        """session/new's response; when it asks for authentication and `auth_method` is set,
        the one after `authenticate` with it (Blocked when that fails)."""
        params = {"cwd": self.session_cwd, "mcpServers": []}
        response = await self.answer("session/new", params)
        if self.auth_method is not None and asks_authentication(response.get("error")):
            await self.authenticate(self.auth_method)
            response = await self.answer("session/new", params)
        return response

    async def authenticate(self, method_id: str) -> None:
        """`authenticate` with that method, as an editor does when session/new asks for it
        (Blocked when it fails)."""
        response = await self.answer("authenticate", {"methodId": method_id})
        if "result" not in response:
            raise Blocked(f"authenticate {method_id!r} failed: {clip(json.dumps(response))}")

    async def serves(self, what: str) -> None:
        """The agent still answers a request (a Violation otherwise)."""
        try:
            await self.answer(PING, {})
        except NoAnswer as exc:
            raise Violation(f"{what}, the agent no longer answers: {exc}") from None

    async def prompt(self, session_id: str, text: str, *, cancel: bool | Moment = False) -> Turn:
        """A prompt turn. With `cancel`, session/cancel is sent at that moment (True: once the
        first message chunk has streamed, or the prompt was answered) unless the prompt was
        answered by then, and the permission requests pending are answered cancelled, as ACP
        asks of the client. The updates after the response are those read within
        `settle_s`. The prompt ends with a tag of its own, by which the model calls it caused
        are counted."""
        loop = asyncio.get_running_loop()
        start = len(self.messages)
        tag = f"[conformance turn {secrets.token_hex(4)}]"
        calls = ModelCalls(self.model, tag)
        _, future = await self.start_request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": f"{text} {tag}"}]},
        )
        cancelled_at = None
        if cancel:
            what, ready = (
                cancel
                if not isinstance(cancel, bool)
                else (
                    "agent_message_chunk streamed before the cancel",
                    lambda: (
                        future.done()
                        or any(
                            is_update(m, session_id, "agent_message_chunk")
                            for m in self.messages[start:]
                        )
                    ),
                )
            )
            try:
                await self.until(what, ready)
            except NoAnswer as exc:
                if calls.count() == 0:
                    raise model_not_called() from None
                raise Blocked(f"nothing to cancel: {exc}") from None
            if not future.done():  # else there is no turn left to cancel: cancel_ms is None
                cancelled_at = loop.time()
                await self.notify("session/cancel", {"sessionId": session_id})
                for request in list(self.editor.held if self.editor else ()):
                    if request["method"] == "session/request_permission":
                        await self.answer_held(request, permission_outcome("cancelled"))
        await self.until("answer to session/prompt", future.done)
        answered_at = loop.time()
        response = future.result()
        await asyncio.sleep(self.settle_s)
        end = next(i for i, m in enumerate(self.messages) if m is response)
        return Turn(
            response,
            [m for m in self.messages[start:end] if is_update(m, session_id)],
            [m for m in self.messages[end + 1 :] if is_update(m, session_id) and of_turn(m)],
            None if cancelled_at is None else (answered_at - cancelled_at) * 1000,
            calls.requests(),
        )
