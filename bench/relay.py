"""Relay: a model's streamed deltas -> `session/update` lines, acp-fsm against its ceiling.

The same scripted Chat Completions stream (rendered once and served in one write, so the
server is never the bottleneck) is relayed by acp-fsm (every update validated, the turn's
machine, its store, in order) and by `bench/bare_relay.py` (asyncio + aiohttp + orjson,
nothing else). Each run times `session/prompt` written -> its response read, every update
counted on the way, after a first short prompt has paid what a process pays once (imports,
the HTTP client, the store); the ratio of the two rates is the figure to keep (target ≥ 0.8).
Run: python -m bench.relay [deltas] [runs]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time

from acp_fsm.providers.scripted import Raw, Reply, ScriptedProvider, render_openai
from bench.common import INIT, agent_command, agent_env, table

WARM_UP = Raw(parts=(b"".join(render_openai(Reply(text="warm"))),))


async def prompt(proc: asyncio.subprocess.Process, session: bytes, prompt_id: bytes) -> int:
    """Send a prompt; read until its response; the number of message chunks on the way."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":"' + prompt_id + b'","method":"session/prompt",'
                     b'"params":{"sessionId":"' + session + b'","prompt":[{"type":"text",'
                     b'"text":"go"}]}}\n')
    answer = b'"id":"' + prompt_id + b'"'
    updates = 0
    while line := await proc.stdout.readline():
        if b"agent_message_chunk" in line:
            updates += 1
        elif answer in line:
            break
    return updates


async def one_run(command: list[str], env: dict[str, str], deltas: int) -> float:
    """Updates per second of one prompt relayed by the agent that `command` starts (the
    server holds a warm-up stream, then the measured one)."""
    proc = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env, limit=1 << 26)
    assert proc.stdin is not None and proc.stdout is not None
    work = tempfile.mkdtemp()
    proc.stdin.write(INIT + b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"'
                     + work.encode() + b'","mcpServers":[]}}\n')
    await proc.stdout.readline()
    created = await proc.stdout.readline()
    session = created.split(b'"sessionId":"')[1].split(b'"')[0]
    assert await prompt(proc, session, b"warm") == 1
    started = time.perf_counter()
    updates = await prompt(proc, session, b"relay")
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    await proc.wait()
    assert updates == deltas, (command, updates, deltas)
    return updates / elapsed


async def measure(deltas: int, runs: int) -> list[tuple[str, list[float]]]:
    events = render_openai(Reply(text=["tok "] * deltas))
    stream = Raw(parts=(b"".join(events),))
    async with ScriptedProvider(api_key="sk-bench") as server:
        env = agent_env(PYTHONPATH=str(_root()), ACP_FSM_PROVIDER="openai",
                        OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-bench",
                        ACP_FSM_HOME=tempfile.mkdtemp(), ACP_FSM_STRICT_SCHEMAS="0")
        agents = [("acp-fsm", agent_command()),
                  ("bare relay (ceiling)", [sys.executable, "-m", "bench.bare_relay"])]
        rates: dict[str, list[float]] = {name: [] for name, _ in agents}
        for _ in range(runs):  # alternate, so that a busy moment hurts both alike
            for name, command in agents:
                server.script(WARM_UP, stream)
                rates[name].append(await one_run(command, env, deltas))
    return list(rates.items())


def _root() -> str:
    from tests.harness import ROOT

    return str(ROOT)


def main() -> None:
    deltas = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    results = asyncio.run(measure(deltas, runs))
    medians = {name: statistics.median(samples) for name, samples in results}
    rows = [f"{name:<24} {medians[name]:>12,.0f} {max(samples):>12,.0f}"
            for name, samples in results]
    ceiling = medians["bare relay (ceiling)"]
    rows.append(f"{'acp-fsm / ceiling':<24} {medians['acp-fsm'] / ceiling:>12.2f}")
    table(f"relay: {deltas:,} deltas -> agent_message_chunk, {runs} runs (updates/s)",
          f"{'agent':<24} {'median':>12} {'best':>12}", rows)


if __name__ == "__main__":
    main()
