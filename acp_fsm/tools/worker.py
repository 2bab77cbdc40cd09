"""Child processes for the tools' work that must not run on the event loop: a search's regular
expression (`re` holds the GIL for a whole match) and a fetched page's conversion (parsing
megabytes of HTML in Python). A thread would still stall the loop; a child can also be killed
at once and gives its memory back when it ends.

A worker is `python -P -m MODULE` in a process group of its own, with its own pipes (never the
agent's stdout). It reads its request from stdin and answers one JSON object on stdout,
`{"output": text}` or `{"error": text}` (what the model reads). The agent kills it when the
call is cancelled or its time is up; the reaper does when the agent dies; SIGALRM ends it a
little after its time should the agent be gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import resource
import signal
import subprocess
import sys
from collections.abc import Callable

from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.redact import command_environment
from acp_fsm.system.groups import signal_group
from acp_fsm.system.reaper import REAPER
from acp_fsm.tools.common import ToolError, describe_os_error

# How long a killed worker's exit is awaited; the event loop's child watcher reaps it later.
WORKER_REAP_SECONDS = 1.0
# The worker's stderr (a traceback when it crashed) shown to the model, at most.
WORKER_ERROR_CHARS = 500
# How long after its time limit a worker ends itself.
SELF_STOP_GRACE_SECONDS = 5


def command(module: str) -> tuple[str, ...]:
    """The command line of the worker `module`. -P: the cwd (which may be the user's project)
    is not put on sys.path, so no project module can shadow one the worker imports."""
    return (sys.executable, "-P", "-m", module)


async def _stop(worker: asyncio.subprocess.Process) -> None:
    """Kill the worker's process group if it still runs, and wait (bounded) for its exit."""
    if worker.returncode is None:
        signal_group(worker.pid, signal.SIGKILL)
    REAPER.stopped(worker.pid)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(worker.wait(), WORKER_REAP_SECONDS)


async def run_worker(
    module: str, request: bytes, *, time_limit: float, token: CancellationToken, what: str
) -> str:
    """The output of the worker `module` for `request`: `ToolError` for its error answer or a
    crash (`what` names the work: "the search"), `TimeoutError` after `time_limit` seconds and
    `Cancelled` when `token` fires (the worker killed in both)."""
    try:
        worker = await asyncio.create_subprocess_exec(
            *command(module),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=command_environment(),
        )
    except OSError as exc:
        raise ToolError(f"Could not start {what}: {describe_os_error(exc)}") from exc
    REAPER.started(worker.pid)
    try:
        stdout, stderr = await token.race(asyncio.wait_for(worker.communicate(request), time_limit))
    finally:
        await _stop(worker)
    try:
        reply = json.loads(stdout)
    except ValueError:
        reply = None
    if isinstance(reply, dict) and isinstance(reply.get("error"), str):
        raise ToolError(reply["error"])
    if isinstance(reply, dict) and isinstance(output := reply.get("output"), str):
        return output
    detail = stderr.decode("utf-8", "replace").strip()[-WORKER_ERROR_CHARS:]
    failed = f"{what[:1].upper()}{what[1:]} failed"
    raise ToolError(f"{failed} (exit status {worker.returncode}): {detail or 'no answer'}")


def serve(
    answer: Callable[[bytes], dict[str, str]],
    time_limit: float,
    memory_limit: int | None = None,
) -> int:
    """The worker's side: `answer` to the request on stdin, written on stdout. The worker ends
    itself a little after `time_limit`; with `memory_limit` (bytes of address space) an
    allocation beyond it fails with MemoryError, for `answer` to report."""
    signal.alarm(math.ceil(time_limit) + SELF_STOP_GRACE_SECONDS)
    request = sys.stdin.buffer.read()
    if memory_limit is not None:  # the soft limit: a lower one set for the agent stays
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, hard))
    sys.stdout.write(json.dumps(answer(request)))
    sys.stdout.flush()
    return 0
