"""Cancel latency: `session/cancel` written → `{stopReason: "cancelled"}` read, while the model
streams (acp-fsm beside `bench/bare_relay.py`, the least an agent can do), while a permission
request waits, while a command runs, while an MCP server's tool runs
(`tests/mcp/tools_server.py` over stdio), and while a /compact's summary call waits.

The model server runs in a process of its own (`bench/model_server.py`), so its share of a
cancel (the disconnect) is not in the client's figure; the client decodes every line it reads,
as an editor does; `BENCH_AGAINST=<checkout>` adds that checkout's agent to the streaming rows
(the "before" of a change, in the same run). Targets (issue 19): streaming p50 ≤ 0.8 ms and
p99 ≤ 1.5 ms, no state's median above 1.5 ms, never an update after the answer.
Run: python -m bench.cancel [streaming rounds] [rounds of the other states]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from acp_fsm.devkit.provider import Call, Hang, Reply, Scripted
from bench.common import INIT, PYCACHE, agent_command, checkouts, numbered, table
from tests.harness import AgentProcess, agent_env

ROOT = Path(__file__).resolve().parents[1]
# The streamed reply: a second of tokens or more, far beyond the cancel 50 ms in, and no
# longer. The server renders a reply whole when it is asked for it and frees it when the client
# disconnects: at 100,000 tokens that took a second of its CPU a prompt, and the freeing 3 ms
# of it at the instant the client reads the answer, which on 2 cores it then waited out.
REPLIES: dict[str, Scripted] = {
    "bench-stream": Reply(text=numbered("tok ", 4_000), delay_s=0.0005, fault=Hang(2_000)),
    "bench-permission": Reply(
        calls=(Call("call_w", "write_file", json.dumps({"path": "x.txt", "content": "x"})),)
    ),
    "bench-command": Reply(
        calls=(Call("call_r", "run_command", json.dumps({"command": "sleep 30"})),)
    ),
    "bench-mcp": Reply(calls=(Call("call_m", "mcp__tools__slow", json.dumps({"seconds": 30})),)),
    # /compact: the summary call (its instruction ends the body) never ends
    "replaced by a summary": Reply(text="The summary", fault=Hang(1)),
    "": Reply(text="ok"),
}
MCP_SERVER = {
    "name": "tools",
    "command": sys.executable,
    "args": [str(ROOT / "tests/mcp/tools_server.py")],
    "env": [],
}


class ModelServer:
    """`bench/model_server.py` serving REPLIES; `requests` gets a key per request it receives."""

    async def __aenter__(self) -> ModelServer:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.model_server",
            "bench.cancel:REPLIES",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            env=agent_env(),
        )
        assert self.proc.stdout is not None
        self.url = (await self.proc.stdout.readline()).decode().strip()
        self.requests: asyncio.Queue[str] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.requests.put_nowait(line.decode().split(" ", 1)[1].strip())

    async def __aexit__(self, *_: object) -> None:
        self.proc.kill()
        await self.proc.wait()
        self._reader.cancel()


class Client:
    """A client on an agent's pipes that decodes every line as it arrives (as an editor does);
    `answered` gets (id, stop reason, when it was read)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.chunks = 0
        self.streaming = asyncio.Event()  # set by the first update of a prompt
        self.answered: asyncio.Queue[tuple[Any, Any, float]] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, command: list[str], env: dict[str, str], root: Path) -> tuple[Client, str]:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=dict(env, PYTHONPATH=str(root)),
            cwd=root,
            limit=1 << 26,
        )
        client = cls(proc)
        client.write(
            INIT
            + orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "session/new",
                    "params": {"cwd": tempfile.mkdtemp(), "mcpServers": []},
                }
            )
            + b"\n"
        )
        await client.answered.get()
        _, result, _ = await client.answered.get()
        return client, result["sessionId"]

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            message = orjson.loads(line)
            read = time.perf_counter()
            if message.get("method") == "session/update":
                self.chunks += 1
                self.streaming.set()
            elif "id" in message:
                self.answered.put_nowait((message["id"], message.get("result"), read))

    async def cancel_mid_stream(self, session: str, prompt_id: str) -> tuple[float, bool]:
        """Prompt, let it stream 50 ms, cancel: (ms to the answer, updates after it)."""
        self.streaming.clear()
        self.write(
            orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": prompt_id,
                    "method": "session/prompt",
                    "params": {
                        "sessionId": session,
                        "prompt": [{"type": "text", "text": "bench-stream"}],
                    },
                }
            )
            + b"\n"
        )
        await self.streaming.wait()
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        self.write(
            orjson.dumps(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
            )
            + b"\n"
        )
        answer_id, result, read = await self.answered.get()
        assert answer_id == prompt_id and result["stopReason"] == "cancelled", result
        after = self.chunks
        await asyncio.sleep(0.05)
        return (read - started) * 1000, self.chunks > after

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()
        self._reader.cancel()


