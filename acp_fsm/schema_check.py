"""`acp-fsm schema-check`: every message the agent writes, checked against the ACP schemas.

`run_session` starts the real agent (`python -m acp_fsm`) against the scripted model server
(`providers.scripted`) and drives it the way an editor would: the handshake and its errors,
every session method, a prompt with every kind of content, streamed text and thinking, each
tool with a permission request answered each way, the editor's files and terminals, a cancel
in the middle of a stream, `$/cancel_request` both ways, and a reload in a second process. Every
message the agent writes is kept as a `Record`.

`Checker` validates each record (a) against the official ACP schema, whole (its root) and by
its method's definition (params of what the agent sends, result of what it answers, `Error` of
its errors), the definition being found through the official `x-method` / `x-side`
annotations; and (b) against the project's own schemas: the JSON-RPC envelope
(`schemas/jsonrpc.json`) and the definition `schemas/methods.json` names for the method.

`main` prints one row per method, direction and kind, and a totals line. Exit status: 0 when
everything conforms, 1 on any failure or when a method, update kind or error code was never
exercised, 2 when the official schema is not found. The tests in `tests/conformance/` import
this driver, so it has to work from an installed package.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

from acp_fsm import schemas

SCHEMA_ENV: Final = "ACP_SCHEMA"
SHARED_SCHEMA: Final = Path("shared", "acp-schema", "schema.json")
# The official TypeScript SDK ships the schema; the interop tests install it (pinned) here.
SDK_PACKAGE: Final = "@agentclientprotocol/sdk@2.4.0"
SDK_SCHEMA: Final = Path("tests", "interop", "node", "node_modules", "@agentclientprotocol",
                         "sdk", "schema", "v1", "schema.json")
HOW_TO_GET_SCHEMA: Final = (
    f"the official TypeScript SDK ({SDK_PACKAGE} on npm) ships it: in a checkout, "
    "`npm ci --prefix tests/interop/node` puts it where it is found; anywhere, "
    "`npm pack @agentclientprotocol/sdk@2.4.0 && tar xzf agentclientprotocol-sdk-2.4.0.tgz "
    "package/schema/v1/schema.json` extracts it, then set ACP_SCHEMA="
    "$PWD/package/schema/v1/schema.json")
STEP_TIMEOUT_S: Final = 10.0  # any single wait of the scripted session
READ_LIMIT: Final = 64 * 1024 * 1024  # longest line read from the agent
EXTRA_SESSIONS: Final = 50  # with the main session, one more than a session/list page
AGENT: Final = "agent"
CLIENT: Final = "client"
# JSON-RPC and ACP error codes the scripted session provokes.
PROVOKED_ERRORS: Final = frozenset({-32700, -32600, -32601, -32602, -32603, -32002, -32800})
_OWN_ENVELOPES: Final = {"request": "jsonrpc.Request", "notification": "jsonrpc.Notification",
                         "result": "jsonrpc.SuccessResponse", "error": "jsonrpc.ErrorResponse"}
_PAYLOAD: Final = {"request": "params", "notification": "params", "result": "result",
                   "error": "error"}


class ScenarioError(Exception):
    """The scripted session could not go on (the agent died, hung or answered off-script)."""


# ------------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Record:
    """One message the agent wrote. `kind` is "request" or "notification" (sent by the agent;
    `method` is its own) or "result" or "error" (the answer to the client's request of `method`,
    None when the request could not be read)."""

    kind: str
    method: str | None
    message: dict[str, Any]

    @property
    def payload(self) -> Any:
        return self.message.get(_PAYLOAD[self.kind])

    @property
    def direction(self) -> str:
        """The method's direction: who called it."""
        return "agent->client" if self.kind in ("request", "notification") else "client->agent"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What is wrong with one record under the official schema and under the project's own."""

    official: tuple[str, ...] = ()
    own: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.official and not self.own


# ------------------------------------------------------------------------ official schema


def schema_candidates(explicit: str | None = None) -> list[Path]:
    """Where the official schema is looked for: `explicit`, else `$ACP_SCHEMA`, else
    `shared/acp-schema/schema.json` in the checkout's parent folder (or the working directory), else
    the copy the TypeScript SDK of the interop tests ships (`npm ci --prefix
    tests/interop/node`)."""
    given = explicit or os.environ.get(SCHEMA_ENV)
    if given:
        return [Path(given)]
    checkout = Path(__file__).resolve().parents[1]
    cwd = Path.cwd().resolve()
    places = [checkout.parent / SHARED_SCHEMA, cwd.parent / SHARED_SCHEMA,
              checkout / SDK_SCHEMA, cwd / SDK_SCHEMA]
    return list(dict.fromkeys(places))


def locate_schema(explicit: str | None = None) -> Path | None:
    return next((p for p in schema_candidates(explicit) if p.is_file()), None)


