"""Command start: a local `run_command` of `true`, from the call to its result
(`acp_fsm.tools.process.run_local`: the keeper started, the shell run, its exit and output
seen, the keeper gone), as a session without an editor's terminal runs every command.

Since issue 38 every command runs under a keeper (`acp_fsm.system.keeper`, a Python process),
which is most of what a short command costs. With BENCH_AGAINST=<another checkout>, that
checkout is measured too, run by run in turn with this one (a commit before the keeper:
`sh` alone). Each run is a process of its own, in the checkout and first on its path.
Run: python -m bench.commands [commands per run] [runs]
"""

from __future__ import annotations

import json
import subprocess
import sys

from bench.common import PYCACHE, agent_env, checkouts, summary, table

COMMANDS = 100
RUNS = 5
# Run in the checkout measured: `true` run one after another, each one's milliseconds.
PROGRAM = """
import asyncio, json, sys, time
from pathlib import Path
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.tools.process import run_local

async def main(count):
    token, times = CancellationToken(), []
    for _ in range(count + 3):  # the first few warm the caches
        started = time.perf_counter()
        result = await run_local("true", Path.cwd(), 10, token)
        times.append((time.perf_counter() - started) * 1000)
        assert result.returncode == 0, result
    print(json.dumps(times[3:]))

asyncio.run(main(int(sys.argv[1])))
"""


def one_run(root: str, count: int) -> list[float]:
    env = agent_env(PYTHONPATH=root, PYTHONPYCACHEPREFIX=str(PYCACHE))
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(count)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else COMMANDS
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else RUNS
    found = checkouts()
    times: dict[str, list[float]] = {label: [] for label, _ in found}
    for _ in range(runs):
        for label, root in found:
            times[label] += one_run(str(root), count)
    rows = [f"{label:<16} {summary(ms)}" for label, ms in times.items()]
    table(
        f"run_command `true`, run locally ({runs} runs of {count}), ms",
        f"{'checkout':<16} {'median':>8} {'p90':>8} {'min':>8}",
        rows,
    )


if __name__ == "__main__":
    main()
