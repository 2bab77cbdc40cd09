"""Relay: a model's streamed deltas -> `session/update` lines, acp-fsm against its ceiling.

The same scripted stream is relayed by acp-fsm and by `bench/bare_relay.py` (asyncio +
aiohttp + orjson, nothing else), on two wires (`chat`: Chat Completions chunks, acp-fsm with
`ACP_FSM_PROVIDER=openai`; `responses`: the Responses API's events, with
`ACP_FSM_PROVIDER=openai-responses`), in two modes, alternating the agents within each run so
that a busy moment hurts both alike:

- `one write, scan`: the stream rendered once and served in one write (the server is never
  the bottleneck); the client only scans each line for the update's tag.
- `per event, parse`: the stream as real servers send it, one `data:` event per HTTP chunk and
  per write (OpenAI flushes one chunk per token), the server yielding to its event loop after
  each TCP segment's worth (`EVENTS_PER_SEGMENT`); the client decodes every line it reads with
  orjson, as an editor parses each message fully, and counts the updates and finds the
  answer in the decoded messages.

acp-fsm runs as it ships: every outbound message validated against its schema (always on;
`ACP_FSM_STRICT_SCHEMAS=1` only makes a violation fatal, and it is left unset), the turn's
machine, its store, the secret scrub, back-pressure. Each run times `session/prompt` written
-> its response read, every update counted on the way, after a first short prompt has paid
what a process pays once (imports, the HTTP client, the store), and reads the agent's CPU time
over it (the scheduler's, /proc/PID/task/*/schedstat): wall-clock rates are noisy on a shared
machine, CPU per update is what the agent costs. The figures to keep are the ratios to the
ceiling (target >= 0.8): of the rates, and of the CPU per update (ceiling's / acp-fsm's).
A third argument, another checkout of acp-fsm, adds it as `before` to the same alternation;
`--wire chat` or `--wire responses` runs one wire only (a checkout from before the Responses
API has only chat).
Run: python -m bench.relay [deltas] [runs] [before-checkout] [--wire chat|responses]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from acp_fsm.devkit.provider import (
    Raw,
    Reply,
    ScriptedProvider,
    render_openai,
    render_responses,
)
from bench.common import INIT, agent_command, agent_env, cpu_ms, numbered, table
from tests.harness import title_lane

CEILING = "bare relay (ceiling)"
# How the client tells, from one line, whether it is an update and whether it is the answer.
Reader = Callable[[bytes, bytes], tuple[bool, bool]]


def scan(line: bytes, prompt_id: bytes) -> tuple[bool, bool]:
    """(a message chunk, the answer to `prompt_id`) by a byte search of the line."""
    if b"agent_message_chunk" in line:
        return True, False
    return False, b'"id":"' + prompt_id + b'"' in line


def parse(line: bytes, prompt_id: bytes) -> tuple[bool, bool]:
    """(a message chunk, the answer to `prompt_id`) from the line decoded in full."""
    message = orjson.loads(line)
    if message.get("method") == "session/update":
        return message["params"]["update"]["sessionUpdate"] == "agent_message_chunk", False
    return False, message.get("id") == prompt_id.decode()


@dataclass(frozen=True)
class Wire:
    name: str
    provider: str  # ACP_FSM_PROVIDER, for acp-fsm and the bare relay alike
    render: Callable[[Reply], list[bytes]]  # a reply's SSE events

    def warm_up(self) -> Raw:
        return Raw(parts=(b"".join(self.render(Reply(text="warm"))),))


WIRES = (
    Wire("chat", "openai", render_openai),
    Wire("responses", "openai-responses", render_responses),
)


@dataclass(frozen=True)
class Mode:
    name: str
    stream: Callable[[list[bytes]], Raw]  # the measured stream from its events
    read: Reader


# The server yields to its event loop after this many events, about one TCP segment of them
# (1,460 bytes, ~250 per event): the network's pace, and cheap enough that the server stays
# ahead of both relays (a yield after every event made the benchmark's own process the
# bottleneck, and both relays kept pace with it).
EVENTS_PER_SEGMENT = 6


def per_event(events: list[bytes]) -> Raw:
    """One event per HTTP chunk and per write, a pause of 0 s (a yield) after each segment."""
    parts: list[bytes | float] = []
    for i, event in enumerate(events):
        if i and i % EVENTS_PER_SEGMENT == 0:
            parts.append(0.0)
        parts.append(event)
    return Raw(parts=tuple(parts))


MODES = (
    Mode("one write, scan", lambda events: Raw(parts=(b"".join(events),)), scan),
    Mode("per event, parse", per_event, parse),
)


@dataclass(frozen=True)
class Sample:
    rate: float  # updates per second
    cpu_us: float  # the agent's CPU time per update, in microseconds


async def prompt(
    proc: asyncio.subprocess.Process, session: bytes, prompt_id: bytes, read: Reader
) -> int:
    """Send a prompt; read until its response; the number of message chunks on the way."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":"' + prompt_id + b'","method":"session/prompt",'
        b'"params":{"sessionId":"' + session + b'","prompt":[{"type":"text",'
        b'"text":"go"}]}}\n'
    )
    updates = 0
    while line := await proc.stdout.readline():
        update, answer = read(line, prompt_id)
        updates += update
        if answer:
            break
    return updates