def _direct_refs(node: Any) -> set[str]:
    """Names of the definitions `node` references (without following them)."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_direct_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_direct_refs(v) for v in node))
    return set()


class OfficialSchema:
    """The official ACP schema: validators of its root and definitions, and its method index.

    `x-method` names a definition's method and `x-side` the side that handles it (receives the
    call and writes the answer; "protocol" for both). Results are the definitions the
    `AgentResponse` / `ClientResponse` envelopes reference; the others are params."""

    def __init__(self, doc: dict[str, Any], path: Path | None = None) -> None:
        self.doc = doc
        self.path = path
        self.defs: dict[str, Any] = doc["$defs"]
        self._validators: dict[str | None, Any] = {}
        results = _direct_refs(self.defs.get("AgentResponse")) | _direct_refs(
            self.defs.get("ClientResponse"))
        # (writer, "params" | "result", method) -> definition name
        self.index: dict[tuple[str, str, str], str] = {}
        for name, definition in self.defs.items():
            method, side = definition.get("x-method"), definition.get("x-side")
            if not isinstance(method, str) or side not in (AGENT, CLIENT, "protocol"):
                continue
            if name in results:
                self.index[(side, "result", method)] = name
            else:
                writers = (AGENT, CLIENT) if side == "protocol" else (_other(side),)
                for writer in writers:
                    self.index[(writer, "params", method)] = name

    @classmethod
    def load(cls, path: Path) -> OfficialSchema:
        return cls(json.loads(path.read_text(encoding="utf-8")), path)

    def definition(self, writer: str, part: str, method: str) -> str | None:
        """The definition of the params or result of `method` as `writer` writes them."""
        return self.index.get((writer, part, method))

    def validator(self, name: str | None) -> Any:
        """A Draft 2020-12 validator of definition `name`, or of the root when None."""
        check = self._validators.get(name)
        if check is None:
            from jsonschema import Draft202012Validator

            schema = self.doc if name is None else {
                "$schema": self.doc.get("$schema"), "$defs": self.defs,
                "$ref": f"#/$defs/{name}"}
            check = self._validators[name] = Draft202012Validator(schema)
        return check

    def problems(self, name: str | None, instance: Any) -> list[str]:
        """Why `instance` is invalid under `name` (the root when None): one line per error."""
        from jsonschema.exceptions import best_match

        label = name or "root"
        return [f"{label} {_where(best_match([e]))}" for e in self.validator(name).iter_errors(
            instance)]

    def message_problems(self, writer: str, kind: str, method: str | None,
                         message: dict[str, Any]) -> list[str]:
        """A whole message against the root, and its params / result / error against the
        definition of its method (extension methods: the root only)."""
        if isinstance(message.get("id"), float):
            # JSON-RPC lets a client pick a fractional id and requires it echoed; ACP's RequestId
            # admits only integers, so the rest of the message is judged with 0 in its place.
            message = {**message, "id": 0}
        problems = self.problems(None, message)
        payload = message.get(_PAYLOAD[kind])
        if kind == "error":
            name: str | None = "Error"
        elif method is None or method.startswith("_"):
            name = None
        else:
            part = "result" if kind == "result" else "params"
            name = self.definition(writer, part, method)
            if name is None:
                problems.append(f"no official definition of the {part} of {method} "
                                f"written by the {writer}")
        if name is not None:
            problems += self.problems(name, payload)
        return problems


def _other(side: str) -> str:
    return CLIENT if side == AGENT else AGENT


def _where(error: Any) -> str:
    """`at $.update.content: 'x' is not valid ...`, bounded."""
    message = error.message if len(error.message) <= 240 else error.message[:237] + "..."
    return f"at {error.json_path}: {message}"


# ---------------------------------------------------------------------------- own schemas


@dataclass(frozen=True, slots=True)
class OwnMethod:
    """One entry of `schemas/methods.json` (or of the extension index)."""

    direction: str
    kind: str
    params: str
    result: str | None


@cache
def own_methods() -> dict[str, OwnMethod]:
    """The project's method index: `methods.json` (acp.*) and its extension methods (acp_fsm.*)."""
    index: dict[str, OwnMethod] = {}
    for file_name, stem in (("methods.json", "acp"), ("acp_fsm_methods.json", "acp_fsm")):
        for method, entry in schemas.load_json(file_name).items():
            result = entry.get("result")
            index[method] = OwnMethod(entry["direction"], entry["kind"],
                                      f"{stem}.{entry['params']}",
                                      f"{stem}.{result}" if result else None)
    return index


def own_problems(record: Record) -> list[str]:
    """A record against the project's JSON-RPC envelope and its method's definition."""
    envelope = _OWN_ENVELOPES[record.kind]
    problems = [f"{envelope}: {v}" for v in [schemas.validate(envelope, record.message)] if v]
    if record.kind == "error" or record.method is None:
        return problems
    spec = own_methods().get(record.method)
    if spec is None:
        return [*problems, f"no definition of {record.method} in schemas/methods.json"]
    if record.kind in ("request", "notification"):
        if spec.direction == "client_to_agent" or spec.kind != record.kind:
            return [*problems, f"{record.method} is not an agent-to-client {record.kind} "
                               "in schemas/methods.json"]
        ref = spec.params
    elif spec.direction == "agent_to_client" or spec.result is None:
        return [*problems, f"{record.method} has no result the agent answers with "
                           "in schemas/methods.json"]
    else:
        ref = spec.result
    violation = schemas.validate(ref, record.payload)
    return problems if violation is None else [*problems, f"{ref}: {violation}"]


# -------------------------------------------------------------------------------- checking


