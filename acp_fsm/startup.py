"""`acp-fsm` with no arguments: serve ACP on stdin/stdout.

Startup is ordered for a fast `initialize` (editors time out on slow agents):
1. claim stdout (protocol frames go to a private fd; fd 1 becomes stderr);
2. read the first line; if it is a valid `initialize`, answer it right away using only the
   method registry, a plain-Python schema check (`schemas.plain`) and the handshake table -
   no event loop, no logging library, no native validator, nothing heavy imported yet;
3. then, if the next line comes within `early_session.WAIT_S` and is a `session/new` that
   can be served here, create the session (its row in the store's file, by `sqlite3`) and
   answer it the same way (`acp_fsm.early_session`);
4. configure logging, import the rest, and run the asyncio connection, which takes over any
   bytes already read.
Anything other than a clean `initialize` on the first line (or a `session/new` that can be
served here on the second) is left to the full path, which answers it (and logs) exactly as
it would any later message.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

from acp_fsm.fsm.handshake import Handshake, HandshakeTrigger
from acp_fsm.handover import Handover
from acp_fsm.initialize import initialize_result
from acp_fsm.methods import PROTOCOL
from acp_fsm.protocol.errors import RpcError
from acp_fsm.protocol.framing import MAX_LINE_BYTES
from acp_fsm.protocol.stdio import claim_stdout, read_line_blocking, write_all
from acp_fsm.schemas.plain import surely_valid
from acp_fsm.versions import V1, negotiated

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from acp_fsm.app import Extension
    from acp_fsm.early_session import FirstSession


def answer_initialize(line: bytes, handshake: Handshake) -> tuple[bytes, dict[str, Any]] | None:
    """The response line and the client's params when `line` is a valid `initialize` request,
    `handshake` then moved by its `initialize` trigger; None for anything else (`handshake`
    untouched), which the full path then answers exactly as it would any later line. Hostile
    input (nesting deep enough to exhaust the stack, say) is "anything else"."""
    try:
        return _answer_initialize(line, handshake)
    except (RecursionError, MemoryError):
        return None


# Escapes of UTF-16 surrogates: the full path's decoder (orjson) refuses a lone one, the
# standard library's accepts it. A line with any is left to the full path.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_INT64_MIN, _UINT64_MAX = -(2**63), 2**64 - 1
# More brackets than this (an upper bound of the nesting depth, strings included) and the line
# is left to the full path: orjson stops at 1024 levels, the standard library at a depth that
# depends on the Python version.
_MAX_BRACKETS = 256


def _refuse(text: str) -> None:
    raise ValueError(f"{text} is left to the full path")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        _refuse(text)  # orjson refuses numbers that overflow to infinity
    return value


def _int64(text: str) -> int:
    value = int(text)
    if not _INT64_MIN <= value <= _UINT64_MAX:
        _refuse(text)  # orjson reads these as floats
    return value


def _decode(line: bytes) -> object:
    """The line as the full path's decoder would read it, or ValueError where the two might
    differ. The standard library's decoder, because importing orjson costs ~10 ms here."""
    if _SURROGATE_ESCAPE.search(line):
        _refuse("a surrogate escape")
    if line.count(b"[") + line.count(b"{") > _MAX_BRACKETS:
        _refuse("deep nesting")
    return json.loads(
        line.decode("utf-8"), parse_constant=_refuse, parse_float=_finite, parse_int=_int64
    )


def _routed(
    line: bytes, handshake: Handshake, method: str, params_type: str
) -> tuple[object, Any, HandshakeTrigger | None] | None:
    """The id, params (of the request type `params_type` names) and handshake trigger of
    `line` when it is a valid `method` request which the handshake's state admits; None for
    anything else."""
    try:
        message = _decode(line)
    except ValueError:
        return None
    if not surely_valid("jsonrpc.Request", message):
        return None
    assert isinstance(message, dict)  # a valid Request is an object
    if isinstance(message["id"], float):
        return None  # the two encoders spell some floats differently (1e-05, 0.00001)
    if message["method"] != method:
        return None
    params = message.get("params")
    if not surely_valid(params_type, params):
        return None
    assert isinstance(params, dict)  # a valid request's params are an object
    try:
        entry = PROTOCOL.route(handshake.state, method, params, request=True, params_checked=True)
    except RpcError:
        return None
    return message["id"], params, entry.fires(params)


