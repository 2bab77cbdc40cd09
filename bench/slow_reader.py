"""Memory under a slow editor: the agent's peak RSS while it streams a long answer to an
editor that reads at once, one that reads slowly, and one that stops reading for a while.

Target (developers' guide): memory bounded when the editor reads slowly. The agent keeps
the answer itself (it is stored), so the peak grows with the answer whatever the editor does;
without back-pressure it also holds everything the editor has not read yet in its output
buffer, which with back-pressure is capped at `OUTPUT_BUFFER_LIMIT_BYTES`. The "idle" row is
the agent after `session/new`.
Run: python -m bench.slow_reader [megabytes]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time

from acp_fsm.devkit.editor import Message
from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.protocol.streams import OUTPUT_BUFFER_LIMIT_BYTES
from bench.common import numbered, table
from tests.harness import AgentProcess, agent_env, title_lane

CHUNK = "All work and no play makes a slow editor. " * 24  # ~1 KB per update
SLOW_READ_S = 0.002  # the slow editor reads for this long ...
SLOW_PAUSE_S = 0.02  # ... then stops for this long, again and again
STALL_S = 3.0  # the stalled editor reads nothing for this long, then everything


def peak_rss_mb(pid: int) -> float:
    """The process's high-water resident set (VmHWM), in MB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/<pid>/status")


async def one_run(server: ScriptedProvider, chunks: int, reader: str) -> tuple[float, float, float]:
    """Stream `chunks` updates to an editor that reads as `reader` says; (idle peak MB,
    peak MB, seconds)."""
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        env = agent_env(
            ACP_FSM_PROVIDER="openai",
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="sk-bench",
            ACP_FSM_HOME=home,
            ACP_FSM_LOG_LEVEL="warning",
            ACP_FSM_STRICT_SCHEMAS="0",
            **title_lane(server),  # the title call takes none of the measured replies
        )
        agent = await AgentProcess.start(env)
        try:
            await agent.initialize(
                fs={"readTextFile": False, "writeTextFile": False}, terminal=False
            )
            session = (await agent.request("session/new", {"cwd": work, "mcpServers": []}))[
                "result"
            ]["sessionId"]
            assert agent.proc is not None
            idle = peak_rss_mb(agent.proc.pid)
            server.script(Reply(text=numbered(CHUNK, chunks)))
            # asyncio's subprocess keeps the pipe's transport private: no public pause_reading
            stdout = agent.proc._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
            started = time.perf_counter()
            answer = agent.expect("p", "session/prompt")
            if reader != "prompt":
                stdout.pause_reading()
            await agent.send(
                {
                    "jsonrpc": "2.0",
                    "id": "p",
                    "method": "session/prompt",
                    "params": {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]},
                }
            )
            if reader == "stalled":
                await asyncio.sleep(STALL_S)
                stdout.resume_reading()
            elif reader == "slow":
                await read_slowly(stdout, answer)
            response = await asyncio.wait_for(answer, 600)
            elapsed = time.perf_counter() - started
            assert response["result"]["stopReason"] == "end_turn", response
            return idle, peak_rss_mb(agent.proc.pid), elapsed
        finally:
            await agent.kill()


async def read_slowly(stdout: asyncio.ReadTransport, answer: asyncio.Future[Message]) -> None:
    """Read for SLOW_READ_S, pause for SLOW_PAUSE_S, repeat, until the answer is in."""
    while not answer.done():
        stdout.resume_reading()
        await asyncio.sleep(SLOW_READ_S)
        stdout.pause_reading()
        await asyncio.sleep(SLOW_PAUSE_S)
    stdout.resume_reading()


async def measure(megabytes: int) -> list[str]:
    chunks = megabytes * 1024 * 1024 // len(CHUNK)
    rows: list[str] = []
    async with ScriptedProvider() as server:
        for reader, label in (
            ("prompt", "reads at once"),
            ("slow", "reads 1/11 of the time"),
            ("stalled", f"stops {STALL_S:g} s, then reads"),
        ):
            idle, peak, elapsed = await one_run(server, chunks, reader)
            if not rows:
                rows.append(f"{'idle':<24} {0:>8} {idle:>10.1f} {'':>9}")
            rows.append(f"{label:<24} {megabytes:>8} {peak:>10.1f} {elapsed:>9.2f}")
    return rows


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rows = asyncio.run(measure(megabytes))
    table(
        f"peak agent RSS while streaming (output buffer limit "
        f"{OUTPUT_BUFFER_LIMIT_BYTES // 1024} KiB)",
        f"{'editor':<24} {'MB text':>8} {'peak MB':>10} {'seconds':>9}",
        rows,
    )


if __name__ == "__main__":
    main()
