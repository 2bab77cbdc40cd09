"""Startup: spawn → `initialize` answered, and spawn → a second request answered.

Targets (developers' guide): initialize ≤ 50 ms after spawn; a session ready ≤ 200 ms.
Run: python -m bench.startup [runs]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time

from bench.common import INIT, agent_command, agent_env, summary, table

SECOND = (b'{"jsonrpc":"2.0","id":1,"method":"session/new",'
          b'"params":{"cwd":"/tmp","mcpServers":[]}}\n')


def measure(runs: int) -> tuple[list[float], list[float]]:
    first, second = [], []
    # A configured provider (a session needs one), on a port nobody listens on: the model list
    # the agent fetches after answering fails at once and costs the answer nothing.
    env = agent_env(ACP_FSM_HOME=tempfile.mkdtemp(prefix="acp-fsm-bench-"),
                    ACP_FSM_PROVIDER="openai", OPENAI_API_KEY="sk-bench-not-a-key",
                    OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.Popen(agent_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INIT)
        proc.stdin.flush()
        proc.stdout.readline()
        first.append((time.perf_counter() - started) * 1000)
        proc.stdin.write(SECOND)
        proc.stdin.flush()
        answer = proc.stdout.readline()
        second.append((time.perf_counter() - started) * 1000)
        assert b'"sessionId"' in answer, answer  # a session, not an error, was timed
        proc.stdin.close()
        proc.wait()
    return first, second


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    measure(2)  # warm the page cache and bytecode
    first, second = measure(runs)
    table(f"startup ({runs} runs, ms)", f"{'measure':<36} {'median':>8} {'p90':>8} {'min':>8}", [
        f"{'spawn -> initialize answered':<36} {summary(first)}",
        f"{'spawn -> session/new answered':<36} {summary(second)}",
    ])


if __name__ == "__main__":
    main()
