"""ACP v2 through the real process, in v2's own words (no v1 view: tests/harness.py runs the
core scenarios that way): the version settled by `initialize` (and v1 kept when v2 is off or
not asked for), v2's capabilities, a prompt answered once stored with the turn told by
`state_update`s, a permission request about its subject with the session waiting on the user
meanwhile, cancels before and after the prompt is stored, `idempotencyKey`, resume with and
without replay, a local command in a display-only terminal of the agent's, the mode as a
config option, v1's methods refused, and v2 over the WebSocket transport. Every message the
agent writes must be valid under ACP v2's schemas."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import AgentLink
from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from acp_fsm.devkit.schema_check.v2 import refused
from tests.e2e.support import Launcher, args, text, tool_results
from tests.e2e.test_remote import connected, serving
from tests.harness import READ_LIMIT, agent_command, wait_until

Message = dict[str, Any]
V2_ON = {"ACP_FSM_PROTOCOL_V2": "1"}
INFO = {"name": "v2-client", "version": "0.1"}


class V2:
    """One agent spoken to in ACP v2 (requests answered by the test)."""

    def __init__(self, link: AgentLink) -> None:
        self.link = link
        self.version = 0  # as initialize settled it

    async def init(self, version: int = 2, **capabilities: Any) -> Message:
        params = {"protocolVersion": version, "info": INFO, "capabilities": capabilities}
        return self.settled(await self.link.call("initialize", params))

    def settled(self, result: Any) -> Message:
        self.version = result["protocolVersion"]
        return dict(result)

    async def open(self, cwd: Path, mode: str | None = None) -> str:
        """initialize (v2), then a session in `cwd` (in `mode`, when given)."""
        await self.init()
        session = await self.new(cwd)
        if mode is not None:
            option = {"sessionId": session, "configId": "mode", "type": "id", "value": mode}
            await self.link.call("session/set_config_option", option)
        return session

    async def new(self, cwd: Path) -> str:
        created = await self.link.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        assert "modes" not in created and "models" not in created, created
        return str(created["sessionId"])

    def updates(self, session: str, start: int = 0) -> list[Message]:
        return [
            m["params"]["update"]
            for m in self.link.messages[start:]
            if m.get("method") == "session/update" and m["params"]["sessionId"] == session
        ]

    async def idle(self, session: str, start: int) -> Message:
        """The idle state that ends the work begun after message `start`."""
        found = await self.link.wait_for(
            "the session to go idle",
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["sessionId"] == session
                and m["params"]["update"].get("state") == "idle"
                and "stopReason" in m["params"]["update"]
            ),
            start,
        )
        return dict(found["params"]["update"])

    async def prompt(self, session: str, words: str, **extra: Any) -> tuple[Message, Message]:
        """A prompt's answer (its message's id) and the idle that ends its turn."""
        start = len(self.link.messages)
        params = {"sessionId": session, "prompt": [text(words)], **extra}
        answer = await self.link.request("session/prompt", params)
        return answer, await self.idle(session, start)

    def index(self, predicate: Any) -> int:
        return next(i for i, m in enumerate(self.link.messages) if predicate(m))


@pytest.fixture
async def v2(launch: Launcher) -> AsyncIterator[Any]:
    """Starts agents with v2 on; each is closed at the end: exit 0, every message it wrote
    valid under ACP v2's schemas and under its own strict check."""
    started: list[V2] = []

    async def start(provider: str = "openai", **env: str | None) -> V2:
        link = await AgentLink.spawn(
            launch.env(provider, **{**V2_ON, **env}), command=agent_command(), limit=READ_LIMIT
        )
        started.append(V2(link))
        return started[-1]

    yield start
    for agent in started:
        link = agent.link
        try:
            if link.proc is not None and link.proc.returncode is None:
                assert await link.close() == 0, link.stderr_tail()
            assert link.bad_lines == []
            assert link.log_events("outbound_schema_violation") == []
            if agent.version == 2:
                assert refused(link.records) == []
        finally:
            await link.kill()


# What is said of a session besides its work (when, is not the turn's to say).
METADATA = {"available_commands_update", "session_info_update", "usage_update"}


