"""What the user steers from the editor: the model, the mode and the thought level, as ACP
config options and (for the mode) the older session modes; each takes effect at the next model
call, is stored with the session and comes back with `session/load` and `session/resume`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Final, TypedDict

from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, HttpError, Reply, ScriptedProvider
from tests.e2e.support import (
    SETTLE_S,
    Agent,
    Launcher,
    args,
    entries,
    for_call,
    reasoning_effort,
    statuses,
    stored,
    tool_results,
    user_texts,
)
from tests.harness import wait_until


class Models(TypedDict):
    """The environment that offers two models (its keys are `Launcher.start`'s overrides)."""

    ACP_FSM_MODEL: str
    ACP_FSM_MODELS: str


MODELS: Final[Models] = {"ACP_FSM_MODEL": "m-one", "ACP_FSM_MODELS": "m-one,m-two"}
READ_ONLY_TOOLS = [
    "ask_user", "command_output", "glob", "list_directory", "read_file", "search_files", "task",
    "update_plan"
]  # fmt: skip


def options_of(result: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    """configOptions as id -> (current value, the values offered)."""
    return {
        o["id"]: (o["currentValue"], [v["value"] for v in o["options"]])
        for o in result["configOptions"]
    }


def offered_tools(body: dict[str, Any]) -> list[str]:
    tools = body.get("tools") or []
    return sorted(t["function"]["name"] if "function" in t else t["name"] for t in tools)


def option_updates(agent: Agent, session: str) -> list[dict[str, Any]]:
    return [
        u
        for u in agent.updates(session, metadata=True)
        if u["sessionUpdate"] == "config_option_update"
    ]


async def choose(agent: Agent, session: str, config_id: str, value: str) -> dict[str, Any]:
    return dict(
        await agent.result(
            "session/set_config_option",
            {"sessionId": session, "configId": config_id, "value": value},
        )
    )


async def new_session(agent: Agent, project: Path) -> tuple[str, dict[str, Any]]:
    result = await agent.result("session/new", {"cwd": str(project), "mcpServers": []})
    return result["sessionId"], result


async def test_a_new_session_offers_mode_and_model(launch: Launcher, project: Path) -> None:
    agent = await launch.start("openai", **MODELS)
    _, result = await new_session(agent, project)

    assert options_of(result) == {
        "mode": ("ask", ["ask", "accept_edits", "plan", "full_access"]),
        "model": ("m-one", ["m-one", "m-two"]),
    }
    assert [o["category"] for o in result["configOptions"]] == ["mode", "model"]
    assert result["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in result["modes"]["availableModes"]] == [
        "ask",
        "accept_edits",
        "plan",
        "full_access",
    ]
    full = next(m for m in result["modes"]["availableModes"] if m["id"] == "full_access")
    assert "without your approval" in full["description"]


async def test_the_model_switch_reaches_the_next_model_call_not_the_running_one(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", **MODELS)
    session, _ = await new_session(agent, project)
    agent.editor.permissions.append(HOLD)
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="a")),)),
        Reply(text="written"),
        Reply(text="again"),
    )

    running = await agent.start_prompt(session, "write a file")
    held = await agent.wait_request("session/request_permission")
    chosen = await choose(agent, session, "model", "m-two")
    assert options_of(chosen)["model"] == ("m-two", ["m-one", "m-two"])
    await agent.answer_held(held, {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    assert (await running.result()).stop_reason == "end_turn"
    assert (await agent.prompt(session, "once more")).stop_reason == "end_turn"

    assert [r.body["model"] for r in server.requests] == ["m-one", "m-two", "m-two"]


async def test_choices_are_stored_and_come_back_with_load_and_resume(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", **MODELS)
    session, _ = await new_session(agent, project)
    await choose(agent, session, "model", "m-two")
    await choose(agent, session, "mode", "plan")
    await launch.close(agent)

    for method in ("session/load", "session/resume"):
        other = await launch.start("openai", **MODELS)
        restored = await other.result(
            method, {"sessionId": session, "cwd": str(project), "mcpServers": []}
        )
        assert options_of(restored)["model"][0] == "m-two"
        assert options_of(restored)["mode"][0] == "plan"
        assert restored["modes"]["currentModeId"] == "plan"
        server.script(Reply(text="planned"))
        assert (await other.prompt(session, "plan it")).stop_reason == "end_turn"
        assert server.requests[-1].body["model"] == "m-two"
        assert offered_tools(server.requests[-1].body) == READ_ONLY_TOOLS
        await launch.close(other)


async def test_plan_mode_offers_and_runs_nothing_that_writes(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session, _ = await new_session(agent, project)
    await choose(agent, session, "mode", "plan")
    (project / "notes.txt").write_text("todo\n")
    server.script(
        Reply(
            calls=(
                Call("r1", "read_file", args(path="notes.txt")),
                Call("w1", "write_file", args(path="plan.txt", content="x")),
                Call("c1", "run_command", args(command="touch ran.txt")),
            )
        ),
        Reply(text="1. do it"),
    )

    turn = await agent.prompt(session, "how would you fix it?")

    assert turn.stop_reason == "end_turn"
    first = server.requests[0].body
    assert offered_tools(first) == READ_ONLY_TOOLS
    assert "Plan mode" in first["system"][0]["text"]
    results = tool_results(server.requests[1])
    assert results["r1"] == ("todo\n", False) or results["r1"][0].endswith("todo\n")
    for call in ("w1", "c1"):
        assert results[call][1] is True and "Plan mode" in results[call][0]
        assert statuses(for_call(turn.updates, call))[-1] == "failed"
    assert agent.editor.of_method("session/request_permission") == []
    assert entries(project) == ["notes.txt"]


async def test_accept_edits_writes_without_asking_but_commands_still_ask(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    agent = await launch.start("openai")
    session, _ = await new_session(agent, project)
    await choose(agent, session, "mode", "accept_edits")
    agent.editor.permissions.extend(["allow_once", "allow_once"])
    outside = tmp_path / "outside.txt"
    server.script(
        Reply(
            calls=(
                Call("w1", "write_file", args(path="inside.txt", content="in\n")),
                Call("c1", "run_command", args(command="echo hi")),
                Call("w2", "write_file", args(path=str(outside), content="out\n")),
            )
        ),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "edit and run")

    assert turn.stop_reason == "end_turn"
    asked = [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]
    assert asked == ["c1", "w2"]  # a command, and a write outside the project
    assert (project / "inside.txt").read_text() == "in\n"
    assert outside.read_text() == "out\n"


async def test_full_access_asks_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session, _ = await new_session(agent, project)
    await choose(agent, session, "mode", "full_access")
    server.script(
        Reply(
            calls=(
                Call("w1", "write_file", args(path="a.txt", content="a")),
                Call("c1", "run_command", args(command="touch ran.txt")),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "go")).stop_reason == "end_turn"

    assert agent.editor.of_method("session/request_permission") == []
    assert (project / "a.txt").read_text() == "a" and (project / "ran.txt").exists()


async def test_each_way_of_choosing_the_mode_announces_it_the_other_way(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", **MODELS)  # no model list arrives meanwhile
    session, _ = await new_session(agent, project)

    start = len(agent.messages)
    assert await agent.result("session/set_mode", {"sessionId": session, "modeId": "plan"}) == {}
    await wait_until(lambda: option_updates(agent, session), "an update")
    [update] = agent.updates(session, start, metadata=True)
    assert update["sessionUpdate"] == "config_option_update"
    assert options_of(update)["mode"][0] == "plan"

    start = len(agent.messages)
    chosen = await choose(agent, session, "mode", "accept_edits")
    assert options_of(chosen)["mode"][0] == "accept_edits"
    await wait_until(lambda: agent.updates(session, start, metadata=True), "an update")
    assert agent.updates(session, start, metadata=True) == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "accept_edits"}
    ]


async def test_bad_choices_are_refused_and_change_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", **MODELS)
    session, _ = await new_session(agent, project)

    def failure(response: dict[str, Any]) -> tuple[int, str]:
        return response["error"]["code"], response["error"]["message"]

    code, message = failure(
        await agent.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "temperature", "value": "hot"},
        )
    )
    assert code == -32602 and "unknown option 'temperature'" in message and "mode, model" in message
    code, message = failure(
        await agent.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "model", "value": "m-three"},
        )
    )
    assert code == -32602 and "expected one of m-one, m-two" in message
    code, message = failure(
        await agent.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "mode", "type": "boolean", "value": True},
        )
    )
    assert code == -32602 and "not a boolean option" in message
    code, message = failure(
        await agent.request("session/set_mode", {"sessionId": session, "modeId": "yolo"})
    )
    assert code == -32602 and "unknown mode 'yolo'" in message
    code, _ = failure(
        await agent.request("session/set_mode", {"sessionId": "sess_nope", "modeId": "plan"})
    )
    assert code == -32002

    server.script(Reply(text="ok"))
    assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
    assert server.requests[-1].body["model"] == "m-one"
    assert len(offered_tools(server.requests[-1].body)) > len(READ_ONLY_TOOLS)


