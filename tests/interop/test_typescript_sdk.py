"""Interop with the official TypeScript SDK's client (`@agentclientprotocol/sdk` on npm).

`node/scenario.mjs` runs the scenario of the Python interop test with the TypeScript client
(`acp.client().connectWith(acp.ndJsonStream(...))`) against two real agent processes and prints
one JSON line per checkpoint. The module fixture starts the scripted provider (Anthropic wire
format here, OpenAI in the Python SDK test), scripts every model reply in advance, runs node
once, and each test below asserts on one checkpoint, on the model calls the provider recorded,
or on the agent logs.

Needs `node` (>= 18) and the pinned SDK installed: `npm ci --prefix tests/interop/node`
(`.ci/run` does it); skipped with that command otherwise.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from acp_fsm.devkit.provider import (
    Call,
    Disconnect,
    Hang,
    RecordedRequest,
    Reply,
    ScriptedProvider,
)
from tests.harness import MADE_TITLE
from tests.interop.support import (
    SETUP_UPDATES,
    args,
    command,
    environment,
    log_events,
    log_tail,
    run_scenario,
    schema_violations,
    tool_results,
    user_texts,
)

NODE_DIR: Final = Path(__file__).parent / "node"
SCRIPT: Final = NODE_DIR / "scenario.mjs"
INSTALL: Final = "npm ci --prefix tests/interop/node"
PROVIDER: Final = "anthropic"
NODE_TIMEOUT_S: Final = 60.0

PROMPTS: Final = {
    "read": "What is in notes.txt?",
    "write": "Please update greeting.txt",
    "cancel": "Tell me a long story",
    "again": "and now?",
}
BUFFER: Final = "unsaved line 1\nunsaved line 2\n"  # the editor's text, not the disk's
ORDER: Final = [
    "initialize",
    "session_new",
    "read",
    "write",
    "cancel",
    "exit_first",
    "initialize_again",
    "load",
    "after_load",
    "list",
    "exit_second",
    "summary",
]


def pinned_version() -> str:
    version: str = json.loads((NODE_DIR / "package.json").read_text())["dependencies"][
        "@agentclientprotocol/sdk"
    ]
    return version


def why_not_runnable() -> str | None:
    """The reason the TypeScript interop cannot run here, or None."""
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        return "node/npm not found on PATH: install Node.js >= 18 to run the TypeScript interop"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    major = re.match(r"v(\d+)", version.stdout.strip())
    if major is None or int(major.group(1)) < 18:
        return f"node {version.stdout.strip() or '?'} is too old: the SDK needs Node.js >= 18"
    installed = NODE_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    if not installed.exists():
        return f"the TypeScript SDK is not installed: run `{INSTALL}`"
    have = json.loads(installed.read_text())["version"]
    if have != pinned_version():
        return (
            f"node_modules has @agentclientprotocol/sdk {have}, package.json pins "
            f"{pinned_version()}: run `{INSTALL}`"
        )
    return None


# ----------------------------------------------------------------------------- the run


@dataclass
class Run:
    """What one node run left: its checkpoints, and what the provider and agents recorded."""

    checkpoints: dict[str, dict[str, Any]]
    stdout: str
    stderr: str
    returncode: int
    requests: list[RecordedRequest]
    disconnects: list[Disconnect]
    project: Path
    logs: list[Path]

    def checkpoint(self, name: str) -> dict[str, Any]:
        """The checkpoint's fields, failing with what node printed when it is missing or
        failed."""
        point = self.checkpoints.get(name)
        assert point is not None, (
            f"node never reached checkpoint {name!r} (exit {self.returncode})\n"
            f"stdout:\n{self.stdout[-4000:]}\nstderr:\n{self.stderr[-4000:]}\n" + self.agent_logs()
        )
        assert point["ok"], (
            f"checkpoint {name!r} failed: {point.get('error')} "
            f"(code {point.get('code')}, data {json.dumps(point.get('data'))}, "
            f"issues {json.dumps(point.get('issues'))})\n"
            f"{point.get('stack', '')}\n" + self.agent_logs()
        )
        return point

    def agent_logs(self) -> str:
        return "\n".join(f"--- {log.name}:\n{log_tail(log)}" for log in self.logs)

    def model_call_with_result(self, call_id: str) -> RecordedRequest:
        return next(r for r in self.requests if call_id in tool_results(r))


def script(server: ScriptedProvider) -> None:
    """Every model reply of the scenario, in the order node's prompts consume them."""
    server.script(
        # read: a read through fs/read_text_file, then an answer
        Reply(text="Let me look.", calls=(Call("read-1", "read_file", args(path="notes.txt")),)),
        Reply(text="It has two lines."),
        # write: a write asking permission, then an answer
        Reply(
            text="Writing.",
            calls=(Call("write-1", "write_file", args(path="greeting.txt", content="new\n")),),
        ),
        Reply(text="Done."),
        # cancel: Anthropic events message_start, block start, ping and two text deltas,
        # then silence until the agent goes away
        Reply(text=("partial ", "answer ", "never sent"), fault=Hang(5)),
        # after the load
        Reply(text="Still here."),
    )


