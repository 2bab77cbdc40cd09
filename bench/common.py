"""Shared pieces of the benchmarks: spawning the agent and printing result tables."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

from tests.harness import ROOT, agent_command

__all__ = [
    "INIT",
    "PYCACHE",
    "agent_command",
    "agent_env",
    "checkouts",
    "cpu_ms",
    "summary",
    "table",
    "tree_agent",
]

INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,'
    b'"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},'
    b'"terminal":true},"clientInfo":{"name":"bench","version":"0"}}}\n'
)
# Bytecode caches for the agents a benchmark runs, as an installed copy has them (the
# benchmarks' own, so a checkout stays as it is; by full path, so checkouts never share one).
PYCACHE = Path(tempfile.gettempdir()) / "acp-fsm-bench-pycache"


def agent_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, ACP_FSM_DEBUG_METHODS="1", ACP_FSM_LOG_LEVEL="warning", **extra)
    return env


def numbered(text: str, count: int) -> tuple[str, ...]:
    """`count` deltas of `text`, each with its number before it: a stream that never repeats
    itself (the agent stops an answer that loops, acp_fsm.turn.repetition)."""
    return tuple(f"{i} {text}" for i in range(count))


def checkouts() -> list[tuple[str, Path]]:
    """The checkouts whose agents a benchmark compares, by label: this one, and the one
    `BENCH_AGAINST` names (a worktree of another commit: the "before" of a change). Run
    `python -m acp_fsm` with the checkout as its working directory and first on the path."""
    found = [("this", ROOT)]
    other = os.environ.get("BENCH_AGAINST")
    if other:
        found.append((Path(other).name, Path(other).resolve()))
    return found


def tree_agent(tree: Path) -> tuple[list[str], dict[str, str]]:
    """The agent of a checkout (its own venv's `acp-fsm`: `python -m venv .venv &&
    .venv/bin/pip install -e .` there), and the environment that runs that checkout's code
    rather than the one a test harness puts first on the path."""
    command = tree.resolve() / ".venv" / "bin" / "acp-fsm"
    if not command.is_file():
        sys.exit(f"no agent at {command}: install the checkout in its .venv first")
    return [str(command)], {"PYTHONPATH": str(tree.resolve())}


def cpu_ms(pid: int) -> float:
    """The CPU time of a process so far (all its threads), in milliseconds: the scheduler's
    nanoseconds (/proc/PID/task/*/schedstat), not the 10 ms ticks of /proc/PID/stat."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return total / 1e6


def summary(samples: list[float]) -> str:
    """median / p90 / min of millisecond samples."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"{statistics.median(ordered):8.2f} {p90:8.2f} {ordered[0]:8.2f}"


def table(title: str, header: str, rows: list[str]) -> None:
    print(f"\n{title}\n{header}\n{'-' * len(header)}")
    for row in rows:
        print(row)