async def test_thinking_on_anthropic_streams_thoughts_with_a_budget(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", ACP_FSM_MODEL="claude-sonnet-4-5")
    session, result = await new_session(agent, project)
    assert options_of(result)["thought_level"] == ("default", ["default", "low", "medium", "high"])
    server.script(Reply(text="plain"))
    await agent.prompt(session, "no thinking yet")
    assert "thinking" not in server.requests[-1].body

    await choose(agent, session, "thought_level", "medium")
    server.script(Reply(thinking=("Let me ", "think."), signature="sig", text="answer"))
    turn = await agent.prompt(session, "think hard")

    body = server.requests[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 12288}
    assert body["max_tokens"] == 8192 + 12288
    thoughts = [
        u["content"]["text"] for u in turn.updates if u["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert thoughts == ["Let me ", "think."]


async def test_thinking_switched_on_inside_a_tool_loop_waits_for_the_loop_to_end(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Anthropic refuses thinking while a tool loop made without it goes on."""
    agent = await launch.start("anthropic", ACP_FSM_MODEL="claude-sonnet-4-5")
    session, _ = await new_session(agent, project)
    agent.editor.permissions.append(HOLD)
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="a.txt", content="a")),)),
        Reply(text="written"),
        Reply(thinking="hm", signature="s", text="next"),
    )

    running = await agent.start_prompt(session, "write")
    held = await agent.wait_request("session/request_permission")
    await choose(agent, session, "thought_level", "high")
    await agent.answer_held(held, {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
    assert (await running.result()).stop_reason == "end_turn"
    assert (await agent.prompt(session, "next")).stop_reason == "end_turn"

    assert ["thinking" in r.body for r in server.requests] == [False, False, True]


async def test_reasoning_effort_on_openai_and_none_for_a_model_without_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-5", ACP_FSM_MODELS="gpt-5,gpt-4.1")
    session, result = await new_session(agent, project)
    assert options_of(result)["thought_level"][0] == "default"
    await choose(agent, session, "thought_level", "high")
    server.script(Reply(text="a"), Reply(text="b"))
    await agent.prompt(session, "reason")
    assert reasoning_effort(server.requests[-1]) == "high"

    chosen = await choose(agent, session, "model", "gpt-4.1")
    assert "thought_level" not in options_of(chosen)  # the model takes none
    await agent.prompt(session, "plain")
    assert reasoning_effort(server.requests[-1]) is None


async def test_the_model_list_comes_from_the_provider_and_is_kept_for_the_next_start(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A compatible server (the scripted one is not OpenAI's own API): its chat models in its
    own order, the first the default; nothing known of them yet, the first `session/new`
    waits for them (it answered `gpt-5`, the provider's default name, before); kept for the
    next start, which answers with them at once and asks the server again (it may serve
    other models by then)."""
    server.models = ("o3", "gpt-5", "text-embedding-3-small", "whisper-1", "gpt-5-mini")
    agent = await launch.start("openai")
    session, result = await new_session(agent, project)
    assert options_of(result)["model"] == ("o3", ["o3", "gpt-5", "gpt-5-mini"])
    [listing] = server.model_list_requests
    assert listing.headers["authorization"].startswith("Bearer ")
    await launch.close(agent)
    assert option_updates(agent, session) == []  # nothing to correct

    server.models = ("gpt-5-mini", "o3")
    again = await launch.start("openai")
    session, result = await new_session(again, project)
    assert options_of(result)["model"] == ("o3", ["o3", "gpt-5", "gpt-5-mini"])
    assert (launch.home / "models.json").exists()
    await wait_until(lambda: option_updates(again, session), "the list to arrive again")
    [update] = option_updates(again, session)
    assert options_of(update)["model"] == ("gpt-5-mini", ["gpt-5-mini", "o3"])
    assert len(server.model_list_requests) == 2


async def test_the_anthropic_model_list_and_a_failed_listing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.models = ("claude-opus-4-1", "claude-sonnet-4-5")
    agent = await launch.start("anthropic")
    session, result = await new_session(agent, project)  # a compatible server: its list awaited
    assert options_of(result)["model"] == (
        "claude-opus-4-1",  # its first: not Anthropic's
        ["claude-opus-4-1", "claude-sonnet-4-5"],
    )
    assert "anthropic-version" in server.model_list_requests[0].headers

    server.models_error = HttpError(401, "invalid x-api-key")
    other = await launch.start("openai")  # nothing kept for this provider yet
    session, result = await new_session(other, project)
    assert len(server.model_list_requests) == 2  # answered once the listing failed
    [failed] = other.log("models_not_listed")
    assert failed["error"].endswith("/v1/models: HTTP 401")
    assert options_of(result)["model"] == ("gpt-5", ["gpt-5"])
    assert option_updates(other, session) == []


async def test_the_first_call_waits_for_a_servers_listing_no_longer_than_the_connect_limit(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A compatible server whose models listing takes 2 s: with ACP_FSM_CONNECT_TIMEOUT_MS
    at 300 the first call gives it up at that limit (it waited up to 5 s whatever the limit
    said) and goes to the configured model, not the first the server would have listed."""
    server.models = ("listed-first",)
    server.models_delay_s = 2.0
    server.script(Reply(text="hello"))
    agent = await launch.start("openai", ACP_FSM_CONNECT_TIMEOUT_MS="300")
    session, _ = await new_session(agent, project)

    turn = await agent.prompt(session, "hi")

    assert turn.stop_reason == "end_turn"
    assert server.requests[-1].body["model"] == "gpt-5"  # the configured one
    [failed] = agent.log("models_not_listed")
    assert failed["error"] == "no answer within 0.3 s"


async def test_a_choice_made_in_one_process_never_hides_the_others_turn(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Two processes with the session open (two editor windows): a choice is stored outside
    any turn, and the next prompt still reads what the other process's turn wrote."""
    first = await launch.start("openai", **MODELS)
    session, _ = await new_session(first, project)
    server.script(Reply(text="1"), Reply(text="2"), Reply(text="3"))
    await first.prompt(session, "first from A")
    second = await launch.start("openai", **MODELS)
    await second.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    await second.prompt(session, "second from B")
    await choose(second, session, "model", "m-two")

    start = len(first.messages)
    await choose(first, session, "mode", "plan")
    await first.prompt(session, "third from A")

    assert user_texts(server.requests[-1]) == ["first from A", "second from B", "third from A"]
    assert server.requests[-1].body["model"] == "m-two"  # B's choice, kept beside A's
    assert offered_tools(server.requests[-1].body) == READ_ONLY_TOOLS
    # A's editor is told of B's choice when A catches up
    told = [
        m["params"]["update"]
        for m in first.messages[start:]
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "config_option_update"
    ]
    assert told and options_of(told[-1])["model"][0] == "m-two"


async def test_choices_made_at_once_are_all_kept(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", **MODELS)
    session, _ = await new_session(agent, project)

    answers = await asyncio.gather(
        agent.request(
            "session/set_config_option",
            {"sessionId": session, "configId": "model", "value": "m-two"},
        ),
        agent.request(
            "session/set_config_option", {"sessionId": session, "configId": "mode", "value": "plan"}
        ),
    )

    assert all("result" in a for a in answers)
    await launch.close(agent)
    other = await launch.start("openai", **MODELS)
    restored = await other.result(
        "session/resume", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    assert options_of(restored)["model"][0] == "m-two"
    assert options_of(restored)["mode"][0] == "plan"


async def test_choosing_what_is_already_chosen_changes_and_says_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", **MODELS)
    session, _ = await new_session(agent, project)
    start = len(agent.messages)

    await choose(agent, session, "mode", "ask")
    await choose(agent, session, "model", "m-one")
    assert await agent.result("session/set_mode", {"sessionId": session, "modeId": "ask"}) == {}

    await asyncio.sleep(SETTLE_S)
    assert agent.updates(session, start, metadata=True) == []
    assert [kind for kind, _ in stored(launch.home, session)] == []


async def test_without_a_usable_provider_only_the_mode_is_offered(
    launch: Launcher, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_PROVIDER="bogus")
    _, result = await new_session(agent, project)
    assert [o["id"] for o in result["configOptions"]] == ["mode"]