def kinds(updates: list[Message]) -> list[str]:
    """Each update's kind (a state's with the state), metadata aside."""
    return [
        u["sessionUpdate"] + (f":{u['state']}" if "state" in u else "")
        for u in updates
        if u["sessionUpdate"] not in METADATA
    ]


async def test_initialize_settles_v2_with_its_capabilities(v2: Any) -> None:
    agent = await v2()
    result = await agent.init()
    assert result["protocolVersion"] == 2
    assert result["info"]["name"] == "acp-fsm"
    session = result["capabilities"]["session"]  # present: new, list, resume, close, prompt
    assert session["mcp"] == {"stdio": {}, "http": {}}
    assert session["prompt"] == {"image": {}, "embeddedContext": {}}
    assert {"fork", "delete", "additionalDirectories"} <= set(session)
    assert "agentCapabilities" not in result and "agentInfo" not in result
    assert [m["type"] for m in result["authMethods"]] == ["agent"]
    assert all("methodId" in m and "id" not in m for m in result["authMethods"])
    again = await agent.link.request("initialize", {"protocolVersion": 2, "info": INFO})
    assert again["error"]["code"] == -32002


async def test_a_client_that_runs_terminal_logins_is_offered_one(v2: Any) -> None:
    """v2's capabilities are objects: `auth.terminal: {}` says the client runs one."""
    agent = await v2()
    result = await agent.init(auth={"terminal": {}})
    (method,) = result["authMethods"]
    assert method["type"] == "terminal" and method["args"] == ["login"]


@pytest.mark.parametrize(
    ("asked", "v2_on", "answered"), [(2, False, 1), (1, True, 1), (3, True, 2), (0, True, 1)]
)
async def test_the_version_answered(v2: Any, asked: int, v2_on: bool, answered: int) -> None:
    """The highest version this agent speaks not above the client's; v1 while v2 is off."""
    agent = await v2(ACP_FSM_PROTOCOL_V2="1" if v2_on else None)
    params = {"protocolVersion": asked, "clientInfo": INFO, "clientCapabilities": {}}
    said = {**params, "info": INFO, "capabilities": {}}
    result = agent.settled(await agent.link.call("initialize", said))
    assert result["protocolVersion"] == answered
    assert ("capabilities" in result) == (answered == 2)
    assert ("agentCapabilities" in result) == (answered == 1)


async def test_a_prompt_is_answered_once_stored_and_its_turn_told_by_state(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project)
    server.script(Reply(text=("Hello", " there")))
    start = len(agent.link.messages)

    answer, idle = await agent.prompt(session, "hi")

    message_id = answer["result"]["messageId"]
    updates = [u for u in agent.updates(session, start) if u["sessionUpdate"] not in METADATA]
    assert kinds(updates)[:2] == ["state_update:running", "user_message"]
    assert updates[1] == {
        "sessionUpdate": "user_message",
        "messageId": message_id,
        "content": [text("hi")],
    }
    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(c["content"]["text"] for c in chunks) == "Hello there"
    assert idle["stopReason"] == "end_turn" and idle["_meta"]["acpFsm"]["modelCalls"] == 1
    answered = agent.index(lambda m: m.get("id") == answer["id"] and "result" in m)
    first_chunk = agent.index(
        lambda m: (
            m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk"
        )
    )
    assert answered < first_chunk  # nothing of the turn before its answer
    assert kinds(updates)[-1] == "state_update:idle"
    await asyncio.sleep(0.2)
    after = [u for u in agent.updates(session, start) if u["sessionUpdate"] not in METADATA]
    assert after[-1] == idle  # nothing of the turn after its idle (its title may follow)


