"""The model endpoint the editor sets (`providers/list`, `providers/set`,
`providers/disable`, unstable ACP): advertised; `main` listed without secrets; set to each wire
acp-fsm speaks, in force from the next prompt of every open session, the model picker
refreshed from the new endpoint; its headers sent and never logged, stored or listed; the
environment's key never sent to the editor's endpoint; what cannot be applied refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, RecordedRequest, Reply, ScriptedProvider
from tests.e2e.support import API_KEY, Agent, Launcher, args, of_kind
from tests.harness import TITLE_MODEL, wait_until

SECRET = "sk-editor-gateway-0a1b2c3d4e5f"


def titling(request: RecordedRequest) -> bool:
    """A title call (made after a session's first turn), not the turn's."""
    return bool(request.body and request.body.get("model") == TITLE_MODEL)


async def providers(agent: Agent) -> list[dict[str, Any]]:
    return list((await agent.result("providers/list", {}))["providers"])


async def test_it_is_advertised_and_main_is_the_environments(
    launch: Launcher, server: ScriptedProvider
) -> None:
    agent = await launch.start("anthropic")
    [init] = [m["result"] for m in agent.messages if "agentCapabilities" in m.get("result", {})]
    assert init["agentCapabilities"]["providers"] == {}
    [main] = await providers(agent)
    assert main["providerId"] == "main" and main["required"] is True
    assert main["supported"] == ["anthropic", "openai", "_openai_responses"]
    assert main["current"] == {"apiType": "anthropic", "baseUrl": server.anthropic_base_url}
    assert main["_meta"]["acpFsm"]["source"] == "environment"


@pytest.mark.parametrize(
    ("api_type", "path"),
    [
        ("openai", "/v1/chat/completions"),
        ("_openai_responses", "/v1/responses"),
        ("anthropic", "/v1/messages"),
    ],
)
async def test_set_sends_the_next_call_of_every_session_there_with_its_headers(
    launch: Launcher, server: ScriptedProvider, project: Path, api_type: str, path: str
) -> None:
    agent = await launch.start("openai")
    first = await agent.new_session(project)
    second = await agent.new_session(project)
    async with ScriptedProvider(fallback=Reply(text="ok")) as gateway:
        base = gateway.anthropic_base_url if api_type == "anthropic" else gateway.openai_base_url
        headers = {"Authorization": f"Bearer {SECRET}", "X-Route": "team-blue"}
        params = {"providerId": "main", "apiType": api_type, "baseUrl": base, "headers": headers}
        assert await agent.result("providers/set", params) == {}

        assert (await agent.prompt(first, "hi")).stop_reason == "end_turn"
        assert (await agent.prompt(second, "hi")).stop_reason == "end_turn"
        calls = [r for r in gateway.requests if r.path == path and not titling(r)]
        assert len(calls) == 2
        for call in calls:
            assert call.headers["authorization"] == f"Bearer {SECRET}"
            assert call.headers["x-route"] == "team-blue"
            assert API_KEY not in str(dict(call.headers))  # the environment's key stays home
        assert [r.path for r in server.requests] == []

        [main] = await providers(agent)
        assert main["current"] == {"apiType": api_type, "baseUrl": base}
        assert main["_meta"]["acpFsm"]["source"] == "editor"
        assert SECRET not in str(main)
    await launch.close(agent)
    assert SECRET not in agent.proc.stderr.decode()
    stored = b"".join(p.read_bytes() for p in launch.home.glob("sessions.db*"))
    assert SECRET.encode() not in stored


async def test_the_model_picker_follows_the_new_endpoint(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    async with ScriptedProvider(Reply(text="local"), models=("coder-7b", "coder-1b")) as local:
        start = len(agent.messages)
        params = {"providerId": "main", "apiType": "openai", "baseUrl": local.openai_base_url}
        await agent.result("providers/set", params)

        def picker() -> list[str]:
            told = of_kind(agent.updates(session, start, metadata=True), "config_option_update")
            if not told:
                return []
            [model] = [o for o in told[-1]["configOptions"] if o["id"] == "model"]
            return [v["value"] for v in model["options"]]

        await wait_until(lambda: picker() == ["coder-7b", "coder-1b"], "the new list")
        assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
        [call] = [r for r in local.requests if r.path == "/v1/chat/completions" and not titling(r)]
        assert call.body["model"] == "coder-7b"


SET = {"providerId": "main", "apiType": "openai", "baseUrl": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(
    ("method", "params", "named"),
    [
        ("providers/set", {**SET, "providerId": "other"}, "providerId"),
        ("providers/set", {**SET, "apiType": "bedrock"}, "apiType"),
        ("providers/set", {**SET, "baseUrl": "ftp://x"}, "baseUrl"),
        ("providers/set", {**SET, "baseUrl": "http://u:pw-secret-1@127.0.0.1:9/v1"}, "credentials"),
        ("providers/set", {**SET, "headers": {"a b": "c"}}, "headers"),
        ("providers/set", {**SET, "headers": {"a": "b\r\nc: d"}}, "line break"),
        ("providers/disable", {"providerId": "main"}, "main is required"),
    ],
)
async def test_what_cannot_be_applied_is_refused_and_nothing_changes(
    launch: Launcher, server: ScriptedProvider, method: str, params: dict[str, Any], named: str
) -> None:
    agent = await launch.start("openai")
    before = await providers(agent)
    response = await agent.request(method, params)
    assert response["error"]["code"] == -32602, response
    assert named in response["error"]["message"]
    assert await providers(agent) == before


async def test_disabling_an_unknown_provider_succeeds(launch: Launcher) -> None:
    agent = await launch.start("openai")
    assert await agent.result("providers/disable", {"providerId": "nope"}) == {}


async def test_a_running_turn_makes_its_next_call_to_the_new_endpoint(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Set while a turn waits for a permission: the call after the tool's result goes to
    the new endpoint, in the same turn."""
    agent = await launch.start("openai")
    agent.editor.permissions.append(HOLD)
    session = await agent.new_session(project)
    write = Call("w1", "write_file", args(path="a.txt", content="one\n"))
    server.script(Reply(text="Writing.", calls=(write,)))
    async with ScriptedProvider(fallback=Reply(text="Done, from the gateway.")) as gateway:
        pending = await agent.start_prompt(session, "write a.txt")
        asked = await agent.wait_request("session/request_permission")
        params = {"providerId": "main", "apiType": "openai", "baseUrl": gateway.openai_base_url}
        await agent.result("providers/set", params)
        await agent.answer_held(
            asked, {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        )
        turn = await pending.result()
        assert turn.stop_reason == "end_turn"
        assert len([r for r in server.requests if not titling(r)]) == 1
        [after] = [r for r in gateway.requests if not titling(r)]
        assert "tool" in [m["role"] for m in after.body["messages"]]  # the result went along


async def test_only_credential_headers_are_scrubbed_and_a_model_of_another_wire_is_dropped(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A route header's value is the user's word too: it reaches the model and the editor
    as it is. A model chosen on the environment's wire is not asked of the new one."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    choose = {"sessionId": session, "configId": "model", "value": "gpt-5-mini"}
    assert "result" in await agent.request("session/set_config_option", choose)
    async with ScriptedProvider(
        fallback=Reply(text="Route team-blue-route is fine."), models=("claude-x-1",)
    ) as gateway:
        headers = {"x-api-key": SECRET, "x-route": "team-blue-route"}
        params = {
            "providerId": "main",
            "apiType": "anthropic",
            "baseUrl": gateway.anthropic_base_url,
            "headers": headers,
        }
        await agent.result("providers/set", params)
        turn = await agent.prompt(session, "is team-blue-route up?")
        assert turn.stop_reason == "end_turn"
        said = "".join(u["content"]["text"] for u in of_kind(turn.updates, "agent_message_chunk"))
        assert "team-blue-route" in said
        [call] = [r for r in gateway.requests if r.path == "/v1/messages" and not titling(r)]
        assert "team-blue-route" in call.raw.decode()
        assert call.body["model"] == "claude-x-1"  # not gpt-5-mini, the other wire's
        assert call.headers["x-api-key"] == SECRET