async def streaming(server: ModelServer, rounds: int) -> list[str]:
    """acp-fsm (and the checkout `BENCH_AGAINST` names) and the bare relay, alternated round
    by round."""
    env = agent_env(
        ACP_FSM_PROVIDER="openai",
        OPENAI_BASE_URL=server.url,
        OPENAI_API_KEY="sk-bench",
        ACP_FSM_HOME=tempfile.mkdtemp(),
        ACP_FSM_LOG_LEVEL="warning",
        ACP_FSM_LOG_FORMAT="console",
        PYTHONPYCACHEPREFIX=str(PYCACHE),
    )
    agents = {
        f"streaming (acp-fsm{'' if label == 'this' else ', ' + label})": (agent_command(), root)
        for label, root in checkouts()
    }
    agents["streaming (bare relay)"] = ([sys.executable, "-m", "bench.bare_relay"], ROOT)
    clients = {
        name: await Client.start(command, env, root) for name, (command, root) in agents.items()
    }
    samples: dict[str, list[float]] = {name: [] for name in agents}
    late = dict.fromkeys(agents, 0)
    for n in range(rounds + 2):  # the first two warm up
        for name, (client, session) in clients.items():
            elapsed, had_late = await client.cancel_mid_stream(session, f"p{n}")
            if n >= 2:
                samples[name].append(elapsed)
                late[name] += had_late
    for client, _ in clients.values():
        await client.close()
    return [f"{name:<30} {_figures(samples[name])} {late[name]:>6}" for name in agents]


async def one_cancel(
    agent: AgentProcess, session: str, key: str, server: ModelServer
) -> tuple[float, bool]:
    """Prompt, wait until the turn is in the state `key` leads to, cancel; (ms, updates
    after the answer)."""
    prompt_id = f"p{time.monotonic_ns()}"
    response = agent.expect(prompt_id, "session/prompt")
    text = "/compact" if key == "summary" else key
    await agent.send(
        {
            "jsonrpc": "2.0",
            "id": prompt_id,
            "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]},
        }
    )
    if key == "summary":
        while await server.requests.get() != "replaced by a summary":
            pass
    else:
        request = await agent.next_request()
        assert request["method"] == "session/request_permission", request
        if key != "bench-permission":
            await agent.respond(
                request, {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
            )
            while (await agent.next_notification())["params"]["update"].get(
                "status"
            ) != "in_progress":
                pass
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    await agent.notify("session/cancel", {"sessionId": session})
    answer = await response
    elapsed = (time.perf_counter() - started) * 1000
    assert answer["result"]["stopReason"] == "cancelled", answer
    position = agent.messages.index(answer)
    await asyncio.sleep(0.1)
    late = [
        m
        for m in agent.messages[position + 1 :]
        if m.get("method") == "session/update" and m["params"]["sessionId"] == session
    ]
    for waiting in (agent.notifications, agent.requests):
        while not waiting.empty():
            waiting.get_nowait()
    return elapsed, bool(late)


async def other_states(server: ModelServer, rounds: int) -> list[str]:
    home, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    (Path(work) / "x.txt").touch()
    env = agent_env(
        ACP_FSM_PROVIDER="openai",
        OPENAI_BASE_URL=server.url,
        OPENAI_API_KEY="sk-bench",
        ACP_FSM_HOME=home,
        ACP_FSM_LOG_LEVEL="warning",
        ACP_FSM_STRICT_SCHEMAS="0",
    )
    agent = await AgentProcess.start(env)
    await agent.initialize(fs={"readTextFile": False, "writeTextFile": False}, terminal=False)
    created: dict[str, Any] = await agent.request(
        "session/new", {"cwd": work, "mcpServers": [MCP_SERVER]}
    )
    session = created["result"]["sessionId"]
    rows = []
    for label, key in (
        ("awaiting_permission", "bench-permission"),
        ("running_tools (local sleep)", "bench-command"),
        ("running_tools (MCP call)", "bench-mcp"),
        ("compacting (summary call)", "summary"),
    ):
        samples, late = [], 0
        for _ in range(rounds):
            elapsed, had_late = await one_cancel(agent, session, key, server)
            samples.append(elapsed)
            late += had_late
        rows.append(f"{label:<30} {_figures(samples)} {late:>6}")
    await agent.close()
    return rows


def _figures(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))]

    return f"{at(0.5):8.2f} {at(0.9):8.2f} {at(0.99):8.2f} {ordered[0]:8.2f}"


async def measure(stream_rounds: int, rounds: int) -> list[str]:
    async with ModelServer() as server:
        return await streaming(server, stream_rounds) + await other_states(server, rounds)


def main() -> None:
    stream_rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rows = asyncio.run(measure(stream_rounds, rounds))
    table(
        f"session/cancel -> cancelled (streaming {stream_rounds} rounds, others {rounds}; ms)",
        f"{'state':<30} {'p50':>8} {'p90':>8} {'p99':>8} {'min':>8} {'late':>6}",
        rows,
    )


if __name__ == "__main__":
    main()