async def test_permission_asks_about_its_subject_while_the_session_waits(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project)
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="one\n")),)),
        Reply(text="written"),
    )
    start = len(agent.link.messages)
    turn = asyncio.ensure_future(agent.prompt(session, "write it"))
    asked = await asyncio.wait_for(agent.link.requests.get(), 10)

    params = asked["params"]
    assert asked["method"] == "session/request_permission"
    assert params["title"] == "Write a.txt" and "toolCall" not in params
    assert params["subject"]["type"] == "tool_call"
    call = params["subject"]["toolCall"]
    assert call["toolCallId"] == "w1"
    diff = call["content"][0]
    assert diff["changes"] == [{"operation": "add", "path": str(project / "a.txt")}]
    assert diff["patch"]["format"] == "git_patch" and "+one" in diff["patch"]["text"]
    assert kinds(agent.updates(session, start))[-1] == "state_update:requires_action"
    seen = len(agent.link.messages)
    resumed = await agent.link.call("session/resume", {"sessionId": session, "cwd": str(project)})
    assert set(resumed) == {"configOptions"}
    snapshot = [u for u in agent.updates(session, seen) if u["sessionUpdate"] == "state_update"]
    assert snapshot == [{"sessionUpdate": "state_update", "state": "requires_action"}]
    await agent.link.respond(asked, {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    _, idle = await turn

    assert idle["stopReason"] == "end_turn"
    assert (project / "a.txt").read_text() == "one\n"
    states = [k for k in kinds(agent.updates(session, start)) if k.startswith("state")]
    assert states == [
        "state_update:running",
        "state_update:requires_action",
        "state_update:requires_action",  # the resume's snapshot
        "state_update:running",
        "state_update:idle",
    ]
    first = next(u for u in agent.updates(session, start) if u.get("toolCallId") == "w1")
    assert first["sessionUpdate"] == "tool_call_update" and first["status"] == "pending"
    assert "tool_call" not in kinds(agent.updates(session, start))


async def test_cancel_after_and_before_the_prompt_is_stored(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project)
    server.script(Reply(text=tuple(f"w{i} " for i in range(200)), delay_s=0.05))
    start = len(agent.link.messages)
    turn = asyncio.ensure_future(agent.prompt(session, "talk"))
    await wait_until(lambda: len(agent.updates(session, start)) > 3, "the answer to stream")
    await agent.link.notify("session/cancel", {"sessionId": session})
    answer, idle = await turn
    assert "messageId" in answer["result"] and idle["stopReason"] == "cancelled"

    # A prompt waiting behind a turn is not stored yet: cancelled, it is -32800.
    server.script(Reply(text="busy", fault=Hang(4)))
    start = len(agent.link.messages)
    running = asyncio.ensure_future(agent.prompt(session, "hang"))
    await wait_until(
        lambda: "user_message" in kinds(agent.updates(session, start)), "the prompt to be stored"
    )
    waiting = await agent.link.start_request(
        "session/prompt", {"sessionId": session, "prompt": [text("never")]}
    )
    await agent.link.notify("session/cancel", {"sessionId": session})
    withdrawn = await agent.link.response(waiting[1], "the waiting prompt")
    assert withdrawn["error"]["code"] == -32800
    _, idle = await running
    assert idle["stopReason"] == "cancelled"
    echoed = [
        u["content"] for u in agent.updates(session, start) if u["sessionUpdate"] == "user_message"
    ]
    assert echoed == [[text("hang")]]  # the withdrawn prompt was never stored


async def test_a_call_the_cancel_stopped_is_cancelled(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    """v2 has a status for it (v1 says `failed`)."""
    agent = await v2()
    session = await agent.open(project, mode="full_access")
    server.script(Reply(calls=(Call("c1", "run_command", args(command="sleep 30")),)))
    start = len(agent.link.messages)
    turn = asyncio.ensure_future(agent.prompt(session, "wait"))
    await wait_until(
        lambda: any(u["sessionUpdate"] == "terminal_update" for u in agent.updates(session, start)),
        "the command to start",
    )
    await agent.link.notify("session/cancel", {"sessionId": session})
    _, idle = await turn

    assert idle["stopReason"] == "cancelled"
    statuses = [
        u["status"]
        for u in agent.updates(session, start)
        if u.get("toolCallId") == "c1" and "status" in u
    ]
    assert statuses[-1] == "cancelled"


@pytest.mark.parametrize("cancel", ["session/cancel", "$/cancel_request"])
async def test_a_prompt_cancelled_before_it_is_stored_never_is(
    v2: Any, server: ScriptedProvider, project: Path, cancel: str
) -> None:
    """v2: a prompt is in the conversation once acknowledged; cancelled in the write that sent
    it, it is answered -32800, and neither the model nor a replay ever sees it. A key sent
    with it is free again."""
    agent = await v2()
    session = await agent.open(project)
    prompt = {"sessionId": session, "prompt": [text("DELETE EVERYTHING")], "idempotencyKey": "k"}
    stop = {"sessionId": session} if cancel == "session/cancel" else {"requestId": "p1"}
    lines = [
        {"jsonrpc": "2.0", "id": "p1", "method": "session/prompt", "params": prompt},
        {"jsonrpc": "2.0", "method": cancel, "params": stop},
    ]
    start = len(agent.link.messages)
    answered = agent.link.expect("p1", "session/prompt")
    await agent.link.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in lines))

    refused = await agent.link.response(answered, "the cancelled prompt")

    assert refused["error"]["code"] == -32800
    idle = await agent.idle(session, start)
    assert idle["stopReason"] == "cancelled"
    assert "user_message" not in kinds(agent.updates(session, start))
    server.script(Reply(text="hi"))
    again, idle = await agent.prompt(session, "hello", idempotencyKey="k")
    assert "messageId" in again["result"] and idle["stopReason"] == "end_turn"
    sent = [m for m in server.requests[-1].body["messages"] if m["role"] == "user"]
    assert [m["content"] for m in sent] == ["hello"]


async def test_an_idempotency_key_sent_again_is_the_same_prompt(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project)
    server.script(Reply(text="once"))
    first, _ = await agent.prompt(session, "hello", idempotencyKey="k-1")
    again = await agent.link.call(
        "session/prompt",
        {"sessionId": session, "prompt": [text("hello")], "idempotencyKey": "k-1"},
    )
    assert again == first["result"]
    await asyncio.sleep(0.2)
    assert len([r for r in server.requests if r.body.get("model") != "test-title-model"]) == 1


async def test_resume_replays_from_the_start_then_says_the_state(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project)
    server.script(
        Reply(calls=(Call("r1", "read_file", args(path="a.txt")),)), Reply(text="read it")
    )
    (project / "a.txt").write_text("alpha\n")
    first, _ = await agent.prompt(session, "read a.txt")
    await agent.link.close()

    other = await v2()
    await other.init()
    start = len(other.link.messages)
    resumed = await other.link.request(
        "session/resume",
        {"sessionId": session, "cwd": str(project), "replayFrom": {"type": "start"}},
    )
    assert set(resumed["result"]) == {"configOptions"}
    answered = other.index(lambda m: m.get("id") == resumed["id"])
    before = other.updates(session, start)[: answered - start]  # what came before the answer
    assert all("method" in m for m in other.link.messages[start:answered])
    assert before[-1] == {"sessionUpdate": "state_update", "state": "idle"}  # then the answer
    replayed = [u["content"]["text"] for u in before if u["sessionUpdate"] == "user_message_chunk"]
    assert replayed == ["read a.txt"]
    user = next(u for u in before if u["sessionUpdate"] == "user_message_chunk")
    assert user["messageId"] == first["result"]["messageId"]  # the id it was answered with
    calls = [u for u in before if u.get("toolCallId") == "r1"]
    assert calls[0]["sessionUpdate"] == "tool_call_update" and calls[-1]["status"] == "completed"

    start = len(other.link.messages)
    plain = await other.link.call("session/resume", {"sessionId": session, "cwd": str(project)})
    assert set(plain) == {"configOptions"}
    assert kinds(other.updates(session, start)) == ["state_update:idle"]  # no replay asked
    bad = await other.link.request(
        "session/resume",
        {"sessionId": session, "cwd": str(project), "replayFrom": {"type": "start"}, "x": 1}
        | {"replayFrom": {"type": "_cursor"}},
    )
    assert bad["error"]["code"] == -32602


async def test_a_local_command_runs_in_a_terminal_of_the_agents(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project, mode="full_access")
    command = "echo out; echo err >&2; exit 3"
    server.script(
        Reply(calls=(Call("c1", "run_command", args(command=command)),)), Reply(text="ok")
    )
    start = len(agent.link.messages)

    _, idle = await agent.prompt(session, "run it")

    assert idle["stopReason"] == "end_turn"
    updates = agent.updates(session, start)
    announced = next(u for u in updates if u["sessionUpdate"] == "terminal_update")
    terminal = announced["terminalId"]
    assert announced == {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal,
        "command": command,
        "cwd": str(project),
    }
    named = next(
        i
        for i, u in enumerate(updates)
        if {"type": "terminal", "terminalId": terminal} in (u.get("content") or [])
    )
    assert updates.index(announced) < named  # announced before a call names it
    output = b"".join(
        base64.b64decode(u["data"])
        for u in updates
        if u["sessionUpdate"] == "terminal_output_chunk" and u["terminalId"] == terminal
    )
    assert sorted(output.decode().splitlines()) == ["err", "out"]
    ended = [u for u in updates if u["sessionUpdate"] == "terminal_update" and "exitStatus" in u]
    assert ended == [
        {"sessionUpdate": "terminal_update", "terminalId": terminal, "exitStatus": {"exitCode": 3}}
    ]
    result = tool_results(server.requests[-1])["c1"][0]
    assert result.startswith("Exit code: 3")
    final = [u for u in updates if u.get("toolCallId") == "c1" and u.get("status") == "completed"]
    assert final[-1]["content"] == [
        {"type": "terminal", "terminalId": terminal},
        {"type": "content", "content": {"type": "text", "text": "Exit code: 3"}},
    ]  # the terminal stays, and the command's status is said beside it


async def test_a_terminal_shows_a_mebibyte_then_says_the_rest_is_not_shown(
    v2: Any, server: ScriptedProvider, project: Path
) -> None:
    agent = await v2()
    session = await agent.open(project, mode="full_access")
    command = "head -c 3000000 /dev/zero | tr '\\0' a; echo the-end"
    server.script(
        Reply(calls=(Call("c1", "run_command", args(command=command)),)), Reply(text="ok")
    )
    start = len(agent.link.messages)

    await agent.prompt(session, "flood")

    chunks = [
        base64.b64decode(u["data"])
        for u in agent.updates(session, start)
        if u["sessionUpdate"] == "terminal_output_chunk"
    ]
    assert max(len(c) for c in chunks) <= 64 * 1024  # no line of megabytes
    shown = b"".join(chunks)
    assert shown.startswith(b"a" * 1024 * 1024) and b"the-end" not in shown
    assert shown.endswith(b"the rest of the output is not shown here; the model reads its end]\r\n")
    result = tool_results(server.requests[-1])["c1"][0]
    assert result.rstrip().endswith("the-end")


async def test_modes_are_an_option_and_v1_methods_are_not_served(v2: Any, project: Path) -> None:
    agent = await v2()
    session = await agent.open(project)
    options = await agent.link.call(
        "session/set_config_option",
        {"sessionId": session, "configId": "mode", "type": "id", "value": "plan"},
    )
    mode = next(o for o in options["configOptions"] if o["configId"] == "mode")
    assert mode["category"] == "mode" and mode["currentValue"] == "plan"
    for method, params in [
        ("session/set_mode", {"sessionId": session, "modeId": "ask"}),
        ("session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}),
        ("authenticate", {"methodId": "api-key"}),
        ("session/set_model", {"sessionId": session, "modelId": "gpt-5"}),
    ]:
        refused = await agent.link.request(method, params)
        assert refused["error"]["code"] == -32601, (method, refused)
    assert await agent.link.call("auth/logout", {}) == {}
    unknown = await agent.link.request("auth/login", {"methodId": "no-such-method"})
    assert unknown["error"]["code"] == -32602


async def test_v2_over_the_websocket_transport(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    launch.defaults.update(V2_ON)
    server.script(Reply(text="over the socket"))
    async with serving(launch, tmp_path) as remote, connected(remote) as client:
        result = await client.result(
            "initialize", {"protocolVersion": 2, "info": INFO, "capabilities": {}}
        )
        assert result["protocolVersion"] == 2
        created = await client.result("session/new", {"cwd": str(project), "mcpServers": []})
        prompt = {"sessionId": created["sessionId"], "prompt": [text("hi")]}
        answer = await client.result("session/prompt", prompt)
        assert "messageId" in answer
        await wait_until(
            lambda: any(u["update"].get("stopReason") == "end_turn" for u in client.updates),
            "the turn's idle state",
        )
        said = [u["update"] for u in client.updates]
        assert "over the socket" in json.dumps(said)
