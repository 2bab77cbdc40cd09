"""session/fork and session/set_model through the real agent: a fork copies the source's
conversation up to its last completed turn, with its settings, and leaves the source as it
was (a turn running in it is not copied; a session another process stored forks like one it
loads); set_model is setting the model option, announced and stored; the registry's probe
sequence answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Hang, Reply, ScriptedProvider
from tests.e2e.support import Launcher, user_texts
from tests.e2e.test_sessions import restore
from tests.e2e.test_settings import MODELS, option_updates, options_of
from tests.harness import PROTOCOL, wait_until


async def fork(agent: Any, session: str, project: Path) -> dict[str, Any]:
    result: dict[str, Any] = await agent.result(
        "session/fork", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    return result


def prompts(replayed: list[dict[str, Any]]) -> list[str]:
    return [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]


async def test_a_fork_copies_the_conversation_and_the_settings_and_leaves_the_source(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.fallback = Reply(text="ok")
    agent = await launch.start("openai", **MODELS)
    source = await agent.new_session(project)
    await agent.prompt(source, "first")
    await agent.prompt(source, "second")
    await agent.result("session/set_mode", {"sessionId": source, "modeId": "plan"})

    forked = await fork(agent, source, project)

    copy = forked["sessionId"]
    assert copy != source and copy.startswith("sess_")
    assert options_of(forked)["mode"][0] == "plan"
    await agent.prompt(copy, "in the fork")
    assert user_texts(server.requests[-1]) == ["first", "second", "in the fork"]
    await agent.prompt(source, "in the source")
    assert user_texts(server.requests[-1]) == ["first", "second", "in the source"]
    await launch.close(agent)
    other = await launch.start("openai", **MODELS)
    _, replayed = await restore(other, "session/load", copy, project)
    assert prompts(replayed) == ["first", "second", "in the fork"]
    listed = await other.result("session/list", {})
    assert {s["sessionId"] for s in listed["sessions"]} >= {source, copy}


async def test_a_turn_running_in_the_source_is_not_copied(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.script(Reply(text="done"), Reply(text=["partial", " more"], fault=Hang(after=1)))
    agent = await launch.start("anthropic")
    source = await agent.new_session(project)
    await agent.prompt(source, "finished turn")
    running = await agent.start_prompt(source, "still running")
    await wait_until(lambda: len(server.requests) == 2, "the running turn's call")

    forked = await fork(agent, source, project)

    await agent.cancel(source)
    assert (await running.result()).stop_reason == "cancelled"
    server.script(Reply(text="fine"))
    await agent.prompt(forked["sessionId"], "next")
    assert user_texts(server.requests[-1]) == ["finished turn", "next"]


async def test_a_session_stored_by_another_process_forks_and_an_unknown_one_does_not(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.fallback = Reply(text="ok")
    first = await launch.start("anthropic")
    source = await first.new_session(project)
    await first.prompt(source, "from the first process")
    second = await launch.start("anthropic")  # the first still has it open

    forked = await fork(second, source, project)

    await second.prompt(forked["sessionId"], "from the second")
    assert user_texts(server.requests[-1]) == ["from the first process", "from the second"]
    missing = await second.request(
        "session/fork", {"sessionId": "sess_missing", "cwd": str(project), "mcpServers": []}
    )
    assert missing["error"]["code"] == -32002
    relative = await second.request(
        "session/fork", {"sessionId": source, "cwd": "project", "mcpServers": []}
    )
    assert relative["error"]["code"] == -32602
    over_acp = await second.request(
        "session/fork",
        {
            "sessionId": source,
            "cwd": str(project),
            "mcpServers": [{"type": "acp", "name": "editor", "serverId": "m1"}],
        },
    )
    assert over_acp["error"]["code"] == -32602
    if PROTOCOL == 1:  # v2's schema has no such server: refused as any unknown type
        assert (
            'mcpServers[0]: MCP over the ACP connection (type "acp")'
            in over_acp["error"]["message"]
        )
    listed = await second.result("session/list", {})
    assert len(listed["sessions"]) == 2  # the source and the one fork: nothing half-made


@pytest.mark.v1_only("session/set_model is v1's")
async def test_set_model_is_the_model_option_announced_and_stored(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.fallback = Reply(text="ok")
    agent = await launch.start("openai", **MODELS)
    session = await agent.new_session(project)

    assert await agent.result("session/set_model", {"sessionId": session, "modelId": "m-two"}) == {}

    announced = option_updates(agent, session)
    assert options_of(announced[-1])["model"][0] == "m-two"
    await agent.prompt(session, "hi")
    assert server.requests[-1].body["model"] == "m-two"
    refused = await agent.request(
        "session/set_model", {"sessionId": session, "modelId": "no-such-model"}
    )
    assert refused["error"]["code"] == -32602
    await agent.result("session/set_model", {"sessionId": session, "modelId": "m-two"})
    assert len(option_updates(agent, session)) == len(announced)  # nothing changed
    await launch.close(agent)
    other = await launch.start("openai", **MODELS)
    restored, _ = await restore(other, "session/load", session, project)
    assert options_of(restored["result"])["model"][0] == "m-two"


# What the ACP registry's nightly protocol matrix sends (agentclientprotocol/registry,
# protocol_matrix.py): its client capabilities, then its probes; a result, -32602 or -32002
# counts as supported, -32601 as not, -32000 as "auth required".
MATRIX_CLIENT = {
    "terminal": True,
    "fs": {"readTextFile": True, "writeTextFile": True},
    "_meta": {"terminal_output": True, "terminal-auth": True},
}
SUPPORTED = (-32602, -32002)


@pytest.mark.v1_only("the registry's matrix speaks v1")
async def test_the_registry_probes_are_answered(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The matrix's sequence with a key configured: initialize, session/new, then list,
    fork, resume, set_model and close, each supported (and advertised where ACP has a
    capability)."""
    agent = await launch.start("anthropic", capabilities=MATRIX_CLIENT)
    initialized = next(
        m["result"] for m in agent.messages if "agentCapabilities" in m.get("result", {})
    )
    capabilities = initialized["agentCapabilities"]["sessionCapabilities"]
    assert {"list", "fork", "resume", "close"} <= set(capabilities)
    session = await agent.new_session(project)
    answers = {}
    for method, params in [
        ("session/list", {}),
        ("session/fork", {"sessionId": session, "cwd": str(project), "mcpServers": []}),
        ("session/resume", {"sessionId": session, "cwd": str(project), "mcpServers": []}),
        ("session/set_model", {"sessionId": session, "modelId": "matrix-model"}),
        ("session/close", {"sessionId": session}),
    ]:
        response = await agent.request(method, params)
        answers[method] = "result" if "result" in response else response["error"]["code"]
    assert answers == {
        "session/list": "result",
        "session/fork": "result",
        "session/resume": "result",
        "session/set_model": -32602,  # no such model here: the method is served
        "session/close": "result",
    }
    assert set(answers.values()) <= {"result", *SUPPORTED}
