"""The handshake state machine through the real process (spec: "Handshake state machine")."""

from __future__ import annotations

import pytest

from tests.harness import AgentProcess

KNOWN_ACP_METHODS = [
    "session/new",
    "session/load",
    "session/resume",
    "session/prompt",
    "session/list",
    "session/close",
    "session/delete",
    "session/set_mode",
    "session/set_config_option",
    "authenticate",
    "logout",
]
UNKNOWN_METHODS = [
    "no/such_method",
    "_vendor/extension",
    "session/update",
    "fs/read_text_file",
    "initialized",
    "$/unknown",
]


@pytest.mark.parametrize("method", KNOWN_ACP_METHODS)
async def test_known_methods_before_initialize_are_32002(agent: AgentProcess, method: str) -> None:
    response = await agent.request(method, {"sessionId": "s"})
    assert response["error"]["code"] == -32002
    assert "not initialized" in response["error"]["message"].lower()


@pytest.mark.parametrize("method", UNKNOWN_METHODS)
async def test_unknown_methods_are_32601_in_both_states(agent: AgentProcess, method: str) -> None:
    before = await agent.request(method, {})
    await agent.initialize()
    after = await agent.request(method, {})
    assert before["error"]["code"] == after["error"]["code"] == -32601


async def test_second_initialize_is_32002(ready: AgentProcess) -> None:
    again = await ready.request("initialize", {"protocolVersion": 1})
    assert again["error"]["code"] == -32002
    assert "already" in again["error"]["message"]


async def test_pipelined_initializes_only_the_first_succeeds(agent: AgentProcess) -> None:
    first, second = agent.expect("a", "initialize"), agent.expect("b", "initialize")
    lines = b"".join(
        b'{"jsonrpc":"2.0","id":"%s","method":"initialize","params":{"protocolVersion":1}}\n' % i
        for i in (b"a", b"b")
    )
    await agent.send_raw(lines)
    assert "result" in await first
    assert (await second)["error"]["code"] == -32002


@pytest.mark.parametrize("version", [1, 2, 0, 65535, 70000])
async def test_version_negotiation_answers_1(agent: AgentProcess, version: int) -> None:
    response = await agent.request("initialize", {"protocolVersion": version})
    assert response["result"]["protocolVersion"] == 1


async def test_initialize_result_advertises_only_what_is_served(agent: AgentProcess) -> None:
    result = await agent.initialize()
    assert result["agentInfo"] == {"name": "acp-fsm", "title": "acp-fsm", "version": "0.1.0"}
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["sessionCapabilities"] == {
        "list": {},
        "resume": {},
        "close": {},
        "delete": {},
        "fork": {},
        "additionalDirectories": {},
        "systemPrompt": {"mode": {"override": {}}},
        "title": {},
    }
    assert capabilities["promptCapabilities"] == {
        "image": True,
        "audio": False,
        "embeddedContext": True,
    }
    assert capabilities["mcpCapabilities"] == {"http": True, "sse": True}
    assert capabilities["auth"] == {"logout": {}}
    # prompts sent while a turn runs are queued (claude-agent-acp's key, and our own)
    assert capabilities["_meta"] == {"promptQueueing": True, "claudeCode": {"promptQueueing": True}}
    assert [m["id"] for m in result["authMethods"]] == ["api-key"]  # no terminal advertised


async def test_initialize_after_other_traffic_takes_the_full_path(agent: AgentProcess) -> None:
    # The first line is not initialize, so the startup shortcut does not apply.
    assert (await agent.request("session/new", {}))["error"]["code"] == -32002
    result = await agent.initialize()
    assert result["protocolVersion"] == 1


async def test_authenticate_with_unadvertised_method_is_invalid_params(ready: AgentProcess) -> None:
    response = await ready.request("authenticate", {"methodId": "oauth"})
    assert response["error"]["code"] == -32602
    assert "oauth" in response["error"]["message"]


async def test_client_capabilities_are_kept(agent: AgentProcess) -> None:
    """fs/terminal calls are only made when the client advertised them in initialize."""
    await agent.initialize(fs={"readTextFile": True, "writeTextFile": False}, terminal=False)
    outcomes = {}
    for method, params in [
        ("fs/write_text_file", {"sessionId": "s", "path": "/tmp/x", "content": ""}),
        ("terminal/output", {"sessionId": "s", "terminalId": "t"}),
        ("fs/read_text_file", {"sessionId": "s", "path": "/tmp/x"}),
    ]:
        call = agent.expect(method, "_acp_fsm/call_client")
        await agent.send(
            {
                "jsonrpc": "2.0",
                "id": method,
                "method": "_acp_fsm/call_client",
                "params": {"method": method, "params": params},
            }
        )
        if method == "fs/read_text_file":
            await agent.respond(await agent.next_request(), {"content": ""})
        outcomes[method] = (await call)["result"]["outcome"]
    assert outcomes == {
        "fs/write_text_file": "unsupported",
        "terminal/output": "unsupported",
        "fs/read_text_file": "result",
    }
    assert agent.requests.empty()