class Checker:
    """Validates records against both schemas, each distinct message once."""

    def __init__(self, official: OfficialSchema) -> None:
        self.official = official
        self._seen: dict[tuple[str, str | None, str], Verdict] = {}

    def check(self, record: Record) -> Verdict:
        message = record.message
        if "id" in message:  # a verdict depends on the id's type, not on its value
            message = {**message, "id": type(message["id"]).__name__}
        key = (record.kind, record.method, json.dumps(message, sort_keys=True))
        verdict = self._seen.get(key)
        if verdict is None:
            verdict = self._seen[key] = Verdict(
                tuple(self.official.message_problems(AGENT, record.kind, record.method,
                                                     record.message)),
                tuple(own_problems(record)))
        return verdict


@dataclass(slots=True)
class Row:
    method: str
    direction: str
    kind: str
    checked: int = 0
    official: int = 0
    own: int = 0


@dataclass
class Report:
    """Per-method counts, and one description per failing message."""

    rows: dict[tuple[str, str, str], Row] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def add(self, record: Record, verdict: Verdict) -> None:
        method = record.method or "(unreadable)"
        key = (method, record.direction, record.kind)
        row = self.rows.get(key) or self.rows.setdefault(key, Row(*key))
        row.checked += 1
        row.official += bool(verdict.official)
        row.own += bool(verdict.own)
        if not verdict.ok:
            text = json.dumps(record.message, ensure_ascii=False)
            text = text if len(text) <= 400 else text[:397] + "..."
            reasons = [f"official: {p}" for p in verdict.official[:3]]
            reasons += [f"own: {p}" for p in verdict.own[:3]]
            self.failures.append(f"{record.kind} of {method}: {'; '.join(reasons)}\n    {text}")

    def table(self) -> str:
        head = ("method", "direction", "kind", "checked", "official", "own")
        lines = [f"{head[0]:<28} {head[1]:<14} {head[2]:<12} {head[3]:>7} "
                 f"{head[4]:>8} {head[5]:>5}"]
        for row in sorted(self.rows.values(), key=lambda r: (r.method, r.direction, r.kind)):
            lines.append(f"{row.method:<28} {row.direction:<14} {row.kind:<12} "
                         f"{row.checked:>7} {row.official:>8} {row.own:>5}")
        rows = self.rows.values()
        lines.append(f"{'total':<28} {'':<14} {'':<12} {sum(r.checked for r in rows):>7} "
                     f"{sum(r.official for r in rows):>8} {sum(r.own for r in rows):>5}")
        return "\n".join(lines)


def check_records(checker: Checker, records: Iterable[Record]) -> Report:
    report = Report()
    for record in records:
        report.add(record, checker.check(record))
    return report


# ---------------------------------------------------------------------------- coverage


def update_tags() -> frozenset[str]:
    """The `sessionUpdate` tags ACP defines (from the project's copy of SessionUpdate)."""
    union = schemas.load_json("acp.json")["$defs"]["SessionUpdate"]["oneOf"]
    return frozenset(branch["properties"]["sessionUpdate"]["const"] for branch in union)


@cache
def emitted_update_kinds() -> frozenset[str]:
    """The update kinds the agent is written to emit: those its modules name (`kinds_named_in`;
    this module, a client, aside)."""
    found: set[str] = set()
    for source in Path(__file__).resolve().parent.rglob("*.py"):
        if source.resolve() != Path(__file__).resolve():
            found |= kinds_named_in(source.read_text(encoding="utf-8"))
    return frozenset(found)