async def one_run(
    command: list[str], env: dict[str, str], deltas: int, read: Reader, work: Path
) -> Sample:
    """One prompt relayed by the agent that `command` starts in the checkout first on its
    PYTHONPATH (`-m` puts its working directory before that path), its session in `work`, the
    server holding a warm-up stream, then the measured one."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        limit=1 << 26,
        cwd=env["PYTHONPATH"].split(os.pathsep)[0],
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        INIT
        + b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"'
        + os.fsencode(work)
        + b'","mcpServers":[]}}\n'
    )
    await proc.stdout.readline()
    created = await proc.stdout.readline()
    session = created.split(b'"sessionId":"')[1].split(b'"')[0]
    assert await prompt(proc, session, b"warm", read) == 1
    cpu_before = cpu_ms(proc.pid)
    started = time.perf_counter()
    updates = await prompt(proc, session, b"relay", read)
    elapsed = time.perf_counter() - started
    cpu = cpu_ms(proc.pid) - cpu_before
    proc.stdin.close()
    await proc.wait()
    assert updates == deltas, (command, updates, deltas)
    return Sample(updates / elapsed, cpu * 1000 / updates)


# Samples by (wire, mode, agent).
Samples = dict[tuple[str, str, str], list[Sample]]


async def measure(
    deltas: int, runs: int, before: str | None, wires: tuple[Wire, ...], scratch: str | None = None
) -> Samples:
    """Each run: every wire, every mode, every agent, in turn. The agents work in a temporary
    folder made in `scratch` (else the system's), their home in it; it is removed after."""
    with tempfile.TemporaryDirectory(prefix="acp-fsm-bench-relay-", dir=scratch) as folder:
        return await _measure(deltas, runs, before, wires, Path(folder))


async def _measure(
    deltas: int, runs: int, before: str | None, wires: tuple[Wire, ...], folder: Path
) -> Samples:
    events = {wire.name: wire.render(Reply(text=numbered("tok ", deltas))) for wire in wires}
    async with ScriptedProvider(api_key="sk-bench") as server:
        env = agent_env(
            PYTHONPATH=_root(),
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="sk-bench",
            ACP_FSM_HOME=str(folder / "home"),
            **title_lane(server),  # the title call after the warm-up takes no stream
        )
        env.pop("ACP_FSM_STRICT_SCHEMAS", None)  # as shipped
        agents = [("acp-fsm", env), (CEILING, env)]
        if before is not None:
            agents.insert(1, ("acp-fsm before", {**env, "PYTHONPATH": before}))
        samples: Samples = {}
        for _ in range(runs):
            for wire in wires:
                for mode in MODES:
                    stream = mode.stream(events[wire.name])
                    for name, env_ in agents:
                        server.script(wire.warm_up(), stream)
                        sample = await one_run(
                            _command(name),
                            {**env_, "ACP_FSM_PROVIDER": wire.provider},
                            deltas,
                            mode.read,
                            folder,
                        )
                        samples.setdefault((wire.name, mode.name, name), []).append(sample)
    return samples


def _command(agent: str) -> list[str]:
    return [sys.executable, "-m", "bench.bare_relay"] if agent == CEILING else agent_command()


def _root() -> str:
    from tests.harness import ROOT

    return str(ROOT)


def rows(samples: Samples) -> list[str]:
    """Per wire and mode: each agent's median and best rate and median CPU per update, then
    each acp-fsm's ratios to the ceiling."""
    lines = []
    for wire in WIRES:
        for mode in MODES:
            lines += _mode_rows(
                f"{wire.name:<10} {mode.name:<18}",
                [
                    (agent, got)
                    for (w, m, agent), got in samples.items()
                    if (w, m) == (wire.name, mode.name)
                ],
            )
    return lines


def _mode_rows(label: str, agents: list[tuple[str, list[Sample]]]) -> list[str]:
    """The rows of one wire and mode (none when it was not run)."""
    rate = {name: statistics.median(s.rate for s in got) for name, got in agents}
    cpu = {name: statistics.median(s.cpu_us for s in got) for name, got in agents}
    lines = [
        f"{label} {name:<22} {rate[name]:>10,.0f} "
        f"{max(s.rate for s in got):>10,.0f} {cpu[name]:>10.1f}"
        for name, got in agents
    ]
    lines += [
        f"{label} {name + ' / ceiling':<22} {rate[name] / rate[CEILING]:>10.2f} {'':>10} "
        f"{cpu[CEILING] / cpu[name]:>10.2f}"
        for name, _ in agents
        if name != CEILING
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.relay", description=__doc__.split("\n")[0]
    )
    parser.add_argument("deltas", nargs="?", type=int, default=20_000)
    parser.add_argument("runs", nargs="?", type=int, default=5)
    parser.add_argument("before", nargs="?", help="another checkout of acp-fsm")
    parser.add_argument("--wire", choices=[w.name for w in WIRES], help="this wire only")
    args = parser.parse_args()
    wires = tuple(w for w in WIRES if args.wire in (None, w.name))
    samples = asyncio.run(measure(args.deltas, args.runs, args.before, wires))
    table(
        f"relay: {args.deltas:,} deltas -> agent_message_chunk, {args.runs} runs (updates/s; "
        "agent CPU µs per update; ratios: of rates, of CPU per update)",
        f"{'wire':<10} {'mode':<18} {'agent':<22} {'median':>10} {'best':>10} {'CPU µs':>10}",
        rows(samples),
    )


if __name__ == "__main__":
    main()
