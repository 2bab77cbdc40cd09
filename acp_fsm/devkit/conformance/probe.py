"""The agent under test, started the way an editor starts it, and the steps checks share.

`Target` is what every check starts: the command, its environment (the scripted model server,
dummy keys, private data directories, the user's `--env`) and the time limits. A check gets a
`Context`, starts one or more `Probe`s from it (each a fresh agent process, an `AgentLink`
that reads the agent's output through a bounded `Output`: the messages for the checks, the
transcript's tail, counts) and leaves them to the context, which ends them and renders the
evidence: the tail of the transcript."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Self

from acp_fsm import __version__
from acp_fsm.devkit.conformance.ids import id_shown, json_type, misanswered
from acp_fsm.devkit.conformance.model import Blocked, Misanswered, NotApplicable, Violation
from acp_fsm.devkit.conformance.output import (
    MESSAGE_LIMIT,
    MIB,
    READ_CHUNK,
    Flood,
    Line,
    Output,
)
from acp_fsm.devkit.editor import AgentLink, Editor, Message, NoAnswer, permission_outcome
from acp_fsm.devkit.schema_check.official import OfficialSchema

if TYPE_CHECKING:
    from acp_fsm.devkit.provider import ScriptedProvider

AUTH_REQUIRED: Final = -32000  # ACP's error code: authenticate first
# The longest wait for one answer or exit: an agent that starts an SDK or a CLI per session
# takes seconds for session/new, more with four checks at once on two cores.
WAIT_S: Final = 10.0
PING: Final = "_conformance/ping"  # an extension request: any answer shows the agent serves
EVIDENCE_LINES: Final = 20
EVIDENCE_BYTES: Final = 2048
Moment = tuple[str, Callable[[], bool]]
"""When to do something in a turn: what is awaited (for the reason when it never comes), and
the test of it."""
LINE_CLIP: Final = 240  # characters of one line shown in the evidence
STDERR_TAIL: Final = 1000
# The updates that belong to a turn; the others (session_info_update, usage_update, ...) are
# about the session and may come at any time.
TURN_KINDS: Final = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
INITIALIZE: Final = {
    "protocolVersion": 1,
    "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
    },
    "clientInfo": {"name": "acp-fsm-conformance", "version": __version__},
}


@dataclass(frozen=True)
class Target:
    """The agent under test and the limits of every wait."""

    command: tuple[str, ...]
    env: dict[str, str]
    project: Path  # the cwd of the sessions the checks open
    wait_s: float = WAIT_S  # one answer, one exit
    settle_s: float = 0.3  # how long after a response to watch for stray updates
    official: OfficialSchema | None = None
    auth_method: str | None = None  # `--auth`: the authMethods id to log in with
    model: ScriptedProvider | None = None  # the model server the agent is pointed at


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
            [m for m in self.messages[end + 1 :] if is_update(m, session_id) and _of_turn(m)],
            None if cancelled_at is None else (answered_at - cancelled_at) * 1000,
            calls.count(),
        )


class ModelCalls:
    """The calls to the model server that carry a prompt's tag, from the prompt on: those made
    for that prompt, among those of the checks running beside it."""

    def __init__(self, server: ScriptedProvider | None, tag: str) -> None:
        self.server = server
        self.tag = tag
        self.since = 0 if server is None else len(server.requests)

    def count(self) -> int | None:
        """How many there were so far (None: no server to ask)."""
        if self.server is None:
            return None
        tag = self.tag.encode()
        return sum(tag in request.raw for request in self.server.requests[self.since :])


def model_not_called(answered: str | None = None) -> NotApplicable:
    """The verdict of a check of what the model says or does, on an agent that did not call
    the model it was pointed at (one that answers by itself, or forwards to its own)."""
    said = "" if answered is None else f"; it answered {clip(answered, 80)!r}"
    return NotApplicable(
        "the agent did not call the model it was pointed at (no request to the scripted "
        f"model server carried the prompt){said}"
    )


@dataclass
class Turn:
    """A prompt's response, the session's updates before it and the turn's updates after it
    (`TURN_KINDS`); the time from session/cancel to the response, when cancelled; how many
    model calls carried the prompt (None: no model server to ask)."""

    response: Message
    updates: list[Message]
    late: list[Message]
    cancel_ms: float | None = None
    model_calls: int | None = None

    def needs_model(self) -> None:
        """NotApplicable when the agent answered without calling the model it was pointed
        at: a check of what that model says or does cannot apply."""
        if self.model_calls == 0:
            raise model_not_called(self.text())

    @property
    def stop_reason(self) -> Any:
        return (self.response.get("result") or {}).get("stopReason")

    def late_kinds(self) -> str:
        """The kinds of the turn's updates after the response, for a reason."""
        return f"{len(self.late)} session/update(s) after it: {', '.join(map(kind_of, self.late))}"

    def text(self) -> str:
        """The text of the agent_message_chunk updates, joined."""
        return "".join(
            str(content.get("text", ""))
            for m in self.updates
            if kind_of(m) == "agent_message_chunk"
            and isinstance(content := m["params"]["update"].get("content"), dict)
        )


