"""Startup: spawn → `initialize` answered, and spawn → a first `session/new` answered.

Beside them, a yardstick to scale the figures by the machine: `bench/bare_relay.py` (Python,
asyncio, aiohttp and orjson imported, nothing else) answering the same two requests. Every
agent runs with bytecode caches, as an installed copy has them (`bench.common.PYCACHE`); with
BENCH_AGAINST=<another checkout>, its agent is measured too, run by run in turn with this one's.
BENCH_PEERS="label=command;..." adds other ACP agents (a peer's launcher script, say codex-acp
pointed at `$OPENAI_BASE_URL`), started with the same environment. The agents take turns, in
one order on even runs and the other on odd ones, so neither order favours one.

Targets (issue 19, on a machine about twice as fast as a slow 2-core one): initialize +
session/new <= 120 ms after spawn.
Run: python -m bench.startup [runs]
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import INIT, PYCACHE, agent_command, agent_env, checkouts, summary, table

SECOND = (
    b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
)
BARE = "bare relay (yardstick)"
# How long an agent has to exit once its stdin is closed, before it is killed.
EXIT_WAIT_S = 2.0


def one_run(command: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """(spawn -> initialize answered, spawn -> session/new answered), ms."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(env, PYTHONPATH=str(root)),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    proc.stdout.readline()
    first = (time.perf_counter() - started) * 1000
    proc.stdin.write(SECOND)
    proc.stdin.flush()
    answer = proc.stdout.readline()
    second = (time.perf_counter() - started) * 1000
    assert b'"sessionId"' in answer, answer  # a session, not an error, was timed
    proc.stdin.close()
    try:
        proc.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:  # codex-acp 0.16 outlives its stdin
        proc.kill()
        proc.wait()
    return first, second


def measure(runs: int) -> dict[str, tuple[list[float], list[float]]]:
    # A configured provider (a session needs one), on a port nobody listens on: the model list
    # the agent fetches after answering fails at once and costs the answer nothing. The model
    # is configured: without one, a server that is not OpenAI's own is asked for its list
    # before the first session is answered (on the full path: acp_fsm.early_session).
    env = agent_env(
        ACP_FSM_HOME=tempfile.mkdtemp(prefix="acp-fsm-bench-"),
        ACP_FSM_PROVIDER="openai",
        ACP_FSM_MODEL="gpt-5",
        OPENAI_API_KEY="sk-bench-not-a-key",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        PYTHONPYCACHEPREFIX=str(PYCACHE),
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    here = checkouts()[0][1]
    agents = [(label, agent_command(), root) for label, root in checkouts()]
    agents += [(label, command, here) for label, command in peers()]
    agents.append((BARE, [sys.executable, "-m", "bench.bare_relay"], here))
    samples: dict[str, tuple[list[float], list[float]]] = {a[0]: ([], []) for a in agents}
    for run in range(runs + 2):  # two first runs warm the page cache and the bytecode
        # In turn, so a busy moment hurts all alike; the order reversed every other run.
        for label, command, root in agents if run % 2 else agents[::-1]:
            first, second = one_run(command, root, env)
            if run >= 2:
                samples[label][0].append(first)
                samples[label][1].append(second)
    return samples


def peers() -> list[tuple[str, list[str]]]:
    """The other agents `BENCH_PEERS` names: `label=command line`, `;` between them."""
    found = []
    for entry in filter(None, os.environ.get("BENCH_PEERS", "").split(";")):
        label, _, command = entry.partition("=")
        found.append((label.strip(), shlex.split(command)))
    return found


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rows = []
    for label, (first, second) in measure(runs).items():
        alone = [b - a for a, b in zip(first, second, strict=True)]
        rows.append(f"{label + ': spawn -> initialize':<44} {summary(first)}")
        rows.append(f"{label + ': spawn -> session/new':<44} {summary(second)}")
        rows.append(f"{label + ': session/new alone':<44} {summary(alone)}")
    table(
        f"startup ({runs} runs, ms)", f"{'measure':<44} {'median':>8} {'p90':>8} {'min':>8}", rows
    )


if __name__ == "__main__":
    main()