def _line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _response(request_id: object, result: Mapping[str, Any]) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


def _answer_initialize(line: bytes, handshake: Handshake) -> tuple[bytes, dict[str, Any]] | None:
    routed = _routed(line, handshake, "initialize", "acp.InitializeRequest")
    if routed is None:
        return None
    request_id, params, trigger = routed
    assert trigger is not None
    handshake.fire(trigger)  # the transition before the side effect (the answer)
    return _response(request_id, initialize_result(params)), params


def answer_session_new(line: bytes, handshake: Handshake) -> tuple[bytes, FirstSession] | None:
    """The response line, the announcement of the session's slash commands that follows it
    (scrubbed as the full path's output is) and the session when `line` is a `session/new`
    the startup path can serve (`early_session.create`); None for anything else, which the
    full path answers exactly as it would any later line."""
    try:
        routed = _routed(line, handshake, "session/new", "acp.NewSessionRequest")
    except (RecursionError, MemoryError):
        return None
    if routed is None:
        return None
    from acp_fsm import early_session, redact

    request_id, params, trigger = routed
    assert trigger is None  # a session moves no handshake
    first = early_session.create(params)
    if first is None:
        return None
    update = {"jsonrpc": "2.0", "method": "session/update", "params": first.announcement}
    return redact.scrub(_response(request_id, first.answer) + _line(update)), first


def _exit_quietly(signum: int, _frame: object) -> None:
    # Before the event loop runs there is no session or turn to save: leave at once, code 0.
    raise SystemExit(0)


TTY_HINT = (
    "acp-fsm: an Agent Client Protocol agent; editors start it and speak JSON-RPC "
    "on stdin/stdout. Try `acp-fsm demo` or `acp-fsm --help`; Ctrl+D exits.\n"
)


def serve(extensions: Sequence[Extension] = ()) -> int:
    """Run the ACP server on stdio until stdin closes; returns the exit code. `extensions`
    add methods to the server once the startup path is done (`app.run`)."""
    started = time.perf_counter()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _exit_quietly)
    protocol_fd = claim_stdout()
    person = os.isatty(0)
    if person:  # a person at a terminal, not an editor: say what this is
        sys.stderr.write(TTY_HINT)
    handover = Handover()
    handshake = Handshake()
    line, rest, ended = read_line_blocking(0, MAX_LINE_BYTES)
    early = answer_initialize(line, handshake) if line is not None else None
    if early is None:
        rest = rest if line is None else line + b"\n" + rest
    else:
        handover.client = early[1]
        handover.initialize_ms = _written(protocol_fd, early[0], started)
        # the first session: answered here on v1 (a v2 session is answered as v2 says)
        v1 = negotiated(early[1]) == V1
        if handover.initialize_ms is not None and v1 and not (person or ended):
            rest, ended = _after_initialize(rest, handshake, protocol_fd, handover, started)

    from acp_fsm import logs

    # The hint is all a person needs to read; ACP_FSM_LOG_LEVEL still applies when set.
    logs.configure("warning" if person and "ACP_FSM_LOG_LEVEL" not in os.environ else None)
    import asyncio

    from acp_fsm.app import run

    return asyncio.run(
        run(protocol_fd, rest, handshake, handover, input_ended=ended, extensions=extensions)
    )


def _written(fd: int, data: bytes, started: float) -> float | None:
    """Milliseconds after `started` when `data` was written to `fd`; None when it could not be
    (nobody reads our output: the full path sees it and exits)."""
    try:
        write_all(fd, data)
    except OSError:
        return None
    return (time.perf_counter() - started) * 1000


def _after_initialize(
    rest: bytes, handshake: Handshake, fd: int, handover: Handover, started: float
) -> tuple[bytes, bool]:
    """The request after `initialize`, answered here when it is a `session/new` the startup
    path serves (`answer_session_new`); what is left for the full path: every byte read and
    not answered, and whether input ended."""
    from acp_fsm import early_session

    line, rest, ended = read_line_blocking(0, MAX_LINE_BYTES, rest, early_session.WAIT_S)
    if line is None:
        return rest, ended
    answered = answer_session_new(line, handshake)
    if answered is None:
        return line + b"\n" + rest, ended
    handover.first_session = answered[1]
    handover.session_ms = _written(fd, answered[0], started)
    return rest, ended
