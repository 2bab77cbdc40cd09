"""Exit time: from the editor going away (its pipes closing together) or a signal, to the
agent's exit, in each state of a turn. Logging to a dead stderr must not slow it down.

Target (issue 8): within 2 s in every state, exit status 0, the turn stored as cancelled.
Run: python -m bench.shutdown [rounds]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from acp_fsm.devkit.provider import ScriptedProvider
from bench.common import summary, table
from tests.e2e.support import Launcher, unique_sleep
from tests.e2e.test_editor_gone import STATES, WAYS, end_editor, enter
from tests.harness import live_processes


async def one_exit(server: ScriptedProvider, state: str, way: str) -> tuple[float, int]:
    """(ms from the editor going to the exit, exit status)."""
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        launcher = Launcher(server, Path(home))
        agent = await launcher.start("openai", ACP_FSM_LOG_LEVEL="info")
        session = await agent.new_session(Path(work))
        command = unique_sleep()
        await enter(state, agent, server, Path(work), session, command)
        started = time.perf_counter()
        code = await end_editor(agent, way)
        elapsed = (time.perf_counter() - started) * 1000
        await agent.proc.kill()
        assert not live_processes(command), "the command outlived the agent"
        return elapsed, code


async def measure(rounds: int) -> list[str]:
    rows = []
    async with ScriptedProvider() as server:
        for state in STATES:
            for way in WAYS:
                samples, codes = [], set()
                for _ in range(rounds):
                    elapsed, code = await one_exit(server, state, way)
                    samples.append(elapsed)
                    codes.add(code)
                rows.append(
                    f"{state:<20} {way:<13} {summary(samples)} "
                    f"{','.join(map(str, sorted(codes))):>6}"
                )
    return rows


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    rows = asyncio.run(measure(rounds))
    table(
        f"editor gone or signal -> agent exited ({rounds} rounds, ms)",
        f"{'state':<20} {'way':<13} {'median':>8} {'p90':>8} {'min':>8} {'status':>6}",
        rows,
    )


if __name__ == "__main__":
    main()
