"""Sessions: what a session and a prompt's set-up cost, apart from the model's answer.

- `session/new` per second in steady state: `NEW_COUNT` requests over one connection, written
  `IN_FLIGHT` at a time (each batch once the one before is answered), after a first batch has
  paid what a process pays once (imports, the store, the model list);
- prompts per second, `CONCURRENT` at once: one short prompt in each of that many sessions,
  all written together, the scripted model answering each with one short delta; `ROUNDS`
  such rounds after one as a warm-up;
- the first prompt after a `session/load`, in a fresh process: spawn, `initialize`, load a
  session of a few turns, prompt; the prompt's time (written -> answered) and spawn ->
  answered; the same prompt typed a second after the load, and a second after a first
  `session/new` (what the process loads in the idle time meanwhile is not in its time);
- RSS once `initialize` and one session have been answered (idle), and with `IDLE_SESSIONS`
  idle sessions open.

Beside the agents, the bare relay (`bench/bare_relay.py`: asyncio, aiohttp and orjson, no
session kept) answers the same `session/new`s and prompts: the least this machine makes any
Python agent on that stack pay, in time and in memory (no column for a load: it stores nothing).

Every agent runs with bytecode caches, as an installed copy has them (`bench.common.PYCACHE`).
With BENCH_AGAINST=<another checkout>, its agent is measured too, run by run in turn with this
one's (the before and after of a change, on the same machine state).

Targets (issue 19, on a machine about twice as fast as the 2-core one they are read on here):
initialize + session/new <= 120 ms after spawn (bench/startup.py), session/new >= 2,500/s,
100 concurrent prompts >= 700/s, first prompt after a load <= 100 ms, 1,000 idle sessions
<= 35 MB.
Run: python -m bench.sessions [runs]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from acp_fsm.devkit.provider import RecordedRequest, Reply, ScriptedProvider
from bench.common import INIT, PYCACHE, agent_command, agent_env, checkouts, table

NEW_COUNT = 2_000
IN_FLIGHT = 100
CONCURRENT = 100
ROUNDS = 5
IDLE_SESSIONS = 1_000
ROOT = Path(__file__).resolve().parents[1]
# The yardstick beside the agents (bench/bare_relay.py): what asyncio, aiohttp and orjson
# alone cost on this machine, in time and in memory.
BARE = "bare relay"
BARE_COMMAND = [sys.executable, "-m", "bench.bare_relay"]
LOADED_TURNS = 5  # the turns of the session a fresh process loads
TYPING_S = 1.0  # as a person types: a session's answer -> its first prompt
SETTLE_S = 0.5  # before RSS is read: what runs after the last answer (the model list) is done


def short_answer(_request: RecordedRequest) -> Reply:
    return Reply(text="ok")


class Agent:
    """One agent process and a lean client for it: requests by id, answers to their
    futures, notifications counted (the benchmark's own reading must cost little)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.notifications = 0
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def spawn(cls, root: Path, env: dict[str, str], command: list[str]) -> Agent:
        proc = await asyncio.create_subprocess_exec(
            *command,
            cwd=root,
            env=dict(env, PYTHONPATH=str(root)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 26,
        )
        return cls(proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = orjson.loads(line)
            if "id" in message and "method" not in message:
                future = self._waiting.pop(message["id"], None)
                if future is not None and not future.done():
                    future.set_result(message)
            else:
                self.notifications += 1
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(EOFError("the agent exited"))

    def send(self, method: str, params: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Write one request now; the future gives its answer."""
        assert self.proc.stdin is not None
        self._next_id += 1
        future = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = future
        self.proc.stdin.write(
            orjson.dumps(
                {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
            )
            + b"\n"
        )
        return future

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self.send(method, params)
        assert "result" in answer, answer
        return dict(answer["result"])

    async def initialize(self) -> None:
        assert self.proc.stdin is not None
        future = asyncio.get_running_loop().create_future()
        self._waiting[0] = future
        self.proc.stdin.write(INIT)
        await future

    async def new_sessions(self, count: int, cwd: str) -> list[str]:
        answers = await asyncio.gather(
            *(self.send("session/new", {"cwd": cwd, "mcpServers": []}) for _ in range(count))
        )
        return [a["result"]["sessionId"] for a in answers]

    async def prompt(self, session_id: str, text: str) -> None:
        result = await self.call(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        assert result["stopReason"] == "end_turn", result

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()
        await self._reader


class Bench:
    """The benchmark's provider, data directory and project, shared by every agent."""

    def __init__(self, server: ScriptedProvider) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="acp-fsm-bench-sessions-"))
        self.project = tempfile.mkdtemp(prefix="acp-fsm-bench-project-")
        self.env = agent_env(
            PYTHONPYCACHEPREFIX=str(PYCACHE),
            ACP_FSM_PROVIDER="openai",
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="sk-bench-not-a-real-key",
            ACP_FSM_HOME=str(self.home),
            ACP_FSM_STRICT_SCHEMAS="0",
            ACP_FSM_MODEL="bench-model",
        )
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)

    async def agent(self, root: Path, command: list[str] | None = None) -> Agent:
        agent = await Agent.spawn(root, self.env, command or agent_command())
        await agent.initialize()
        return agent

    async def new_rate(self, root: Path, command: list[str]) -> float:
        """session/new answered per second, `IN_FLIGHT` at a time."""
        agent = await self.agent(root, command)
        await agent.new_sessions(IN_FLIGHT, self.project)  # the process's one-off costs
        started = time.perf_counter()
        for _ in range(NEW_COUNT // IN_FLIGHT):
            await agent.new_sessions(IN_FLIGHT, self.project)
        elapsed = time.perf_counter() - started
        await agent.close()
        return NEW_COUNT / elapsed

    async def prompt_rate(self, root: Path, command: list[str]) -> float:
        """Prompts answered per second, `CONCURRENT` at once in as many sessions, over
        `ROUNDS` rounds (each once the one before is answered)."""
        agent = await self.agent(root, command)
        sessions = await agent.new_sessions(CONCURRENT, self.project)
        await asyncio.gather(*(agent.prompt(s, "warm up") for s in sessions))
        started = time.perf_counter()
        for _ in range(ROUNDS):
            await asyncio.gather(*(agent.prompt(s, "say ok") for s in sessions))
        elapsed = time.perf_counter() - started
        await agent.close()
        return CONCURRENT * ROUNDS / elapsed

    async def stored_session(self, root: Path) -> str:
        """A session of `LOADED_TURNS` turns, stored by an agent that has exited."""
        agent = await self.agent(root)
        (session,) = await agent.new_sessions(1, self.project)
        for i in range(LOADED_TURNS):
            await agent.prompt(session, f"turn {i}")
        await agent.close()
        return session

    async def first_prompt(
        self, root: Path, session: str | None, pause_s: float = 0.0
    ) -> tuple[float, float]:
        """(the prompt's ms, spawn -> its answer ms) in a fresh process: the first prompt,
        `pause_s` after `session` is loaded (a new session's answer when None)."""
        started = time.perf_counter()
        agent = await self.agent(root)
        if session is None:
            (session,) = await agent.new_sessions(1, self.project)
        else:
            await agent.call(
                "session/load", {"sessionId": session, "cwd": self.project, "mcpServers": []}
            )
        await asyncio.sleep(pause_s)
        prompted = time.perf_counter()
        await agent.prompt(session, "and now?")
        done = time.perf_counter()
        await agent.close()
        return (done - prompted) * 1000, (done - started) * 1000

    async def memory(self, root: Path, command: list[str]) -> tuple[float, float]:
        """(RSS MB idle, RSS MB with `IDLE_SESSIONS` idle sessions)."""
        agent = await self.agent(root, command)
        await agent.new_sessions(1, self.project)
        await asyncio.sleep(SETTLE_S)
        idle = agent.rss_mb()
        for _ in range(IDLE_SESSIONS // IN_FLIGHT):
            await agent.new_sessions(IN_FLIGHT, self.project)
        await asyncio.sleep(SETTLE_S)
        full = agent.rss_mb()
        await agent.close()
        return idle, full


async def measure(runs: int) -> dict[str, dict[str, list[float]]]:
    """Every figure of every checkout, `runs` samples each, the checkouts taking turns."""
    figures: dict[str, dict[str, list[float]]] = {}
    async with ScriptedProvider(fallback=short_answer) as server:
        bench = Bench(server)
        agents = [(label, root, agent_command()) for label, root in checkouts()]
        loaded = {label: await bench.stored_session(root) for label, root, _ in agents}
        agents.append((BARE, ROOT, BARE_COMMAND))  # it stores nothing: no load
        steps: list[tuple[str, Callable[[str, Path, list[str]], Any]]] = [
            ("new", lambda _label, root, command: bench.new_rate(root, command)),
            ("prompts", lambda _label, root, command: bench.prompt_rate(root, command)),
            ("load", lambda label, root, _command: bench.first_prompt(root, loaded[label])),
            (
                "typed_load",
                lambda label, root, _command: bench.first_prompt(root, loaded[label], TYPING_S),
            ),
            ("typed_new", lambda _label, root, _command: bench.first_prompt(root, None, TYPING_S)),
            ("memory", lambda _label, root, command: bench.memory(root, command)),
        ]
        for _ in range(runs):
            for name, step in steps:
                for label, root, command in agents:
                    if name in ("load", "typed_load", "typed_new") and label == BARE:
                        continue
                    value = await step(label, root, command)
                    samples = figures.setdefault(label, {})
                    for i, part in enumerate(value if isinstance(value, tuple) else (value,)):
                        samples.setdefault(f"{name}{i}", []).append(part)
    return figures


ROWS = (
    ("new0", f"session/new per s ({IN_FLIGHT} in flight)", "{:,.0f}", ">= 2,500"),
    ("prompts0", f"prompts per s ({CONCURRENT} at once)", "{:,.0f}", ">= 700"),
    ("load0", "first prompt after load (ms)", "{:.1f}", "<= 100"),
    ("load1", "  spawn -> that prompt answered (ms)", "{:.1f}", ""),
    ("typed_load0", "first prompt 1 s after load (ms)", "{:.1f}", ""),
    ("typed_new0", "first prompt 1 s after new (ms)", "{:.1f}", ""),
    ("memory0", "RSS idle, 1 session (MB)", "{:.1f}", ""),
    ("memory1", f"RSS, {IDLE_SESSIONS:,} idle sessions (MB)", "{:.1f}", "<= 35"),
)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    figures = asyncio.run(measure(runs))
    labels = list(figures)
    header = f"{'measure':<38} " + " ".join(f"{label:>14}" for label in labels) + f" {'target':>9}"
    rows = []
    for key, name, form, target in ROWS:
        cells = []
        for label in labels:
            samples = figures[label].get(key)
            cells.append(f"{form.format(statistics.median(samples)) if samples else '-':>14}")
        rows.append(f"{name:<38} {' '.join(cells)} {target:>9}")
    table(f"sessions ({runs} runs, medians)", header, rows)


if __name__ == "__main__":
    main()
