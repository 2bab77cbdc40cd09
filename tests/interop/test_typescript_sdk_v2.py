"""Interop of acp-fsm's ACP v2 with the official TypeScript SDK's experimental v2 client
(`@agentclientprotocol/sdk/experimental/v2` and `.../experimental/ws-client` on npm).

`node/scenario_v2.mjs` drives real agent processes (ACP_FSM_PROTOCOL_V2=1) with the SDK's v2
`ClientApp`: over stdio, initialize, session/new, a streamed text turn, a write asking
permission, a cancel mid-stream, then session/resume replaying from the start in a second
process and a prompt there; over WebSocket (`acp-fsm serve`, started here), initialize,
session/new and one prompt. It prints one JSON line per checkpoint. The module fixture starts
the scripted provider (Anthropic wire format), scripts every model reply in advance, runs node
once, and each test below asserts on one checkpoint, on what the SDK refused or lost in
parsing, on the model calls the provider recorded, or on the agent logs.

Needs `node` (>= 18; the WebSocket part needs a global WebSocket: Node >= 22, or >= 20.10
with `--experimental-websocket`, given here) and the pinned SDK installed:
`npm ci --prefix tests/interop/node`; skipped with that command otherwise.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from acp_fsm.devkit.provider import (
    Call,
    Hang,
    Reply,
    ScriptedProvider,
)
from tests.harness import serving
from tests.interop import test_typescript_sdk as typescript_v1
from tests.interop.support import (
    SETUP_UPDATES,
    args,
    command,
    environment,
    log_events,
    run_scenario,
    schema_violations,
    tool_results,
    user_texts,
)
from tests.interop.test_typescript_sdk import NODE_DIR, PROVIDER, pinned_version, why_not_runnable

SCRIPT: Final = NODE_DIR / "scenario_v2.mjs"
NODE_TIMEOUT_S: Final = 90.0
V2_ON: Final = {"ACP_FSM_PROTOCOL_V2": "1"}

PROMPTS: Final = {
    "text": "Say hello",
    "write": "Please update greeting.txt",
    "cancel": "Tell me a long story",
    "again": "and now?",
    "ws": "Hello over the socket",
}
ORDER: Final = [
    "initialize",
    "session_new",
    "text",
    "write",
    "cancel",
    "exit_first",
    "initialize_again",
    "resume",
    "after_resume",
    "exit_second",
    "ws_initialize",
    "ws_session_new",
    "ws_prompt",
    "summary",
]
WS_STEPS: Final = ("ws_initialize", "ws_session_new", "ws_prompt")

Update = dict[str, Any]


def websocket_flags() -> list[str] | None:
    """The node options that give it a global WebSocket, or None when it has none."""
    version = subprocess.run(
        [shutil.which("node") or "node", "--version"], capture_output=True, text=True, check=False
    )
    found = re.match(r"v(\d+)\.(\d+)", version.stdout.strip())
    if found is None:
        return None
    major, minor = int(found.group(1)), int(found.group(2))
    if major >= 22:
        return []
    if major == 21 or (major == 20 and minor >= 10):
        return ["--experimental-websocket"]
    return None


# ----------------------------------------------------------------------------- the run


@dataclass
class Run(typescript_v1.Run):
    """What one node run left (as the v1 scenario's), and whether it had a WebSocket."""

    websocket: bool = False

    def checkpoint(self, name: str) -> dict[str, Any]:
        """The checkpoint's fields (a WebSocket step skips where node has none)."""
        if name in WS_STEPS and not self.websocket:
            pytest.skip("this node has no WebSocket (needs Node >= 20.10)")
        return super().checkpoint(name)


def script(server: ScriptedProvider) -> None:
    """Every model reply of the scenario, in the order node's prompts consume them."""
    server.script(
        # text: two streamed deltas
        Reply(text=("Hello ", "there.")),
        # write: a write asking permission, then an answer
        Reply(
            text="Writing.",
            calls=(Call("write-1", "write_file", args(path="greeting.txt", content="new\n")),),
        ),
        Reply(text="Done."),
        # cancel: Anthropic events message_start, block start, ping and two text deltas,
        # then silence until the agent goes away
        Reply(text=("partial ", "answer ", "never sent"), fault=Hang(5)),
        # after the resume, in the second process
        Reply(text="Still here."),
        # over WebSocket
        Reply(text="Over the socket."),
    )


async def run_node(root: Path) -> Run:
    project = (root / "project").resolve()
    project.mkdir()
    (project / "greeting.txt").write_text("old\n")
    logs = [root / "first-agent.log", root / "second-agent.log"]
    flags = websocket_flags()
    async with ScriptedProvider() as server:
        script(server)
        env = {**environment(server, root / "home", PROVIDER), **V2_ON, "NO_COLOR": "1"}
        async with serving(env, root) as remote:
            config = {
                "command": command(),
                "project": str(project),
                "logs": [str(p) for p in logs],
                "prompts": PROMPTS,
                "ws": None if flags is None else {"url": remote.url, "token": remote.token},
            }
            node = await run_scenario(SCRIPT, config, env, NODE_TIMEOUT_S, flags or ())
        requests, disconnects = list(server.requests), list(server.disconnects)
    return Run(
        node.checkpoints,
        node.stdout,
        node.stderr,
        node.returncode,
        requests,
        disconnects,
        project,
        [*logs, remote.log],
        flags is not None,
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    reason = why_not_runnable()
    if reason is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ts-interop-v2")
    return asyncio.run(run_node(root))


# ----------------------------------------------------------------------------- helpers


def kinds(updates: list[Update]) -> list[str]:
    """Each update's kind, a state_update with its state (and an idle's stop reason)."""
    rows = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind == "state_update":
            kind += f":{update['state']}"
            if update.get("stopReason") is not None:
                kind += f":{update['stopReason']}"
        rows.append(kind)
    return rows


def without_setup(rows: list[str]) -> list[str]:
    return [row for row in rows if row not in SETUP_UPDATES]


def texts(updates: list[Update], kind: str = "agent_message_chunk") -> list[str]:
    return [
        u["content"]["text"]
        for u in updates
        if u["sessionUpdate"] == kind and u["content"]["type"] == "text"
    ]


def of_call(updates: list[Update], call_id: str) -> list[Update]:
    return [u for u in updates if u.get("toolCallId") == call_id]


def idle(updates: list[Update]) -> Update:
    """The idle state_update that ends `updates` (as the scenario cut them)."""
    last = updates[-1]
    assert (last["sessionUpdate"], last.get("state")) == ("state_update", "idle"), last
    return last


def summary(updates: list[Update]) -> list[tuple[str, str]]:
    """(kind, text or call id:status) of each message chunk and tool call update."""
    rows = []
    for update in updates:
        kind = update["sessionUpdate"]
        if kind in ("user_message_chunk", "agent_message_chunk"):
            rows.append((kind, update["content"]["text"]))
        elif kind == "user_message":
            rows.append((kind, " ".join(c["text"] for c in update["content"])))
        elif kind == "tool_call_update" and "status" in update:
            rows.append((kind, f"{update['toolCallId']}:{update['status']}"))
    return rows


def assert_turn(point: dict[str, Any], prompt: str, answer: list[str], stop: str) -> None:
    """A turn as v2 tells it: the prompt acknowledged with its message id and echoed as a
    user_message with that id, `running` before the turn's output, `idle` with `stop` last."""
    message_id = point["response"]["messageId"]
    assert isinstance(message_id, str) and message_id, point["response"]
    updates: list[Update] = point["updates"]
    rows = without_setup(kinds(updates))
    echoes = [u for u in updates if u["sessionUpdate"] == "user_message"]
    assert [(e["messageId"], e["content"]) for e in echoes] == [
        (message_id, [{"type": "text", "text": prompt}])
    ], echoes
    assert "state_update:running" in rows, rows
    assert rows.index("state_update:running") < rows.index("agent_message_chunk"), rows
    assert rows[-1] == f"state_update:idle:{stop}", rows
    assert idle(updates)["stopReason"] == stop
    assert texts(updates) == answer
    chunk_ids = {u["messageId"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"}
    assert message_id not in chunk_ids, chunk_ids  # the agent's message is not the user's


# -------------------------------------------------------------------------------- tests


def test_node_ran_the_whole_scenario(run: Run) -> None:
    assert run.returncode == 0, run.stderr[-4000:]
    expected = ORDER if run.websocket else [c for c in ORDER if c not in WS_STEPS]
    assert list(run.checkpoints) == expected, run.stdout[-4000:]
    assert run.checkpoint("summary")["sdkVersion"] == pinned_version()


def test_initialize_negotiates_v2(run: Run) -> None:
    point = run.checkpoint("initialize")
    # the SDK sent 2, and took the agent's answer as v2 (it refuses any other version)
    assert point["sentVersion"] == 2
    assert point["snapshotVersion"] == 2
    response = point["response"]  # as the SDK parsed it
    assert response["protocolVersion"] == 2
    assert response["info"]["name"] == "acp-fsm"
    assert response["info"]["version"]
    # what the SDK kept of the session capabilities (it drops a malformed one silently)
    session = response["capabilities"].get("session") or {}
    kept = {
        "prompt.image": (session.get("prompt") or {}).get("image"),
        "prompt.embeddedContext": (session.get("prompt") or {}).get("embeddedContext"),
        "mcp.stdio": (session.get("mcp") or {}).get("stdio"),
        "mcp.http": (session.get("mcp") or {}).get("http"),
        "additionalDirectories": session.get("additionalDirectories"),
        "delete": session.get("delete"),
    }
    missing = [name for name, value in kept.items() if value is None]
    assert missing == [], (missing, point["raw"]["capabilities"])
    # every auth method survived the SDK's parsing (it skips malformed ones silently)
    raw_methods = point["raw"].get("authMethods", [])
    assert len(response["authMethods"]) == len(raw_methods), (raw_methods, response)
    assert all({"methodId", "type"} <= set(m) for m in response["authMethods"])


def test_session_new(run: Run) -> None:
    point = run.checkpoint("session_new")
    assert point["sessionId"] == point["raw"]["sessionId"]
    assert "modes" not in point["raw"] and "models" not in point["raw"], point["raw"]


def test_text_prompt_streams(run: Run) -> None:
    point = run.checkpoint("text")
    assert_turn(point, PROMPTS["text"], ["Hello ", "there."], "end_turn")
    # the SDK's ActiveSession queue saw the same turn and took its idle as the stop
    assert point["helper"][-1] == "stop:end_turn"
    assert without_setup(point["helper"][:-1]) == without_setup(kinds(point["updates"]))[:-1]


def test_write_asks_permission(run: Run) -> None:
    point = run.checkpoint("write")
    assert_turn(point, PROMPTS["write"], ["Writing.", "Done."], "end_turn")
    [asked] = point["asked"]  # as the SDK parsed it
    session_id = run.checkpoint("session_new")["sessionId"]
    assert asked["sessionId"] == session_id
    assert isinstance(asked["title"], str) and asked["title"], asked
    assert asked["subject"]["type"] == "tool_call", asked
    assert asked["subject"]["toolCall"]["toolCallId"] == "write-1", asked
    assert {"allow_once", "reject_once"} <= {o["kind"] for o in asked["options"]}
    rows = without_setup(kinds(point["updates"]))
    assert "state_update:requires_action" in rows, rows
    waiting = rows.index("state_update:requires_action")
    assert rows[waiting + 1 :].count("state_update:running") == 1, rows
    final = of_call(point["updates"], "write-1")[-1]
    assert final["status"] == "completed", final
    # v2 has no fs/*: the agent wrote the file itself once allowed
    assert (run.project / "greeting.txt").read_text() == "new\n"
    assert tool_results(run.model_call_with_result("write-1"))["write-1"].startswith(
        "Wrote greeting.txt"
    )
    assert point["helper"][-1] == "stop:end_turn"


def test_cancel_mid_stream(run: Run) -> None:
    point = run.checkpoint("cancel")
    assert point["rejected"] is None, point["rejected"]  # stored before it streamed
    assert_turn(point, PROMPTS["cancel"], ["partial ", "answer "], "cancelled")
    assert point["helper"][-1] == "stop:cancelled"
    hung = [d for d in run.disconnects if d.events_sent == 5]
    assert len(hung) == 1, run.disconnects  # the provider saw the agent go away


def test_resume_in_a_new_process_replays(run: Run) -> None:
    point = run.checkpoint("resume")
    assert run.checkpoint("initialize_again")["response"]["protocolVersion"] == 2
    replayed: list[Update] = point["replayed"]
    assert summary(replayed) == [
        ("user_message_chunk", PROMPTS["text"]),
        ("agent_message_chunk", "Hello there."),
        ("user_message_chunk", PROMPTS["write"]),
        ("agent_message_chunk", "Writing."),
        ("tool_call_update", "write-1:pending"),
        ("tool_call_update", "write-1:completed"),
        ("agent_message_chunk", "Done."),
        ("user_message_chunk", PROMPTS["cancel"]),
        ("agent_message_chunk", "partial answer "),
    ]
    # the replay and its state_update snapshot came before the response
    assert point["beforeResponse"] + point["afterResponse"] == len(replayed)
    after = [kinds([u])[0] for u in replayed[point["beforeResponse"] :]]
    assert all(kind in SETUP_UPDATES for kind in after), after
    last = point["lastBeforeResponse"]
    assert (last["sessionUpdate"], last["state"]) == ("state_update", "idle"), last
    assert "configOptions" in point["raw"], point["raw"]


def test_prompt_after_resume_carries_the_history(run: Run) -> None:
    point = run.checkpoint("after_resume")
    assert point["response"]["messageId"]
    assert texts(point["updates"]) == ["Still here."]
    assert idle(point["updates"])["stopReason"] == "end_turn"
    carried = next(r for r in run.requests if PROMPTS["again"] in user_texts(r))
    assert user_texts(carried) == [
        PROMPTS["text"],
        PROMPTS["write"],
        PROMPTS["cancel"],
        PROMPTS["again"],
    ]


def test_websocket_initialize_and_prompt(run: Run) -> None:
    init = run.checkpoint("ws_initialize")
    assert init["response"]["protocolVersion"] == 2
    assert init["response"]["info"]["name"] == "acp-fsm"
    session_id = run.checkpoint("ws_session_new")["sessionId"]
    assert session_id != run.checkpoint("session_new")["sessionId"]
    point = run.checkpoint("ws_prompt")
    assert_turn(point, PROMPTS["ws"], ["Over the socket."], "end_turn")


def test_the_sdk_refused_nothing(run: Run) -> None:
    """No message the agent sent was refused or dropped by the SDK: no console.error from it,
    no error answer from us to an agent request, every update and permission request handed
    to our handlers, every message valid under the SDK's v2 schemas."""
    point = run.checkpoint("summary")
    assert point["sdkErrors"] == []
    for health in point["health"]:
        assert health["refused"] == [], health["label"]
        assert health["agentErrors"] == [], health["label"]
        assert health["wireUpdates"] == health["deliveredUpdates"], health["label"]
        assert health["wirePermissionRequests"] == health["deliveredPermissionRequests"]
        refusals = [
            (row["kind"], row["method"], row[schema]["refused"], row["message"])
            for row in health["checks"]
            for schema in ("stable", "unstable")
            if "refused" in row[schema]
        ]
        assert refusals == [], (health["label"], refusals)


def test_the_sdk_lost_nothing_in_parsing(run: Run) -> None:
    """Nothing the agent sent is lost in the SDK's lenient parsing under v2's unstable schema
    (which knows every field v2 defines): a field dropped there is malformed, or not v2's."""
    point = run.checkpoint("summary")
    for health in point["health"]:
        lost = [
            (row["kind"], row["method"], row["unstable"].get("lost"), row["message"])
            for row in health["checks"]
            if row["unstable"].get("lost") or row["unstable"].get("unchecked")
        ]
        assert lost == [], (health["label"], lost)


def test_the_agents_logged_no_errors(run: Run) -> None:
    for exit_name in ("exit_first", "exit_second"):
        exit_status = run.checkpoint(exit_name)
        assert (exit_status["code"], exit_status["signal"]) == (0, None), run.agent_logs()
    for log in run.logs:
        assert schema_violations(log) == [], log.name
        failures = [e for e in log_events(log) if e.get("level") in ("error", "critical")]
        assert failures == [], (log.name, failures)