def is_update(message: Any, session_id: str, kind: str | None = None) -> bool:
    """A session/update notification of `session_id` (of that kind, when given)."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return False
    params = message.get("params")
    if not isinstance(params, dict) or params.get("sessionId") != session_id or "id" in message:
        return False
    update = params.get("update")
    return kind is None or (isinstance(update, dict) and update.get("sessionUpdate") == kind)


def asks_authentication(error: Any) -> bool:
    """An error that asks the client to authenticate: ACP's auth_required (-32000), or
    one whose message says so."""
    if not isinstance(error, dict):
        return False
    lowered = str(error.get("message") or "").lower()
    return error.get("code") == AUTH_REQUIRED or any(
        word in lowered for word in ("auth_required", "authentication")
    )


def kind_of(update: Message) -> str:
    """The `sessionUpdate` of a session/update notification."""
    return str(update["params"]["update"].get("sessionUpdate", "?"))


def _of_turn(update: Message) -> bool:
    return kind_of(update) in TURN_KINDS


def clip(text: str, size: int = LINE_CLIP) -> str:
    return text if len(text) <= size else f"{text[:size]}… ({len(text)} characters)"


@dataclass
class Context:
    """What one check runs with: its target, and the agents it started."""

    target: Target
    name: str = "check"  # the check's id: its sessions' cwd is a directory of that name
    probes: list[Probe] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # measurements for the report

    async def start(self, editor: Editor | None = None, *, unset: Iterable[str] = ()) -> Probe:
        """A fresh agent process, its requests answered by `editor` (by default, one that
        answers a permission request with an error and keeps what is written in memory),
        the variables `unset` left out of its environment."""
        gone = set(unset)
        env = {k: v for k, v in self.target.env.items() if k not in gone}
        try:
            probe = await Probe.spawn(
                env, command=self.target.command, editor=editor or Editor(), kept=True
            )
        except OSError as exc:
            raise Violation(
                f"could not start {' '.join(self.target.command)}: {exc.strerror or exc}"
            ) from None
        probe.wait_s, probe.settle_s = self.target.wait_s, self.target.settle_s
        probe.auth_method = self.target.auth_method
        probe.model = self.target.model
        cwd = self.target.project / self.name
        cwd.mkdir(parents=True, exist_ok=True)
        probe.session_cwd = str(cwd)
        self.probes.append(probe)
        return probe

    async def restart(self, probe: Probe) -> Probe:
        """End `probe` as an editor does (stdin closed, the exit awaited; killed, as editors
        do, when it has not exited in time: `robustness.stdin_eof` holds that rule), then a
        fresh agent, initialized."""
        try:
            await probe.close(self.target.wait_s)
        except NoAnswer as exc:
            self.data["killed"] = f"{exc}; killed before the next agent started"
            await probe.kill()
        fresh = await self.start()
        await fresh.initialize()
        return fresh

    async def close(self) -> None:
        for probe in self.probes:
            await probe.kill()

    @property
    def agent_info(self) -> Any:
        return next((p.initialized.get("agentInfo") for p in self.probes if p.initialized), None)

    def evidence(self) -> list[str]:
        """The tail of the transcripts: at most `EVIDENCE_LINES` lines and about
        `EVIDENCE_BYTES` bytes, each line clipped."""
        lines: list[str] = []
        for number, probe in enumerate(self.probes, 1):
            prefix = f"[agent {number}] " if len(self.probes) > 1 else ""
            lines += [f"{prefix}{shown(line)}" for line in probe.output.recent]
        tail = lines[-EVIDENCE_LINES:]
        while len(tail) > 1 and sum(len(line) + 1 for line in tail) > EVIDENCE_BYTES:
            tail.pop(0)
        return tail

    def stderr(self) -> str:
        """The end of the agents' stderr, after the size of the whole when that was more."""
        tail = "".join(probe.stderr_tail(STDERR_TAIL) for probe in self.probes)[-STDERR_TAIL:]
        written = sum(probe.output.stderr.bytes for probe in self.probes)
        if written <= len(tail.encode()):
            return tail
        lines = sum(probe.output.stderr.lines for probe in self.probes)
        return (
            f"[{written:,} bytes in {lines:,} newline(s); the last {len(tail):,} characters] {tail}"
        )


def shown(line: Line) -> str:
    """A kept line as evidence: its arrow, its text clipped, and what was not read of it."""
    text = line.head.decode("utf-8", "replace")
    if line.overlong:
        return (
            f"{line.arrow} {text[:LINE_CLIP]}… (a line of {line.size:,} bytes or more: longer "
            f"than the {MESSAGE_LIMIT // MIB} MiB the tool reads as one message, not read)"
        )
    if line.size > len(line.head):
        return f"{line.arrow} {text[:LINE_CLIP]}… ({line.size:,} bytes)"
    return f"{line.arrow} {clip(text)}"