async def run_node(root: Path) -> Run:
    project = (root / "project").resolve()
    project.mkdir()
    (project / "notes.txt").write_text("on disk\n")
    (project / "greeting.txt").write_text("old\n")
    logs = [root / "first-agent.log", root / "second-agent.log"]
    config = {
        "command": command(),
        "project": str(project),
        "logs": [str(p) for p in logs],
        "buffers": {str(project / "notes.txt"): BUFFER},
        "prompts": PROMPTS,
    }
    async with ScriptedProvider() as server:
        script(server)
        env = {**environment(server, root / "home", PROVIDER), "NO_COLOR": "1"}
        node = await run_scenario(SCRIPT, config, env, NODE_TIMEOUT_S)
        requests, disconnects = list(server.requests), list(server.disconnects)
    return Run(
        node.checkpoints,
        node.stdout,
        node.stderr,
        node.returncode,
        requests,
        disconnects,
        project,
        logs,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ts-interop")
    return asyncio.run(run_node(root))


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


def texts(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"]["text"]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk" and u["content"]["type"] == "text"
    ]


def of_call(updates: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("toolCallId") == call_id]


def summary(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, text or call id:status) of each message chunk and tool call update."""
    rows = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in ("user_message_chunk", "agent_message_chunk"):
            rows.append((kind, update["content"]["text"]))
        elif kind in ("tool_call", "tool_call_update"):
            rows.append((kind, f"{update['toolCallId']}:{update.get('status')}"))
    return rows


def diffs(update: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    return [
        (c["path"], c.get("oldText"), c["newText"])
        for c in update.get("content") or ()
        if c["type"] == "diff"
    ]


# -------------------------------------------------------------------------------- tests


def test_node_ran_the_whole_scenario(run: Run) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    assert list(run.checkpoints) == ORDER, run.stdout[-4000:]
    assert run.checkpoint("summary")["sdkVersion"] == pinned_version()


def test_initialize(run: Run) -> None:
    response = run.checkpoint("initialize")["response"]
    assert response["protocolVersion"] == 1
    caps = response["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["promptCapabilities"]["embeddedContext"] is True
    assert {"list", "resume", "close"} <= set(caps["sessionCapabilities"])
    assert response["agentInfo"]["name"] == "acp-fsm"
    assert run.checkpoint("session_new")["sessionId"]


def test_prompt_reads_through_the_client(run: Run) -> None:
    point = run.checkpoint("read")
    session_id = run.checkpoint("session_new")["sessionId"]
    assert point["stopReason"] == "end_turn"
    reads = [params for method, params in point["calls"] if method == "fs/read_text_file"]
    assert [(r["sessionId"], r["path"]) for r in reads] == [
        (session_id, str(run.project / "notes.txt"))
    ]
    assert tool_results(run.model_call_with_result("read-1"))["read-1"] == BUFFER
    assert texts(point["updates"]) == ["Let me look.", "It has two lines."]
    call = of_call(point["updates"], "read-1")
    assert call[0]["sessionUpdate"] == "tool_call" and call[0]["kind"] == "read"
    assert call[-1]["status"] == "completed"
    # the SDK's ActiveSession saw the same turn, ending with the prompt's stop reason
    assert point["helper"][-1] == "stop:end_turn"
    assert [k for k in point["helper"][:-1] if k != "available_commands_update"] == [
        k for k in kinds(point["updates"]) if k != "available_commands_update"
    ]


def test_write_with_permission_allow_once(run: Run) -> None:
    point = run.checkpoint("write")
    session_id = run.checkpoint("session_new")["sessionId"]
    path = str(run.project / "greeting.txt")
    assert point["stopReason"] == "end_turn"
    methods = [method for method, _ in point["calls"]]
    assert "session/request_permission" in methods
    assert methods.index("session/request_permission") < methods.index("fs/write_text_file")
    asked = point["calls"][methods.index("session/request_permission")][1]
    assert asked["toolCall"]["toolCallId"] == "write-1"
    assert {"allow_once", "reject_once"} <= {o["kind"] for o in asked["options"]}
    writes = [params for method, params in point["calls"] if method == "fs/write_text_file"]
    assert writes == [{"sessionId": session_id, "path": path, "content": "new\n"}]
    assert point["buffers"][path] == "new\n"
    assert (run.project / "greeting.txt").read_text() == "old\n"  # the editor writes
    final = of_call(point["updates"], "write-1")[-1]
    assert final["status"] == "completed"
    assert diffs(final) == [(path, "old\n", "new\n")]
    assert tool_results(run.model_call_with_result("write-1"))["write-1"].startswith(
        "Wrote greeting.txt"
    )


def test_cancel_mid_stream(run: Run) -> None:
    point = run.checkpoint("cancel")
    assert point["stopReason"] == "cancelled"
    assert texts(point["updates"]) == ["partial ", "answer "]
    assert point["helper"][-1] == "stop:cancelled"
    hung = [d for d in run.disconnects if d.events_sent == 5]
    assert len(hung) == 1, run.disconnects  # the provider saw the agent go away


def test_load_in_a_new_process_replays(run: Run) -> None:
    point = run.checkpoint("load")
    assert point["response"]["modes"]["currentModeId"] == "ask"
    replayed = point["replayed"]
    assert summary(replayed) == [
        ("user_message_chunk", PROMPTS["read"]),
        ("agent_message_chunk", "Let me look."),
        ("tool_call", "read-1:pending"),
        ("tool_call_update", "read-1:completed"),
        ("agent_message_chunk", "It has two lines."),
        ("user_message_chunk", PROMPTS["write"]),
        ("agent_message_chunk", "Writing."),
        ("tool_call", "write-1:pending"),
        ("tool_call_update", "write-1:completed"),
        ("agent_message_chunk", "Done."),
        ("user_message_chunk", PROMPTS["cancel"]),
        ("agent_message_chunk", "partial answer "),
    ]
    assert diffs(of_call(replayed, "write-1")[-1]) == [
        (str(run.project / "greeting.txt"), "old\n", "new\n")
    ]
    # the whole replay came before the response; only the session's setup after it
    setup = [u for u in replayed if u["sessionUpdate"] in SETUP_UPDATES]
    assert setup and setup[0]["sessionUpdate"] == "available_commands_update"
    assert point["beforeResponse"] == len(replayed) - len(setup)
    assert point["afterResponse"] == len(setup)


def test_prompt_after_load_carries_the_history(run: Run) -> None:
    point = run.checkpoint("after_load")
    assert point["stopReason"] == "end_turn"
    assert texts(point["updates"]) == ["Still here."]
    assert user_texts(run.requests[-1]) == [
        PROMPTS["read"],
        PROMPTS["write"],
        PROMPTS["cancel"],
        PROMPTS["again"],
    ]


def test_list_sessions(run: Run) -> None:
    point = run.checkpoint("list")
    session_id = run.checkpoint("session_new")["sessionId"]
    for listing in (point["all"], point["mine"]):
        assert [s["sessionId"] for s in listing["sessions"]] == [session_id]
        assert listing["sessions"][0]["cwd"] == str(run.project)
        assert listing["sessions"][0]["title"] == MADE_TITLE  # the first process made it
        assert "nextCursor" not in listing


def test_the_sdk_took_every_message(run: Run) -> None:
    """Nothing the SDK dropped or refused, both agents exited 0, none broke its schemas."""
    for name in ("exit_first", "exit_second"):
        exit_status = run.checkpoint(name)
        assert (exit_status["code"], exit_status["signal"]) == (0, None), run.agent_logs()
    summary = run.checkpoint("summary")
    assert summary["sdkErrors"] == []
    for health in summary["health"]:
        assert health["refused"] == []
        assert health["wireUpdates"] == health["deliveredUpdates"]
    for log in run.logs:
        assert schema_violations(log) == []
        failures = [e for e in log_events(log) if e.get("level") in ("error", "critical")]
        assert failures == [], failures


def test_the_lockfile_pins_the_tested_version() -> None:
    """package.json pins one exact version and the committed lockfile resolves it."""
    version = pinned_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@agentclientprotocol/sdk"]["version"] == version
