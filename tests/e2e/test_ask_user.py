"""`ask_user`: the model's question reaches the user as an `elicitation/create` form when the
editor advertises `elicitation.form`, else as a `session/request_permission` whose options are
the choices; the answer, a decline or a dismissal is the tool result; a cancel of the turn
ends the wait. Every message is checked against the official schema at close."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_fsm.devkit.editor.answers import HOLD
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    BARE,
    Launcher,
    args,
    content_text,
    for_call,
    statuses,
    tool_results,
)
from tests.harness import wait_until

FORMS = {**BARE, "elicitation": {"form": {}}}


def ask(call_id: str = "q1", **question: Any) -> Reply:
    return Reply(calls=(Call(call_id, "ask_user", args(**question)),))


async def test_a_choice_is_a_form_and_its_answer_the_result(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=FORMS)
    session = await agent.new_session(project)
    agent.editor.overrides["elicitation/create"] = {
        "action": "accept",
        "content": {"answer": "Postgres"},
    }
    server.script(ask(question="Which database?", options=["SQLite", "Postgres"]), Reply(text="ok"))

    turn = await agent.prompt(session, "set up storage")

    (request,) = agent.editor.of_method("elicitation/create")
    params = request["params"]
    assert params["sessionId"] == session and params["toolCallId"] == "q1"
    assert params["mode"] == "form" and params["message"] == "Which database?"
    field = params["requestedSchema"]["properties"]["answer"]
    assert field == {"type": "string", "title": "Choose one", "enum": ["SQLite", "Postgres"]}
    assert params["requestedSchema"]["required"] == ["answer"]
    assert tool_results(server.requests[-1])["q1"] == ("The user chose: Postgres", False)
    assert agent.editor.of_method("session/request_permission") == []
    shown = for_call(turn.updates, "q1")
    assert shown[0]["kind"] == "other" and shown[0]["title"] == "Question: Which database?"
    assert content_text(shown[0]) == "Which database?"
    assert statuses(shown)[-1] == "completed"


async def test_free_text_and_several_choices_are_forms(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=FORMS)
    session = await agent.new_session(project)
    answers = iter(
        [
            {"action": "accept", "content": {"answer": "call it lumen"}},
            {"action": "accept", "content": {"answer": ["lint", "test"]}},
            {"action": "decline"},
            {"action": "cancel"},
        ]
    )
    server.script(
        Reply(calls=(Call("t", "ask_user", args(question="Name?")),)),
        Reply(
            calls=(
                Call(
                    "m",
                    "ask_user",
                    args(
                        question="Which checks?",
                        options=["lint", "test", "types"],
                        multi_select=True,
                    ),
                ),
            )
        ),
        Reply(calls=(Call("d", "ask_user", args(question="Delete it?", options=["yes", "no"])),)),
        Reply(calls=(Call("c", "ask_user", args(question="Still there?")),)),
        Reply(text="done"),
    )
    agent.editor.overrides["elicitation/create"] = HOLD
    running = await agent.start_prompt(session, "go")
    for _ in range(4):
        await wait_until(lambda: len(agent.editor.held) == 1, "a question")
        await agent.answer_held(agent.editor.held[0], next(answers))
    done = await running.result()
    assert done.stop_reason == "end_turn"
    forms = [
        r["params"]["requestedSchema"]["properties"]["answer"]
        for r in agent.editor.of_method("elicitation/create")
    ]
    assert forms[0] == {"type": "string", "title": "Your answer"}
    assert forms[1]["type"] == "array" and forms[1]["items"] == {
        "type": "string",
        "enum": ["lint", "test", "types"],
    }
    results = tool_results(server.requests[-1])
    assert results["t"][0] == "The user answered: call it lumen"
    assert results["m"][0] == "The user chose: lint, test"
    assert results["d"][0] == "The user declined to answer."
    assert results["c"][0] == "The user dismissed the question without answering."


async def test_without_forms_the_choices_are_permission_options(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")  # a client without elicitation
    session = await agent.new_session(project)
    agent.editor.permissions.extend(["choice_1", "decline"])
    server.script(
        Reply(
            calls=(
                Call("a", "ask_user", args(question="Tabs or spaces?", options=["tabs", "spaces"])),
            )
        ),
        Reply(
            calls=(
                Call(
                    "b",
                    "ask_user",
                    args(question="Which one?", options=["x", "y"], multi_select=True),
                ),
            )
        ),
        Reply(calls=(Call("c", "ask_user", args(question="What is the port?")),)),
        Reply(text="ok"),
    )

    turn = await agent.prompt(session, "format")

    first, _ = agent.editor.of_method("session/request_permission")
    asked = first["params"]["toolCall"]
    assert asked["toolCallId"] == "a"
    # the question is the request's title and content, for clients that show only these
    assert asked["title"] == "Question: Tabs or spaces?" and asked["kind"] == "other"
    assert content_text(asked) == "Tabs or spaces?"
    (announced, *_) = for_call(turn.updates, "a")  # the call the client knows shows it too
    assert announced["title"] == asked["title"] and announced["kind"] == "other"
    assert content_text(announced) == "Tabs or spaces?"
    assert [(o["optionId"], o["name"], o["kind"]) for o in first["params"]["options"]] == [
        ("choice_0", "tabs", "allow_once"),
        ("choice_1", "spaces", "allow_once"),
        ("decline", "Don't answer", "reject_once"),
    ]
    assert agent.editor.of_method("elicitation/create") == []
    results = tool_results(server.requests[-1])
    assert results["a"][0] == "The user chose: spaces"
    assert results["b"][0] == "The user declined to answer."
    text, _ = results["c"]
    assert text.startswith("This editor cannot show a question with a typed answer")
    assert len(agent.editor.of_method("session/request_permission")) == 2  # c was not asked


async def test_a_cancel_ends_the_wait(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=FORMS)
    session = await agent.new_session(project)
    agent.editor.overrides["elicitation/create"] = HOLD
    server.script(ask(question="Proceed?", options=["yes", "no"]))
    running = await agent.start_prompt(session, "go")
    await wait_until(lambda: len(agent.editor.held) == 1, "the question")

    await agent.cancel(session)

    assert (await running.result()).stop_reason == "cancelled"
    (question,) = agent.editor.held
    withdrawn = agent.notifications("$/cancel_request", running.start)
    assert [m["params"] for m in withdrawn] == [{"requestId": question["id"]}]
    assert len(server.requests) == 1


async def test_an_editor_error_is_the_tool_result_and_bad_arguments_are_refused(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    from acp_fsm.devkit.editor.answers import EditorError

    agent = await launch.start("openai", capabilities=FORMS)
    session = await agent.new_session(project)
    agent.editor.overrides["elicitation/create"] = EditorError(-32603, "form broke")
    server.script(
        Reply(calls=(Call("e", "ask_user", args(question="A?", options=["1", "2"])),)),
        Reply(calls=(Call("m", "ask_user", args(question="B?", multi_select=True)),)),
        Reply(text="ok"),
    )
    await agent.prompt(session, "go")
    results = tool_results(server.requests[-1])
    assert "form broke" in results["e"][0]
    assert "multi_select needs options" in results["m"][0]
    assert len(agent.editor.of_method("elicitation/create")) == 1


# ------------------------------------------------------------------ MCP servers' forms


async def mcp_turn(agent: Any, server: ScriptedProvider, project: Path, tool: str) -> Any:
    from tests.e2e.test_mcp import open_session, stdio_server

    session = await open_session(agent, project, stdio_server())
    server.script(Reply(calls=(Call("c1", f"mcp__tools__{tool}", "{}"),)), Reply(text="done"))
    agent.editor.permissions.appendleft("allow_once")  # the MCP call itself
    return await agent.prompt(session, "go")


async def test_an_mcp_servers_form_is_relayed_as_a_form(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=FORMS)
    agent.editor.overrides["elicitation/create"] = {
        "action": "accept",
        "content": {"name": "Ada", "age": 36},
    }

    await mcp_turn(agent, server, project, "register")

    (request,) = agent.editor.of_method("elicitation/create")
    params = request["params"]
    assert params["toolCallId"] == "c1" and params["message"] == "Who are you?"
    fields = params["requestedSchema"]["properties"]
    assert fields["name"]["type"] == "string" and fields["name"]["title"] == "Name"
    assert fields["age"]["type"] == "integer" and fields["age"]["minimum"] == 0
    assert sorted(params["requestedSchema"]["required"]) == ["age", "name"]
    assert "registered Ada, 36" in tool_results(server.requests[-1])["c1"][0]


async def test_without_forms_an_mcp_choice_is_asked_with_permission_options(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.append("choice_1")

    await mcp_turn(agent, server, project, "paint")

    asked = agent.editor.of_method("session/request_permission")[-1]["params"]
    assert asked["toolCall"]["toolCallId"] == "c1" and asked["toolCall"]["kind"] == "other"
    assert asked["toolCall"]["title"] == "MCP server tools asks: Which colour should I paint it?"
    (shown,) = asked["toolCall"]["content"]  # the question, where the call's result will be
    assert shown["content"]["text"] == "Which colour should I paint it?"
    assert [o["name"] for o in asked["options"]] == ["red", "green", "blue", "Don't answer"]
    assert "painted green" in tool_results(server.requests[-1])["c1"][0]


async def test_without_forms_an_mcp_form_of_several_fields_is_the_servers_error(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")

    await mcp_turn(agent, server, project, "register")

    result, _ = tool_results(server.requests[-1])["c1"]
    assert "not a choice" in result, result
    assert len(agent.editor.of_method("session/request_permission")) == 1  # the call's own


async def test_a_subagents_mcp_call_cannot_ask_the_user(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    from acp_fsm.devkit.provider import RecordedRequest
    from tests.e2e.test_mcp import open_session, stdio_server
    from tests.e2e.test_subagents import is_subagent

    def respond(request: RecordedRequest) -> Any:
        if is_subagent(request):
            if not tool_results(request):
                return Reply(calls=(Call("sub-paint", "mcp__tools__paint", "{}"),))
            return Reply(text="sub: " + next(iter(tool_results(request).values()))[0])
        if "t1" in tool_results(request):
            return Reply(text="all done")
        return Reply(calls=(Call("t1", "task", args(description="paint", prompt="paint it")),))

    server.fallback = respond
    agent = await launch.start("anthropic", capabilities=FORMS)
    session = await open_session(agent, project, stdio_server())
    await agent.result("session/set_mode", {"sessionId": session, "modeId": "full_access"})

    await agent.prompt(session, "go")

    assert agent.editor.of_method("elicitation/create") == []
    report, _ = tool_results(server.requests[-1])["t1"]
    assert "a subagent cannot ask the user" in report, report


async def test_an_unanswered_question_is_withdrawn_and_the_model_told(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=FORMS, ACP_PERMISSION_TIMEOUT_MS="300")
    session = await agent.new_session(project)
    agent.editor.overrides["elicitation/create"] = HOLD
    server.script(ask(question="Still there?"), Reply(text="ok"))

    turn = await agent.prompt(session, "go")

    (question,) = agent.editor.held
    withdrawn = agent.notifications("$/cancel_request", turn.start)
    assert [m["params"] for m in withdrawn] == [{"requestId": question["id"]}]
    text, is_error = tool_results(server.requests[-1])["q1"]
    assert text.startswith("The user did not answer in time") and not is_error
    assert statuses(for_call(turn.updates, "q1"))[-1] == "completed"
