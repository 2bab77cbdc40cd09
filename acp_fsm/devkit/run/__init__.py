"""`acp-fsm run`: one prompt without an editor, for scripts, CI and benchmarks (docs/run.md).

It drives an `acp-fsm` child over ACP like any editor (`peer.Peer`), so the prompt runs
through the same sessions, turns, tools, rules, hooks and providers: `initialize` says nobody
answers permission requests (`clientCapabilities._meta.acpFsm.unattended`), so a call that
would ask is refused with the rule that would allow it, which the model reads; `--allow` and
`--deny` rules reach the agent as `ACP_FSM_RULES`. The session is stored like an editor's
(`--continue`, `--session`), unless `--no-store` deletes it at the end. What it shows: `view`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any, Final

from acp_fsm import __version__
from acp_fsm.devkit.run.options import Options, UsageError, parse
from acp_fsm.devkit.run.peer import AgentError, AgentGone, Peer
from acp_fsm.devkit.run.view import JsonView, TextView, View

# The exit status of each outcome.
EXIT: Final = {
    "end_turn": 0,
    "error": 1,
    "usage": 2,
    "refusal": 3,
    "max_tokens": 4,
    "max_turn_requests": 5,
    "cancelled": 130,
}
UNATTENDED: Final = {"acpFsm": {"unattended": True}}
# JSON-RPC errors that say the run's arguments were wrong (a session that is not there, a mode
# or model the agent does not have): exit 2; any other is the agent's failure: exit 1.
BAD_PARAMS: Final = frozenset({-32602, -32002})


def main(argv: list[str]) -> int:
    try:
        options = parse(argv, sys.stdin)
    except UsageError as exc:
        print(f"acp-fsm run: {exc}", file=sys.stderr)
        return EXIT["usage"]
    return asyncio.run(_run(options))


@dataclass
class Run:
    """One run's state, as its pieces see it."""

    options: Options
    view: View
    session: str | None = None
    prompting: bool = False
    answered: bool = False  # the turn's answer came: nothing is shown after it
    interrupts: int = 0


async def _run(options: Options) -> int:
    view: View = JsonView() if options.json else TextView()
    run = Run(options, view)
    env = dict(os.environ)
    if options.rules:
        env["ACP_FSM_RULES"] = json.dumps(options.rules)
    peer = await Peer.spawn(
        env, options.cwd, lambda m, p: _notified(run, m, p), _asked, echo_log=options.verbose
    )
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    assert main_task is not None
    for signum in (signal.SIGINT, signal.SIGTERM):  # CI's `timeout` sends SIGTERM
        loop.add_signal_handler(signum, _interrupted, run, peer, main_task)
    try:
        return await _drive(run, peer)
    except asyncio.CancelledError:  # the second Ctrl-C
        view.error(EXIT["cancelled"], "interrupted")
        return EXIT["cancelled"]
    except AgentGone as exc:
        view.error(EXIT["error"], f"the agent exited: {exc}")
        return EXIT["error"]
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
        view.close()
        if peer.proc.returncode is None:
            await peer.close()


async def _drive(run: Run, peer: Peer) -> int:
    options, view = run.options, run.view
    await peer.request(
        "initialize",
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": False, "writeTextFile": False},
                "terminal": False,
                "session": {"notices": {}},  # the agent's notices, apart from the answer
                "_meta": UNATTENDED,
            },
            "clientInfo": {"name": "acp-fsm run", "version": __version__},
        },
    )
    try:
        run.session = await _open(peer, options)
        if options.mode is not None:
            await peer.request(
                "session/set_mode", {"sessionId": run.session, "modeId": options.mode}
            )
        if options.model is not None:
            params = {"sessionId": run.session, "modelId": options.model}
            await peer.request("session/set_model", params)
    except AgentError as exc:  # a session, mode or model the agent refused; or its failure
        status = EXIT["usage"] if exc.code in BAD_PARAMS else EXIT["error"]
        view.error(status, str(exc))
        return status
    except _NoSession as exc:
        view.error(EXIT["usage"], str(exc))
        return EXIT["usage"]
    run.prompting = True
    try:
        answer = await peer.request(
            "session/prompt",
            {"sessionId": run.session, "prompt": [{"type": "text", "text": options.prompt}]},
        )
    except AgentError as exc:
        detail = f" ({exc.data})" if exc.data else ""
        view.error(EXIT["error"], f"{exc}{detail}")
        return EXIT["error"]
    finally:
        run.prompting = False
        run.answered = True
        if options.no_store:  # whatever the outcome: nothing of the run is left
            with contextlib.suppress(AgentError, AgentGone):
                await peer.request("session/delete", {"sessionId": run.session})
    meta = (answer.get("_meta") or {}).get("acpFsm") or {}
    stop = answer["stopReason"]
    result = {"sessionId": run.session, "stopReason": stop, "usage": meta.get("usage")}
    if cost := meta.get("sessionCost"):
        result["cost"] = cost
    if options.no_store:
        result["stored"] = False
    view.result(result)
    return EXIT.get(stop, EXIT["error"])


class _NoSession(Exception):
    """`--continue` found no session of this folder."""


async def _open(peer: Peer, options: Options) -> str:
    """The run's session: a given one, the folder's last one, or a new one."""
    base = {"cwd": str(options.cwd), "mcpServers": options.mcp_servers}
    wanted = options.session
    if options.resume_last:
        listed = await peer.request("session/list", {"cwd": str(options.cwd)})
        if not listed.get("sessions"):
            raise _NoSession(f"no session to continue in {options.cwd}")
        wanted = listed["sessions"][0]["sessionId"]
    if wanted is not None:
        await peer.request("session/resume", {"sessionId": wanted, **base})
        return wanted
    created = await peer.request("session/new", base)
    return str(created["sessionId"])


def _notified(run: Run, method: str, params: Any) -> None:
    """A session update, shown while the turn runs (what follows its answer, such as the
    session's title, is not: the result is the last thing shown)."""
    if method == "session/update" and isinstance(params, dict) and not run.answered:
        run.view.update(params)


async def _asked(method: str, params: Any) -> Any:
    """The agent's requests: nobody is here to answer them."""
    if method == "session/request_permission":  # an agent that asks anyway: refused
        options = params.get("options") or []
        reject = next((o for o in options if o.get("kind") == "reject_once"), None)
        if reject is not None:
            return {"outcome": {"outcome": "selected", "optionId": reject["optionId"]}}
        return {"outcome": {"outcome": "cancelled"}}
    if method == "elicitation/create":
        return {"action": "decline"}
    raise AgentError({"code": -32601, "message": f"{method} is not served by acp-fsm run"})


def _interrupted(run: Run, peer: Peer, main_task: asyncio.Task[int]) -> None:
    """Ctrl-C: the first cancels the turn (as `session/cancel`), the second exits."""
    run.interrupts += 1
    if run.interrupts == 1 and run.prompting and run.session is not None:
        asyncio.get_running_loop().create_task(
            peer.notify("session/cancel", {"sessionId": run.session})
        )
        return
    peer.kill()
    main_task.cancel()
