"""Cancel latency: `session/cancel` written → `{stopReason: "cancelled"}` read, while the model
streams, while a permission request waits, while a command runs, and while an MCP server's
tool runs (`tests/mcp/tools_server.py` over stdio).

Target (developers' guide): ≤ 3 ms while streaming; never an update after the response.
Run: python -m bench.cancel [rounds]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp_fsm.providers.scripted import Call, Hang, Reply, ScriptedProvider
from bench.common import summary, table
from tests.harness import AgentProcess, agent_env, wait_until

STREAM = Reply(text=["tok "] * 100_000, delay_s=0.0005, fault=Hang(50_000))
PERMISSION = Reply(calls=(Call("call_w", "write_file", json.dumps({"path": "x.txt",
                                                                   "content": "x"})),))
COMMAND = Reply(calls=(Call("call_r", "run_command", json.dumps({"command": "sleep 30"})),))
SUMMARY = Reply(text="The summary", fault=Hang(1))  # /compact: the summary call never ends
MCP_CALL = Reply(calls=(Call("call_m", "mcp__tools__slow", json.dumps({"seconds": 30})),))
MCP_SERVER = {"name": "tools", "command": sys.executable,
              "args": [str(Path(__file__).resolve().parents[1] / "tests/mcp/tools_server.py")],
              "env": []}


async def one_cancel(agent: AgentProcess, session: str, wait_for: str,
                     server: ScriptedProvider) -> tuple[float, bool]:
    """Prompt, wait until the turn is in the wanted state, cancel; (ms, updates after)."""
    prompt_id = f"p{time.monotonic_ns()}"
    response = agent.expect(prompt_id, "session/prompt")
    sent = len(server.requests)
    text = "/compact" if wait_for == "summary" else "go"
    await agent.send({"jsonrpc": "2.0", "id": prompt_id, "method": "session/prompt",
                      "params": {"sessionId": session,
                                 "prompt": [{"type": "text", "text": text}]}})
    while True:
        if wait_for == "summary":  # compacting: the summary call has reached the provider
            await wait_until(lambda: len(server.requests) > sent, "the summary call")
            break
        if wait_for in ("permission", "command"):
            request = await agent.next_request()
            if request["method"] != "session/request_permission":
                continue
            if wait_for == "permission":
                break
            await agent.respond(request, {"outcome": {"outcome": "selected",
                                                      "optionId": "allow_once"}})
            wait_for = "running"
        else:
            note = await agent.next_notification()
            update = note["params"]["update"]
            if (wait_for == "stream" and update["sessionUpdate"] == "agent_message_chunk") or (
                    wait_for == "running" and update.get("status") == "in_progress"):
                break
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    await agent.notify("session/cancel", {"sessionId": session})
    answer = await response
    elapsed = (time.perf_counter() - started) * 1000
    assert answer["result"]["stopReason"] == "cancelled", answer
    position = agent.messages.index(answer)
    await asyncio.sleep(0.1)
    late = [m for m in agent.messages[position + 1:] if m.get("method") == "session/update"
            and m["params"]["sessionId"] == session]
    while not agent.notifications.empty():
        agent.notifications.get_nowait()
    while not agent.requests.empty():
        agent.requests.get_nowait()
    return elapsed, bool(late)


async def measure(rounds: int) -> list[str]:
    rows = []
    async with ScriptedProvider() as server:
        home, work = tempfile.mkdtemp(), tempfile.mkdtemp()
        (Path(work) / "x.txt").touch()
        env = agent_env(ACP_FSM_PROVIDER="openai", OPENAI_BASE_URL=server.openai_base_url,
                        OPENAI_API_KEY="sk-bench", ACP_FSM_HOME=home, ACP_FSM_LOG_LEVEL="warning",
                        ACP_FSM_STRICT_SCHEMAS="0")
        agent = await AgentProcess.start(env)
        await agent.initialize(fs={"readTextFile": False, "writeTextFile": False},
                               terminal=False)
        created: dict[str, Any] = await agent.request("session/new", {
            "cwd": work, "mcpServers": [MCP_SERVER]})
        session = created["result"]["sessionId"]
        for label, reply, wait_for in (("streaming", STREAM, "stream"),
                                       ("awaiting_permission", PERMISSION, "permission"),
                                       ("running_tools (local sleep)", COMMAND, "command"),
                                       ("running_tools (MCP call)", MCP_CALL, "command"),
                                       ("compacting (summary call)", SUMMARY, "summary")):
            samples, late = [], 0
            for _ in range(rounds):
                server.script(reply)
                elapsed, had_late = await one_cancel(agent, session, wait_for, server)
                samples.append(elapsed)
                late += had_late
            rows.append(f"{label:<30} {summary(samples)} {late:>6}")
        await agent.close()
    return rows


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rows = asyncio.run(measure(rounds))
    table(f"session/cancel -> cancelled ({rounds} rounds, ms)",
          f"{'state':<30} {'median':>8} {'p90':>8} {'min':>8} {'late':>6}", rows)


if __name__ == "__main__":
    main()
