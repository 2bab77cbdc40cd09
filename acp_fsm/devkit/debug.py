"""The diagnostic extension methods (`_acp_fsm/*`, `schemas/acp_fsm_methods.json`).

Served when `ACP_FSM_DEBUG_METHODS=1`: the command line then has `install` add them to the
server before its first message is read. Tests and benchmarks use them to reach what no ACP
method does on demand: an agent-to-client request with a chosen limit or cancel
(`call_client`), a handler that takes a while (`sleep`), output a handler must not get onto
the protocol's stdout (`stray_output`), a burst of updates (`stream_updates`), the modules
imported so far (`modules`: what a request made the process import).

With them, `ACP_FSM_DEBUG_HOLD_CHANGES=<n>` holds every set of file changes (a patch, a write
on disk) once its n-th file is changed: its thread waits for good and the log says
`change_set_held`, so a test can kill the process in the middle of a patch
(`acp_fsm.system.changes`; tests/e2e/test_durability.py).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from functools import partial
from typing import Any

import structlog

from acp_fsm import schemas
from acp_fsm.methods import ACP, AGENT_TO_CLIENT, index
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.errors import (
    CapabilityMissing,
    ConnectionClosed,
    InvalidParams,
    InvalidResult,
    OutboundCancelled,
    OutboundTimeout,
    RemoteError,
)
from acp_fsm.server import AcpServer
from acp_fsm.system import changes

SPECS = index("acp_fsm_methods.json", "acp_fsm")
HOLD_CHANGES = "ACP_FSM_DEBUG_HOLD_CHANGES"

log = structlog.get_logger("acp.devkit")


def install(server: AcpServer) -> None:
    """Serve the diagnostic methods on `server`'s connection."""
    server.extend(
        SPECS,
        {
            "_acp_fsm/call_client": partial(call_client, server),
            "_acp_fsm/modules": modules,
            "_acp_fsm/sleep": sleep,
            "_acp_fsm/stray_output": stray_output,
            "_acp_fsm/stream_updates": partial(stream_updates, server),
        },
    )
    held = os.environ.get(HOLD_CHANGES, "")
    if held:
        changes.after_change = partial(_hold_change_set, int(held))


def _hold_change_set(count: int, index: int) -> None:
    """After the `count`-th file of a set is changed, wait until the process is killed."""
    if index + 1 == count:
        log.warning("change_set_held", changed=count)
        threading.Event().wait()


async def call_client(server: AcpServer, params: dict[str, Any]) -> dict[str, Any]:
    """Send the client request `params.method` and say how it ended, and after how long."""
    method = params["method"]
    spec = ACP.get(method)
    if spec is None or spec.direction != AGENT_TO_CLIENT or spec.kind != "request":
        raise InvalidParams(f"Invalid params: method: {method!r} is not a client request")
    inner = params.get("params")
    violation = schemas.validate(spec.params_ref, inner)
    if violation is not None:
        raise InvalidParams(f"Invalid params: params.{violation}")
    token = CancellationToken("debug")
    if "cancelAfterMs" in params:
        asyncio.get_running_loop().call_later(params["cancelAfterMs"] / 1000, token.cancel)
    started = time.monotonic()
    outcome: dict[str, Any]
    try:
        result = await server.call_client(
            method, inner, token=token, timeout_ms=params.get("timeoutMs")
        )
        outcome = {"outcome": "result", "result": result}
    except RemoteError as exc:
        error = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        outcome = {"outcome": "error", "error": error}
    except InvalidResult as exc:
        outcome = {"outcome": "invalid", "reason": str(exc)}
    except OutboundTimeout:
        outcome = {"outcome": "timeout"}
    except OutboundCancelled:
        outcome = {"outcome": "cancelled"}
    except ConnectionClosed:
        outcome = {"outcome": "closed"}
    except CapabilityMissing:
        outcome = {"outcome": "unsupported"}
    outcome["elapsedMs"] = round((time.monotonic() - started) * 1000, 3)
    return outcome


async def modules(params: Any) -> dict[str, Any]:
    """The names of the modules imported so far, sorted."""
    return {"modules": sorted(sys.modules)}


async def sleep(params: dict[str, Any]) -> dict[str, Any]:
    """Answer after `params.ms` milliseconds."""
    started = time.monotonic()
    await asyncio.sleep(params["ms"] / 1000)
    return {"sleptMs": round((time.monotonic() - started) * 1000, 3)}


async def stray_output(params: Any) -> dict[str, Any]:
    """Write to stdout every way a handler or its child might."""
    print("stray print() from a handler")
    sys.stdout.write("stray sys.stdout.write\n")
    sys.stdout.flush()
    os.write(1, b"stray write to fd 1\n")
    child = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        "echo stray output of a child process; echo to fd 1 >&1",
        stdin=asyncio.subprocess.DEVNULL,
    )
    return {"childExitCode": await child.wait()}


async def stream_updates(server: AcpServer, params: dict[str, Any]) -> dict[str, Any]:
    """Send `params.count` text chunks to `params.sessionId` as fast as the output takes them."""
    started = time.monotonic()
    update = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": params["text"]},
    }
    message = {"sessionId": params["sessionId"], "update": update}
    sent = 0
    for sent in range(1, params["count"] + 1):
        if not server.conn.notify("session/update", message):
            break
        if sent % 256 == 0:
            await server.conn.drain()
    return {"sent": sent, "elapsedMs": round((time.monotonic() - started) * 1000, 3)}