def kinds_named_in(source: str) -> set[str]:
    """`sessionUpdate` tags that Python `source` puts under "sessionUpdate" in a dict literal
    or passes to `chunk(...)` (`acp_fsm.updates.chunk` builds the three message-chunk kinds)."""
    tags, found = update_tags(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            values = [v for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "sessionUpdate"]
        elif isinstance(node, ast.Call) and _called(node) == "chunk":
            values = list(node.args)
        else:
            continue
        found |= {v.value for v in values if isinstance(v, ast.Constant) and v.value in tags}
    return found


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def expected_rows() -> set[tuple[str, str]]:
    """(method, direction) of every method the agent must have written something for: an
    answer to each client->agent request, each agent->client request and notification."""
    rows = set()
    for method, spec in own_methods().items():
        if method.startswith("_"):
            continue
        if spec.direction in ("agent_to_client", "both"):
            rows.add((method, "agent->client"))
        if spec.direction in ("client_to_agent", "both") and spec.kind == "request":
            rows.add((method, "client->agent"))
    return rows


# ------------------------------------------------------------------------------ the client


class _Hold:
    def __repr__(self) -> str:
        return "HOLD"


HOLD: Final = _Hold()
"""A permission answer the editor withholds until the agent sends `$/cancel_request`."""


@dataclass(frozen=True, slots=True)
class Sent:
    """A message the client wrote; `probe` marks deliberately invalid ones."""

    message: Any
    probe: bool


class Editor:
    """Answers the agent's requests as an editor would.

    Permissions come from `permissions` (tool call id -> option id, "cancelled", or `HOLD`:
    unanswered until the agent sends `$/cancel_request`, then answered "cancelled"). Files are
    read from unsaved `buffers`, else the disk; writes go to `buffers`. Terminals exit at once
    with code 0, except a command containing `sleep`: its `wait_for_exit` is held, and answered
    with -32800 when the agent cancels it."""

    def __init__(self) -> None:
        self.permissions: dict[str, str | _Hold] = {}
        self.buffers: dict[str, str] = {}
        self.received: list[dict[str, Any]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.held: dict[Any, dict[str, Any]] = {}
        self._sleepers: set[str] = set()
        self._terminals = itertools.count(1)

    async def answer(self, link: AgentLink, request: dict[str, Any]) -> None:
        self.received.append(request)
        method, params = request["method"], request.get("params") or {}
        if method == "session/request_permission":
            choice = self.permissions.get(params["toolCall"]["toolCallId"])
            if choice is HOLD:
                self.held[request["id"]] = request
            elif isinstance(choice, str):
                await link.respond(request, permission_outcome(choice))
            else:
                await self._refuse(link, request)
        elif method == "terminal/wait_for_exit" and params.get("terminalId") in self._sleepers:
            self.held[request["id"]] = request
        else:
            try:
                result = self._result(method, params)
            except OSError as exc:
                await link.respond_error(request, -32002, f"Resource not found: {exc}")
                return
            if result is None:
                await self._refuse(link, request)
            else:
                await link.respond(request, result)

    async def _refuse(self, link: AgentLink, request: dict[str, Any]) -> None:
        self.unexpected.append(request)
        await link.respond_error(request, -32603, "the scripted editor has no answer for this")

    def _result(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        exit_status = {"exitCode": 0, "signal": None}
        if method == "fs/read_text_file":
            return self._read(params)
        if method == "fs/write_text_file":
            self.buffers[params["path"]] = params["content"]
            return {}
        if method == "terminal/create":
            terminal_id = f"term-{next(self._terminals)}"
            if "sleep" in " ".join([params["command"], *params.get("args", [])]):
                self._sleepers.add(terminal_id)
            return {"terminalId": terminal_id}
        if method == "terminal/wait_for_exit":
            return exit_status
        if method == "terminal/output":
            if params["terminalId"] in self._sleepers:
                return {"output": "", "truncated": False}
            return {"output": "hello\n", "truncated": False, "exitStatus": exit_status}
        if method in ("terminal/kill", "terminal/release"):
            return {}
        return None

    def _read(self, params: dict[str, Any]) -> dict[str, Any]:
        path = params["path"]
        text = self.buffers.get(path)
        if text is None:
            text = Path(path).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)[int(params.get("line") or 1) - 1:]
        limit = params.get("limit")
        return {"content": "".join(lines if limit is None else lines[:limit])}

    async def cancelled(self, link: AgentLink, params: Any) -> None:
        """The agent's `$/cancel_request`: a held request is answered now (ACP: the receiver
        still answers; a permission prompt with "cancelled", anything else with -32800)."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        request = self.held.pop(request_id, None)
        if request is None:
            return
        if request["method"] == "session/request_permission":
            await link.respond(request, permission_outcome("cancelled"))
        else:
            await link.respond_error(request, -32800, "Request cancelled")


def permission_outcome(choice: str) -> dict[str, Any]:
    if choice == "cancelled":
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": choice}}


class AgentLink:
    """One agent process seen from the editor's side of its pipes.

    Every message the agent writes is appended to `messages` and, as a `Record`, to `records`
    (shared by the processes of a session); its requests are answered by `editor`. Lines that
    are not JSON-RPC are kept in `bad_lines`."""

    def __init__(self, proc: asyncio.subprocess.Process, editor: Editor,
                 records: list[Record], sent: list[Sent]) -> None:
        self.proc = proc
        self.editor = editor
        self.records = records
        self.sent = sent
        self.messages: list[dict[str, Any]] = []
        self.bad_lines: list[bytes] = []
        self.stderr = bytearray()
        self.task_errors: list[str] = []  # the editor's answers that failed
        self.eof = False
        self._methods: dict[Any, str] = {}
        self._waiters: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._readers = [asyncio.create_task(self._read_stdout()),
                         asyncio.create_task(self._read_stderr())]

    @classmethod
    async def start(cls, env: dict[str, str], editor: Editor, records: list[Record],
                    sent: list[Sent]) -> AgentLink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "acp_fsm", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
            limit=READ_LIMIT)
        return cls(proc, editor, records, sent)

    # ------------------------------------------------------------------ reading

    async def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            try:
                value = json.loads(line)
            except ValueError:
                self.bad_lines.append(line)
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict) and item.get("jsonrpc") == "2.0":
                    self._route(item)
                else:
                    self.bad_lines.append(line)
            self._changed.set()
        self.eof = True
        self._changed.set()

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk

    def _route(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        method = message.get("method")
        if isinstance(method, str):
            kind = "request" if "id" in message else "notification"
            self.records.append(Record(kind, method, message))
            if kind == "request":
                self._spawn(self.editor.answer(self, message))
            elif method == "$/cancel_request":
                self._spawn(self.editor.cancelled(self, message.get("params")))
            return
        msg_id = message.get("id")
        kind = "error" if "error" in message else "result"
        self.records.append(Record(kind, self._methods.get(_id_key(msg_id)), message))
        waiter = self._waiters.pop(_id_key(msg_id), None)
        if waiter is not None and not waiter.done():
            waiter.set_result(message)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            self.task_errors.append(f"{type(error).__name__}: {error}")

    async def wait_for(self, what: str, predicate: Callable[[dict[str, Any]], bool],
                       start: int = 0) -> dict[str, Any]:
        """The first message from index `start` on that satisfies `predicate`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STEP_TIMEOUT_S
        while True:
            self._changed.clear()
            found = next((m for m in self.messages[start:] if predicate(m)), None)
            if found is not None:
                return found
            remaining = deadline - loop.time()
            if self.eof or remaining <= 0:
                raise ScenarioError(f"{'the agent exited' if self.eof else 'timed out'} "
                                    f"waiting for {what}; stderr: {self.stderr_tail()}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def stderr_tail(self, size: int = 1500) -> str:
        return self.stderr.decode("utf-8", "replace")[-size:]

    def log_events(self, event: str) -> list[dict[str, Any]]:
        """The agent's JSON log lines named `event`."""
        found = []
        for line in self.stderr.decode("utf-8", "replace").splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and entry.get("event") == event:
                    found.append(entry)
        return found

    # ------------------------------------------------------------------ writing

    async def send_raw(self, data: bytes, *, probe: bool = True) -> None:
        """Write bytes as they are (a probe unless told otherwise)."""
        await self._write(data, Sent(data, probe))

    async def send(self, message: Any, *, probe: bool = False) -> None:
        await self._write(json.dumps(message).encode() + b"\n", Sent(message, probe))

    async def _write(self, data: bytes, entry: Sent) -> None:
        assert self.proc.stdin is not None
        self.sent.append(entry)
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def start_request(self, method: str, params: Any = None, *, probe: bool = False,
                            msg_id: Any = None) -> tuple[Any, asyncio.Future[dict[str, Any]]]:
        """Send a request; its id and the future of the whole response."""
        msg_id = next(self._ids) if msg_id is None else msg_id
        future = self._waiters[_id_key(msg_id)] = asyncio.get_running_loop().create_future()
        self._methods[_id_key(msg_id)] = method
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message, probe=probe)
        return msg_id, future

    async def request(self, method: str, params: Any = None, *, probe: bool = False,
                      msg_id: Any = None) -> dict[str, Any]:
        """Send a request and return the agent's whole response."""
        _, future = await self.start_request(method, params, probe=probe, msg_id=msg_id)
        return await self.response(future, method)

    async def response(self, future: asyncio.Future[dict[str, Any]], what: str
                       ) -> dict[str, Any]:
        try:
            return await asyncio.wait_for(future, STEP_TIMEOUT_S)
        except TimeoutError:
            raise ScenarioError(f"no response to {what} within {STEP_TIMEOUT_S} s; "
                                f"stderr: {self.stderr_tail()}") from None

    async def notify(self, method: str, params: Any) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def respond(self, request: dict[str, Any], result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def respond_error(self, request: dict[str, Any], code: int, message: str) -> None:
        await self.send({"jsonrpc": "2.0", "id": request["id"],
                         "error": {"code": code, "message": message}})

    # ---------------------------------------------------------------- lifecycle

    async def close(self) -> int:
        """Close stdin (the client's way to end the agent) and return its exit code."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.proc.stdin.wait_closed()
        try:
            code = await asyncio.wait_for(self.proc.wait(), STEP_TIMEOUT_S)
            await asyncio.wait_for(asyncio.gather(*self._readers), STEP_TIMEOUT_S)
        except TimeoutError:
            raise ScenarioError("the agent did not exit after its stdin closed") from None
        return code

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        for task in [*self._readers, *self._tasks]:
            task.cancel()
        await asyncio.gather(*self._readers, *self._tasks, return_exceptions=True)


def _id_key(msg_id: Any) -> Any:
    """A dict key for a JSON-RPC id that keeps 1 and "1" (and True) apart."""
    return (type(msg_id).__name__, msg_id)


# ------------------------------------------------------------------------ the session


@dataclass
class Turn:
    """A prompt turn: the response, and the session's updates written before it."""

    response: dict[str, Any]
    updates: list[dict[str, Any]]


@dataclass
class SessionRun:
    """Everything the scripted session saw."""

    records: list[Record] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> the response
    turns: dict[str, Turn] = field(default_factory=dict)
    replay: list[dict[str, Any]] = field(default_factory=list)  # updates of session/load
    editor: Editor = field(default_factory=Editor)
    exit_codes: list[int] = field(default_factory=list)
    bad_lines: list[bytes] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # failures of the scripted editor
    schema_violations: list[dict[str, Any]] = field(default_factory=list)  # the agent's logs

    @property
    def update_kinds(self) -> set[str]:
        return {r.payload["update"]["sessionUpdate"] for r in self.records
                if r.method == "session/update" and r.kind == "notification"}

    @property
    def error_codes(self) -> set[int]:
        return {r.payload.get("code") for r in self.records if r.kind == "error"}


def coverage_gaps(run: SessionRun) -> list[str]:
    """What the scripted session was meant to exercise and did not."""
    seen = {(r.method, r.direction) for r in run.records}
    gaps = [f"no {direction} message of {method}"
            for method, direction in sorted(expected_rows() - seen)]
    gaps += [f"no session/update of kind {kind}"
             for kind in sorted(emitted_update_kinds() - run.update_kinds)]
    gaps += [f"no error response with code {code}"
             for code in sorted(PROVOKED_ERRORS - run.error_codes)]
    return gaps


# The tool calls of the script: call id -> (tool, the editor's answer to its permission request;
# None: no request expected).
CALLS: Final[dict[str, tuple[str, str | _Hold | None]]] = {
    "call_read": ("read_file", "allow_once"),  # outside the roots, so the user is asked
    "call_write": ("write_file", "allow_once"),
    "call_edit": ("edit_file", "reject_once"),
    "call_run": ("run_command", "allow_always"),
    "call_list": ("list_directory", "reject_always"),  # outside the roots
    "call_search": ("search_files", "cancelled"),  # outside the roots; the client's own cancel
    "call_edit2": ("edit_file", "allow_once"),
    "call_slow": ("run_command", None),  # allowed always, earlier in the session
    "call_held": ("write_file", HOLD),  # answered after the agent's $/cancel_request
}
PNG_1X1: Final = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAA"
                  "AASUVORK5CYII=")


def _script(project: Path, outside: Path) -> list[Any]:
    """The model's replies, in the order the turns below consume them."""
    from acp_fsm.providers.scripted import Call, HttpError, Reply

    def call(call_id: str, **arguments: Any) -> Call:
        return Call(call_id, CALLS[call_id][0], json.dumps(arguments))

    slow = tuple(f"word{i} " for i in range(60))
    return [
        Reply(thinking=("Let me look ", "at the project first."),
              text=("I will read the notes, ", "write a module ", "and fix main.py."),
              calls=(call("call_read", path=str(outside / "notes.txt")),
                     call("call_write", path="hello.py", content="print('hello')\n"),
                     call("call_edit", path="main.py", old_text="x = 1", new_text="x = 2"))),
        Reply(text="The edit was rejected; the rest is done."),
        Reply(text="Running the tools.",
              calls=(call("call_run", command="echo hello"),
                     call("call_list", path=str(outside)),
                     call("call_search", pattern="note", path=str(outside)),
                     call("call_edit2", path=str(project / "main.py"), old_text="x = 1",
                          new_text="x = 3"))),
        Reply(text="All done."),
        Reply(calls=(call("call_slow", command="sleep 30", timeout_ms=300),)),
        Reply(text="The command timed out."),
        Reply(text=slow, delay_s=0.05),  # cancelled by session/cancel
        Reply(text="Writing it.", calls=(call("call_held", path="later.py", content="later\n"),)),
        Reply(text=slow, delay_s=0.05),  # cancelled by $/cancel_request
        Reply(text="Still here."),
        HttpError(500, "the scripted model is down"),  # the prompt fails (error with data)
    ]


def agent_env(home: Path, openai_base_url: str) -> dict[str, str]:
    """The agent's environment: the scripted provider, a private store, strict schemas, JSON
    logs, the `_acp_fsm/*` diagnostics; nothing inherited that would configure it otherwise."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACP_", "OPENAI_", "ANTHROPIC_"))}
    env.update(ACP_FSM_PROVIDER="openai", OPENAI_BASE_URL=openai_base_url,
               OPENAI_API_KEY="sk-schema-check", ACP_FSM_HOME=str(home),
               ACP_FSM_MAX_RETRIES="0", ACP_FSM_STRICT_SCHEMAS="1", ACP_FSM_DEBUG_METHODS="1",
               ACP_FSM_LOG_FORMAT="json", ACP_FSM_LOG_LEVEL="info")
    return env


class _Session:
    """The steps of the scripted session, on one run's state."""

    def __init__(self, run: SessionRun, workdir: Path) -> None:
        self.run = run
        self.project = workdir / "project"
        self.extra = workdir / "extra"
        self.outside = workdir / "outside"
        for directory in (self.project, self.extra, self.outside):
            directory.mkdir(parents=True, exist_ok=True)
        (self.project / "main.py").write_text("x = 1\n", encoding="utf-8")
        (self.outside / "notes.txt").write_text("a note\nanother note\n", encoding="utf-8")
        run.editor.permissions.update(
            {call_id: answer for call_id, (_, answer) in CALLS.items() if answer is not None})

    async def step(self, link: AgentLink, name: str, method: str, params: Any = None,
                   **options: Any) -> dict[str, Any]:
        response = await link.request(method, params, **options)
        self.run.steps[name] = response
        return response

    async def probe_line(self, link: AgentLink, name: str, data: bytes) -> None:
        """Write a malformed line; its answer is the next response with an id the client
        never used."""
        start = len(link.messages)
        await link.send_raw(data)
        self.run.steps[name] = await link.wait_for(
            f"the answer to {data!r}",
            lambda m: "method" not in m and m.get("id") in (None, "probe"), start)

    async def handshake(self, link: AgentLink) -> None:
        cwd = str(self.project)
        await self.step(link, "before_initialize", "session/new",
                        {"cwd": cwd, "mcpServers": []}, probe=True)
        await self.step(link, "initialize", "initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                                   "terminal": True},
            "clientInfo": {"name": "acp-fsm-schema-check", "version": "1"}})
        await self.step(link, "initialize_again", "initialize", {"protocolVersion": 1},
                        probe=True)
        await self.step(link, "authenticate", "authenticate", {"methodId": "none"})
        await self.step(link, "unknown_method", "no/such_method", {}, probe=True)
        await self.step(link, "logout", "logout", {})
        await self.probe_line(link, "parse_error", b'{"jsonrpc": "2.0", "id": 1, \n')
        await self.probe_line(link, "invalid_request",
                              b'{"jsonrpc": "2.0", "id": "probe", "method": 5}\n')
        await self.probe_line(link, "empty_batch", b"[]\n")
        await self.step(link, "invalid_params", "session/new",
                        {"cwd": "relative/dir", "mcpServers": []}, probe=True)
        await self.step(link, "unknown_session", "session/prompt", {
            "sessionId": "sess_missing", "prompt": [{"type": "text", "text": "hi"}]})

    async def new_session(self, link: AgentLink) -> str:
        response = await self.step(link, "session/new", "session/new", {
            "cwd": str(self.project), "additionalDirectories": [str(self.extra)],
            "mcpServers": [{"name": "files", "command": "/usr/bin/env",
                            "args": ["mcp-files"], "env": [{"name": "MODE", "value": "ro"}]}]})
        if "result" not in response:
            raise ScenarioError(f"session/new failed: {response}")
        session_id = str(response["result"]["sessionId"])
        await self.step(link, "set_mode", "session/set_mode",
                        {"sessionId": session_id, "modeId": "code"})
        await self.step(link, "set_config_option", "session/set_config_option",
                        {"sessionId": session_id, "configId": "model", "value": "fast"})
        return session_id

    async def prompt(self, link: AgentLink, name: str, session_id: str, blocks: list[Any],
                     interrupt: Callable[[Any, int], Awaitable[None]] | None = None) -> Turn:
        """One turn; `interrupt(prompt id, start index)` runs while it streams."""
        start = len(link.messages)
        msg_id, future = await link.start_request(
            "session/prompt", {"sessionId": session_id, "prompt": blocks})
        if interrupt is not None:
            await interrupt(msg_id, start)
        response = await link.response(future, f"the prompt of turn {name}")
        end = next(i for i, m in enumerate(link.messages) if m is response)
        turn = Turn(response, _updates(link.messages[start:end], session_id))
        self.run.steps[name] = response
        self.run.turns[name] = turn
        return turn

    async def turns(self, link: AgentLink, session_id: str) -> None:
        text = {"type": "text", "text": "Tidy up the project, please."}
        await self.prompt(link, "prompt_content", session_id, [
            text,
            {"type": "resource_link", "uri": (self.project / "main.py").as_uri(),
             "name": "main.py", "mimeType": "text/x-python"},
            {"type": "resource", "resource": {"uri": (self.project / "README.md").as_uri(),
                                              "mimeType": "text/markdown",
                                              "text": "# Project\n"}},
            {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
        ])
        await self.prompt(link, "prompt_tools", session_id, [text])
        await self.prompt(link, "prompt_terminal_timeout", session_id, [text])

        async def first_chunk(start: int) -> None:
            await link.wait_for("the first streamed chunk", lambda m: _is_update(
                m, session_id, "agent_message_chunk"), start)

        async def session_cancel(msg_id: Any, start: int) -> None:
            await first_chunk(start)
            await self.step(link, "prompt_while_running", "session/prompt",
                            {"sessionId": session_id, "prompt": [text]})
            await link.notify("session/cancel", {"sessionId": session_id})

        async def cancel_permission(msg_id: Any, start: int) -> None:
            await link.wait_for("the held permission request", lambda m: m.get(
                "method") == "session/request_permission", start)
            await link.notify("session/cancel", {"sessionId": session_id})

        async def cancel_request(msg_id: Any, start: int) -> None:
            await first_chunk(start)
            await link.notify("$/cancel_request", {"requestId": msg_id})

        await self.prompt(link, "prompt_cancel", session_id, [text], session_cancel)
        await self.prompt(link, "prompt_cancel_permission", session_id, [text],
                          cancel_permission)
        await self.prompt(link, "prompt_cancel_request", session_id, [text], cancel_request)
        await self.prompt(link, "prompt_after_cancels", session_id, [text])
        await self.prompt(link, "prompt_provider_error", session_id, [text])
        # A request the agent stops on `$/cancel_request` is answered -32800. Its prompts stop
        # themselves (stopReason cancelled), so the diagnostic `_acp_fsm/sleep` shows that error.
        msg_id, future = await link.start_request("_acp_fsm/sleep", {"ms": 5000})
        await link.notify("$/cancel_request", {"requestId": msg_id})
        self.run.steps["sleep_cancel_request"] = await link.response(future, "_acp_fsm/sleep")

    async def sessions(self, link: AgentLink) -> list[str]:
        """Enough sessions for two pages of session/list; close one, delete one."""
        pending = [await link.start_request("session/new", {
            "cwd": str(self.extra), "mcpServers": []}) for _ in range(EXTRA_SESSIONS)]
        created = [await link.response(future, "session/new") for _, future in pending]
        ids = [str(r["result"]["sessionId"]) for r in created if "result" in r]
        if len(ids) != EXTRA_SESSIONS:
            raise ScenarioError(f"session/new failed: {created[0]}")
        # session/list shows only sessions that hold a prompt: give each one
        prompts = [await link.start_request("session/prompt", {
            "sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]})
            for session_id in ids]
        for _, future in prompts:
            await link.response(future, "a prompt of an extra session")
        first = await self.step(link, "list", "session/list", {})
        cursor = first.get("result", {}).get("nextCursor")
        if not isinstance(cursor, str):
            raise ScenarioError(f"session/list gave no cursor for {EXTRA_SESSIONS + 1} sessions:"
                                f" {json.dumps(first)[:300]}")
        await self.step(link, "list_next", "session/list", {"cursor": cursor})
        await self.step(link, "close", "session/close", {"sessionId": ids[0]})
        await self.step(link, "prompt_closed", "session/prompt", {
            "sessionId": ids[0], "prompt": [{"type": "text", "text": "hi"}]})
        await self.step(link, "delete", "session/delete", {"sessionId": ids[1]})
        await self.step(link, "delete_again", "session/delete", {"sessionId": ids[1]})
        return ids

    async def reload(self, link: AgentLink, session_id: str, other: str) -> None:
        """A second process: load with replay, resume, list for one directory."""
        await self.step(link, "initialize_reload", "initialize", {
            "protocolVersion": 1, "clientCapabilities": {}})
        start = len(link.messages)
        response = await self.step(link, "load", "session/load", {
            "sessionId": session_id, "cwd": str(self.project), "mcpServers": []})
        end = next(i for i, m in enumerate(link.messages) if m is response)
        self.run.replay = _updates(link.messages[start:end], session_id)
        await self.step(link, "resume", "session/resume", {
            "sessionId": other, "cwd": str(self.extra), "mcpServers": []})
        await self.step(link, "load_unknown", "session/load", {
            "sessionId": "sess_missing", "cwd": str(self.project), "mcpServers": []})
        await self.step(link, "list_cwd", "session/list", {"cwd": str(self.project)})


def _is_update(message: dict[str, Any], session_id: str, kind: str) -> bool:
    params = message.get("params")
    return (message.get("method") == "session/update" and isinstance(params, dict)
            and params.get("sessionId") == session_id
            and params.get("update", {}).get("sessionUpdate") == kind)


def _updates(messages: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in messages
            if m.get("method") == "session/update" and "id" not in m
            and m["params"].get("sessionId") == session_id]


async def run_session(workdir: Path) -> SessionRun:
    """Drive two agent processes through the scripted session (files go under `workdir`)."""
    from acp_fsm.providers.scripted import Reply, ScriptedProvider

    run = SessionRun()
    session = _Session(run, workdir)
    async with ScriptedProvider(*_script(session.project, session.outside),
                                fallback=Reply(text="Noted.")) as server:
        env = agent_env(workdir / "home", server.openai_base_url)

        async def in_process(work: Callable[[AgentLink], Awaitable[Any]]) -> Any:
            link = await AgentLink.start(env, run.editor, run.records, run.sent)
            try:
                result = await work(link)
                run.exit_codes.append(await link.close())
                return result
            finally:
                await link.kill()
                run.bad_lines += link.bad_lines
                run.client_errors += link.task_errors
                run.schema_violations += link.log_events("outbound_schema_violation")

        async def first(link: AgentLink) -> tuple[str, list[str]]:
            await session.handshake(link)
            session_id = await session.new_session(link)
            await session.turns(link, session_id)
            return session_id, await session.sessions(link)

        session_id, others = await in_process(first)
        await in_process(lambda link: session.reload(link, session_id, others[2]))
    return run


# ------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fsm schema-check",
        description="Run a scripted session against the agent and check every message it "
                    "writes against the official ACP schema and the project's own schemas.")
    parser.add_argument("--schema", metavar="PATH",
                        help=f"the official schema.json (default: ${SCHEMA_ENV}, else "
                             f"../{SHARED_SCHEMA} beside the checkout)")
    parser.add_argument("--all", action="store_true", help="print every failure, not 20")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    path = locate_schema(args.schema)
    if path is None:
        tried = ", ".join(str(p) for p in schema_candidates(args.schema))
        print(f"acp-fsm schema-check: the official ACP schema was not found (looked in: "
              f"{tried}). Pass --schema or set {SCHEMA_ENV} to its schema.json; "
              f"{HOW_TO_GET_SCHEMA}", file=sys.stderr)
        return 2
    official = OfficialSchema.load(path)
    with tempfile.TemporaryDirectory(prefix="acp-fsm-schema-check-") as workdir:
        try:
            run = asyncio.run(run_session(Path(workdir)))
        except ScenarioError as exc:
            print(f"acp-fsm schema-check: the scripted session failed: {exc}", file=sys.stderr)
            return 1
    report = check_records(Checker(official), run.records)
    gaps = coverage_gaps(run)
    print(f"official schema: {path}")
    print(report.table())
    shown = report.failures if args.all else report.failures[:20]
    for failure in shown:
        print(f"FAIL {failure}")
    if len(shown) < len(report.failures):
        print(f"... and {len(report.failures) - len(shown)} more failures (--all)")
    for gap in gaps:
        print(f"NOT EXERCISED {gap}")
    return 0 if report.ok and not gaps else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
