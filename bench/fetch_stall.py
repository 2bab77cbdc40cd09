"""fetch_url of a big page: how long the agent's event loop stalls while the page is made into
Markdown, and how much memory the agent (and its page worker) take for it.

A local server serves an HTML page of `PAGE_BYTES` (5 MiB: the most fetch_url reads); the
scripted model calls fetch_url on it with `max_chars` (1,000,000: the whole page converted;
100,000, the default: as much of it as that needs), the scripted editor allows it. Meanwhile a
client pings the agent with `_acp_fsm/sleep` (0 ms) every `PING_S`: the longest wait for an
answer is the loop's longest stall, what every other session and a cancel wait for; over the
whole turn, while a page worker ran ("converting"), and with the agent idle first (what the
machine alone causes). Memory:
the agent's peak RSS (VmHWM) and its RSS once the turn is answered; the page worker's peak
(sampled while it runs). With BENCH_AGAINST=<another checkout>, its agent is measured the same
way, in turn with this one's (the before of a change).

Run: python -m bench.fetch_stall [max_chars ...]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from acp_fsm.devkit.editor import AgentLink, Editor
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from bench.common import checkouts, table
from tests.harness import agent_env, title_lane

PAGE_BYTES = 5 * 1024 * 1024
ROW = "<div><h2>Title</h2><p>Some <b>bold</b> text and <a href='/a'>a link</a>.</p></div>\n"
PAGE = "<html><head><title>Big</title></head><body>" + ROW * (PAGE_BYTES // len(ROW))
PING_S = 0.01
LIMITS = (1_000_000, 100_000)
BARE = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
IDLE_S = 2.0  # pinged first with nothing to do: the stalls the machine alone causes
TURN_S = 600  # the longest a turn is waited for (the before of a change converts on its loop)


def status_kib(pid: int, field: str) -> int:
    """A field of /proc/PID/status in KiB (0 once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def workers_of(pid: int) -> list[int]:
    """The children of `pid` that are page workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"page_worker" in cmdline:
            found.append(int(entry.name))
    return found


async def serve_page() -> tuple[web.AppRunner, str]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    app = web.Application()
    app.router.add_get("/big", page)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/big"


@dataclass
class Pings:
    """What the pings of one period saw: the longest wait for an answer (s), over all and
    while a page worker ran, and the workers' peak RSS (KiB)."""

    longest: float = 0.0
    converting: float = 0.0
    worker_kib: int = 0


async def pings(agent: AgentLink, pid: int, until: asyncio.Future[Any]) -> Pings:
    """Ping the agent every `PING_S` until `until` is done."""
    seen = Pings()
    while not until.done():
        workers = workers_of(pid)
        asked = time.perf_counter()
        await agent.call("_acp_fsm/sleep", {"ms": 0}, wait_s=TURN_S)
        waited = time.perf_counter() - asked
        seen.longest = max(seen.longest, waited)
        if workers:
            seen.converting = max(seen.converting, waited)
        for worker in workers:
            seen.worker_kib = max(seen.worker_kib, status_kib(worker, "VmHWM"))
        await asyncio.sleep(PING_S)
    return seen


async def one_fetch(label: str, root: Path, url: str, limit: int) -> str:
    """A turn that fetches `url` with `limit`, pinged meanwhile: one row of the table."""
    home = Path(tempfile.mkdtemp(prefix="acp-fsm-fetch-bench-"))
    async with ScriptedProvider() as server:
        call = Call("f1", "fetch_url", json.dumps({"url": url, "max_chars": limit}))
        server.script(Reply(calls=(call,)), Reply(text="done"))
        env = agent_env(
            PYTHONPATH=str(root),
            ACP_FSM_PROVIDER="openai",
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="sk-bench-not-a-real-key",
            ACP_FSM_HOME=str(home),
            XDG_CONFIG_HOME=str(home / "config"),
            ACP_FSM_MODEL="bench-model",
            ACP_FSM_CONTEXT_WINDOW="100000000",  # a whole page answered: nothing compacted
            ACP_FSM_LOG_LEVEL="warning",
            **title_lane(server),
        )
        editor = Editor()
        editor.permissions.append("allow_once")
        # -P: the checkout on PYTHONPATH is the agent, not the one in the working directory.
        agent = await AgentLink.spawn(
            env, command=(sys.executable, "-P", "-m", "acp_fsm"), editor=editor
        )
        try:
            assert agent.proc is not None
            pid = agent.proc.pid
            await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": BARE})
            session = (await agent.call("session/new", {"cwd": str(home), "mcpServers": []}))[
                "sessionId"
            ]
            quiet = await pings(agent, pid, asyncio.ensure_future(asyncio.sleep(IDLE_S)))
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "read it"}]}
            started = time.monotonic()
            _, answered = await agent.start_request("session/prompt", prompt)
            turn = await pings(agent, pid, answered)
            took = time.monotonic() - started
            answer = await answered
            assert "result" in answer, f"{label}: the prompt failed: {answer}"
            result = answer["result"]["stopReason"]
            peak, now = status_kib(pid, "VmHWM"), status_kib(pid, "VmRSS")
        finally:
            await agent.kill()
    # "-": no page worker was seen (an agent that converts on its loop)
    converting = f"{turn.converting * 1000:.0f}" if turn.worker_kib else "-"
    return (
        f"{label:<14} {limit:>9,} {result:<9} {took:7.1f} {quiet.longest * 1000:8.0f} "
        f"{turn.longest * 1000:9.0f} {converting:>11} {peak // 1024:8d} "
        f"{now // 1024:8d} {turn.worker_kib // 1024:8d}"
    )


async def measure(limits: list[int]) -> list[str]:
    runner, url = await serve_page()
    rows = []
    try:
        for limit in limits:
            for label, root in checkouts():
                rows.append(await one_fetch(label, root, url, limit))
    finally:
        await runner.cleanup()
    return rows


def main() -> None:
    limits = [int(a) for a in sys.argv[1:]] or list(LIMITS)
    rows = asyncio.run(measure(limits))
    table(
        f"fetch_url of a {PAGE_BYTES // (1024 * 1024)} MiB HTML page, pinged every "
        f"{PING_S * 1000:g} ms (ms; MiB)",
        f"{'agent':<14} {'max_chars':>9} {'stop':<9} {'turn s':>7} {'idle ms':>8} "
        f"{'stall ms':>9} {'converting':>11} {'peak RSS':>8} {'RSS then':>8} {'worker':>8}",
        rows,
    )


if __name__ == "__main__":
    main()
