"""Long sessions: the agent's CPU per tool turn (two model calls: a read_file call, then the
answer) and `session/load` time, for a session holding 10, 1,000 and 10,000 stored messages.

The messages are stored through the store's own API (tool turns as the agent stores them: the
prompt, the call, its result, the answer), then a new agent process loads the session and runs
tool turns against the scripted provider. CPU is the agent process's own (user + system, from
/proc), so the scripted server's share is not counted. The window is set far above the
conversation: nothing is compacted.

Targets (issue 19): at 10,000 messages, CPU per tool turn within 2x of that at 10; the load of
10,000 messages <= 250 ms.
Run: python -m bench.long_session [turns]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp_fsm import transcript, updates
from acp_fsm.devkit.provider import Call, RecordedRequest, Reply, ScriptedProvider
from acp_fsm.providers.types import (
    AssistantMessage,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from acp_fsm.schemas import acp_types as acp
from acp_fsm.store import Store
from bench.common import PYCACHE, cpu_ms, table
from tests.harness import AgentProcess, agent_env

SIZES = (10, 1_000, 10_000)
MESSAGES_PER_TURN = 4  # the prompt, the call, its result, the answer
NOTES = "the notes of the project: build with make, test with make check\n" * 3


def answer(request: RecordedRequest) -> Reply:
    """A model that reads notes.txt when prompted, then answers."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply(text="The notes say to build with make.")
    return Reply(calls=(Call(f"call_{len(messages)}", "read_file", '{"path": "notes.txt"}'),))


async def fill(home: Path, session_id: str, turns: int) -> None:
    """Store `turns` tool turns in the session, as the agent stores them."""
    store = await Store.open(home / "sessions.db")
    try:
        for i in range(turns):
            prompt = [{"type": "text", "text": f"read the notes, please ({i})"}]
            store.append_soon(
                session_id,
                "user",
                {"prompt": prompt, "parts": [transcript.part_to_json(TextPart(prompt[0]["text"]))]},
            )
            call = ToolCallPart(
                f"call_old_{i}", "read_file", {"path": "notes.txt"}, '{"path": "notes.txt"}'
            )
            view = {"title": "Read notes.txt", "kind": "read", "rawInput": call.arguments}
            store.append_soon(
                session_id,
                "assistant",
                transcript.assistant_body(
                    AssistantMessage((call,), StopReason.TOOL_USE), "tool_use", {call.id: view}
                ),
            )
            content: list[acp.ToolCallContent] = [updates.text_block(NOTES)]
            store.append_soon(
                session_id,
                "tool_result",
                transcript.result_body(
                    ToolResultPart(call.id, NOTES), updates.final_view("completed", content)
                ),
            )
            store.append_soon(
                session_id,
                "assistant",
                transcript.assistant_body(
                    AssistantMessage(
                        (TextPart("The notes say to build with make."),), StopReason.END_TURN
                    ),
                    "end_turn",
                    {},
                ),
            )
            last = store.append_soon(session_id, "turn_end", {"stopReason": "end_turn"})
        if turns:
            await last  # the store commits in order: all of them are in
    finally:
        await store.close()


async def start(server: ScriptedProvider, home: Path) -> AgentProcess:
    """An agent on `home`, with bytecode caches as an installed copy has them (in a cache of
    the benchmark's, so the checkout stays as it is): a load right after `initialize` pays
    the imports the first answer did not need, not the compilation of their sources."""
    agent = await AgentProcess.start(
        agent_env(
            PYTHONDONTWRITEBYTECODE=None,
            PYTHONPYCACHEPREFIX=str(PYCACHE),
            ACP_FSM_PROVIDER="openai",
            OPENAI_BASE_URL=server.openai_base_url,
            OPENAI_API_KEY="sk-bench-not-a-real-key",
            ACP_FSM_HOME=str(home),
            ACP_FSM_CONTEXT_WINDOW="100000000",
            ACP_FSM_LOG_LEVEL="warning",
            ACP_FSM_STRICT_SCHEMAS="0",
            ACP_FSM_MODEL="bench-model",
        )
    )
    # No fs/terminal capabilities: read_file reads the disk (nobody here answers fs/*).
    await agent.initialize(fs={"readTextFile": False, "writeTextFile": False}, terminal=False)
    return agent


async def prompt(agent: AgentProcess, session_id: str, text: str) -> dict[str, Any]:
    return await agent.request(
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
        wait_s=120,
    )


def step(what: str) -> None:
    print(f"  {time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


async def measure(messages: int, turns: int, project: Path) -> tuple[float, float]:
    """(CPU ms per tool turn, session/load ms) for a session of `messages` messages."""
    home = Path(tempfile.mkdtemp(prefix="acp-fsm-long-"))
    async with ScriptedProvider(fallback=answer) as server:
        first = await start(server, home)
        created = await first.request("session/new", {"cwd": str(project), "mcpServers": []})
        session_id = created["result"]["sessionId"]
        await first.close()
        step(f"{messages:,} messages: storing them")
        await fill(home, session_id, messages // MESSAGES_PER_TURN)
        step("loading")
        agent = await start(server, home)
        assert agent.proc is not None
        pid = agent.proc.pid
        cpu_before = cpu_ms(pid)
        started = time.perf_counter()
        loaded = await agent.request(
            "session/load",
            {"sessionId": session_id, "cwd": str(project), "mcpServers": []},
            wait_s=120,
        )
        load_ms = (time.perf_counter() - started) * 1000
        step(f"load: {load_ms:.0f} ms, agent CPU {cpu_ms(pid) - cpu_before:.0f} ms")
        assert "result" in loaded, loaded
        step("prompting")
        await prompt(agent, session_id, "warm up")  # the first call's one-off costs
        before = cpu_ms(pid)
        for i in range(turns):
            done = await prompt(agent, session_id, f"read the notes again ({i})")
            assert done.get("result", {}).get("stopReason") == "end_turn", done
        per_turn = (cpu_ms(pid) - before) / turns
        await agent.close()
    return per_turn, load_ms


async def measure_all(turns: int) -> list[str]:
    project = Path(tempfile.mkdtemp(prefix="acp-fsm-long-project-"))
    (project / "notes.txt").write_text(NOTES)
    rows = []
    base: float | None = None
    for size in SIZES:
        per_turn, load_ms = await measure(size, turns, project)
        base = per_turn if base is None else base
        rows.append(f"{size:>8,} {per_turn:10.1f} {per_turn / base:8.2f}x {load_ms:10.1f}")
    return rows


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rows = asyncio.run(measure_all(turns))
    table(
        f"Long sessions: agent CPU per tool turn ({turns} turns) and session/load",
        "messages  CPU ms/turn   vs 10    load ms",
        rows,
    )
    print("targets: at 10,000 messages within 2x of 10; load of 10,000 <= 250 ms")


if __name__ == "__main__":
    main()
