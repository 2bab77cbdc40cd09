"""Helpers shared by the interop tests.

The official SDKs start the agent themselves, so nothing here spawns it: `environment` builds
the variables to hand to the SDK (the Python SDK passes only a handful of the parent's variables
to the child, so the whole environment is given explicitly). Each agent's stderr goes to a log
file so a failing test can quote it, and the helpers below read those JSON logs and the model
calls the scripted provider recorded.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.provider import RecordedRequest, ScriptedProvider
from tests.e2e.support import tool_results as e2e_tool_results
from tests.harness import agent_command, agent_env, title_lane

API_KEY: Final = "sk-interop-5e1a-NOT-A-REAL-KEY-0c3b"
# What follows a session's setup answer: its commands, and its options once the model list came.
SETUP_UPDATES: Final = frozenset({"available_commands_update", "config_option_update"})


def environment(server: ScriptedProvider, home: Path, provider: str) -> dict[str, str]:
    """The agent's environment: pointed at `server` with `provider`'s wire format, its own
    ACP_FSM_HOME, no retries, strict outbound schema checks and JSON debug logs on stderr."""
    return agent_env(
        ACP_FSM_PROVIDER=provider,
        OPENAI_BASE_URL=server.openai_base_url,
        ANTHROPIC_BASE_URL=server.anthropic_base_url,
        OPENAI_API_KEY=API_KEY,
        ANTHROPIC_API_KEY=API_KEY,
        ACP_FSM_HOME=str(home),
        ACP_FSM_MAX_RETRIES="0",
        ACP_FSM_MODEL=None,
        ACP_PERMISSION_TIMEOUT_MS=None,
        ACP_CLIENT_RPC_TIMEOUT_MS=None,
        ACP_FSM_MAX_TURN_REQUESTS=None,
        **title_lane(server),
    )


def command() -> list[str]:
    """The agent command line (the `acp-fsm` script next to the interpreter)."""
    return agent_command()


def log_events(path: Path) -> list[dict[str, Any]]:
    """The JSON log lines an agent wrote to `path`."""
    events: list[dict[str, Any]] = []
    if not path.exists():
        return events
    for line in path.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "event" in event:
            events.append(event)
    return events


def log_tail(path: Path, lines: int = 40) -> str:
    """The end of an agent's stderr, for assertion messages."""
    if not path.exists():
        return f"(no agent log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def schema_violations(path: Path) -> list[dict[str, Any]]:
    """Messages the agent itself flagged as breaking its outbound schemas."""
    return [e for e in log_events(path) if e["event"] == "outbound_schema_violation"]


# ------------------------------------------------------------------ recorded model calls


def tool_results(request: RecordedRequest) -> dict[str, str]:
    """call id -> the result text a model call carried, in either wire format."""
    return {call: text for call, (text, _) in e2e_tool_results(request).items()}


def user_texts(request: RecordedRequest) -> list[str]:
    """The text of every user prompt a model call carried, in order."""
    texts: list[str] = []
    for message in request.body["messages"]:
        if message.get("role") != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
        else:
            texts += [b["text"] for b in content if b.get("type") == "text"]
    return texts


def args(**arguments: Any) -> str:
    """Tool call arguments as the model streams them."""
    return json.dumps(arguments)


@dataclass
class NodeRun:
    """What a node scenario printed: its checkpoints by name (the first of each), all it
    wrote, and its exit status."""

    checkpoints: dict[str, dict[str, Any]]
    stdout: str
    stderr: str
    returncode: int


async def run_scenario(
    script: Path,
    config: dict[str, Any],
    env: dict[str, str],
    timeout_s: float,
    flags: Sequence[str] = (),
) -> NodeRun:
    """Run `node [flags] script '<config JSON>'` in the script's folder (killed after
    `timeout_s`) and read the checkpoints it printed, one JSON object a line."""
    proc = await asyncio.create_subprocess_exec(
        shutil.which("node") or "node",
        *flags,
        str(script),
        json.dumps(config),
        cwd=script.parent,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
    stdout = out.decode(errors="replace")
    checkpoints: dict[str, dict[str, Any]] = {}
    for line in stdout.splitlines():
        try:
            point = json.loads(line)
        except ValueError:
            continue
        if isinstance(point, dict) and "checkpoint" in point:
            checkpoints.setdefault(point["checkpoint"], point)
    return NodeRun(checkpoints, stdout, err.decode(errors="replace"), proc.returncode or 0)
