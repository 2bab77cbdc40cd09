"""`acp-fsm` with no arguments: serve ACP on stdin/stdout.

Startup is ordered for a fast `initialize` (editors time out on slow agents):
1. claim stdout (protocol frames go to a private fd; fd 1 becomes stderr);
2. read the first line; if it is a valid `initialize`, answer it right away using only the
   method registry, a plain-Python schema check (`schemas.plain`) and the handshake table -
   no event loop, no logging library, no native validator, nothing heavy imported yet;
3. configure logging, import the rest, and run the asyncio connection, which takes over any
   bytes already read.
Anything other than a clean `initialize` on the first line is left to the full path, which
answers it (and logs) exactly as it would any later message.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

from acp_fsm.fsm.handshake import Handshake
from acp_fsm.initialize import initialize_result
from acp_fsm.methods import PROTOCOL
from acp_fsm.protocol.errors import RpcError
from acp_fsm.protocol.framing import MAX_LINE_BYTES
from acp_fsm.protocol.stdio import claim_stdout, read_line_blocking, write_all
from acp_fsm.schemas.plain import surely_valid

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from acp_fsm.app import Extension


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


def _answer_initialize(line: bytes, handshake: Handshake) -> tuple[bytes, dict[str, Any]] | None:
    try:
        message = _decode(line)
    except ValueError:
        return None
    if not surely_valid("jsonrpc.Request", message):
        return None
    assert isinstance(message, dict)  # a valid Request is an object
    if isinstance(message["id"], float):
        return None  # the two encoders spell some floats differently (1e-05, 0.00001)
    if message["method"] != "initialize":
        return None
    params = message.get("params")
    if not surely_valid("acp.InitializeRequest", params):
        return None
    assert isinstance(params, dict)  # a valid InitializeRequest is an object
    try:
        entry = PROTOCOL.route(
            handshake.state, "initialize", params, request=True, params_checked=True
        )
    except RpcError:
        return None
    result = initialize_result(params)
    assert entry.trigger is not None
    handshake.fire(entry.trigger)  # the transition before the side effect (the answer)
    response = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return json.dumps(response, separators=(",", ":"), ensure_ascii=False).encode() + b"\n", params


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
    first, rest, ended = read_line_blocking(0, MAX_LINE_BYTES)
    handshake = Handshake()
    early = answer_initialize(first, handshake) if first is not None else None
    answered_ms = None
    if early is not None:
        try:
            write_all(protocol_fd, early[0])
            answered_ms = (time.perf_counter() - started) * 1000
        except OSError:  # nobody reads our output: the full path sees it and exits
            pass
    elif first is not None:
        rest = first + b"\n" + rest

    from acp_fsm import logs

    # The hint is all a person needs to read; ACP_FSM_LOG_LEVEL still applies when set.
    logs.configure("warning" if person and "ACP_FSM_LOG_LEVEL" not in os.environ else None)
    import asyncio

    from acp_fsm.app import run

    return asyncio.run(
        run(
            protocol_fd,
            rest,
            handshake,
            early[1] if early else None,
            answered_ms,
            input_ended=ended,
            extensions=extensions,
        )
    )
