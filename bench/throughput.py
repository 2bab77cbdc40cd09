"""Outbound throughput: `session/update` notifications per second through the real process
(validated against the schema, encoded, written to the pipe, read and parsed by the client).

Target (developers' guide): ≥ 17,000 streamed updates/s with validation on.
Run: python -m bench.throughput [count]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from bench.common import INIT, agent_command, agent_env, table


def run(count: int, text: str) -> tuple[float, int]:
    proc = subprocess.Popen(
        agent_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=agent_env(ACP_FSM_STRICT_SCHEMAS="1"),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    proc.stdout.readline()
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "_acp_fsm/stream_updates",
        "params": {"sessionId": "bench", "count": count, "text": text},
    }
    started = time.perf_counter()
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    updates = 0
    for line in proc.stdout:
        message = json.loads(line)
        if message.get("method") == "session/update":
            updates += 1
        elif message.get("id") == 1:
            break
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.wait()
    return elapsed, updates


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rows = []
    for label, text in (
        ("short chunk (5 chars)", "Hello"),
        ("token-like (1 word)", " the"),
        ("long chunk (400 chars)", "x" * 400),
    ):
        elapsed, updates = run(count, text)
        assert updates == count, (updates, count)
        rows.append(f"{label:<26} {updates:>10,} {elapsed:>9.2f} {updates / elapsed:>12,.0f}")
    table(
        "session/update throughput (validation on)",
        f"{'payload':<26} {'updates':>10} {'seconds':>9} {'updates/s':>12}",
        rows,
    )


if __name__ == "__main__":
    main()
