"""OpenAI's Responses API through the real process: text and reasoning summaries streamed, a
tool loop carrying its reasoning items from call to call (the scripted server refuses a
function call sent back without its reasoning item), cancel, reload, errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from acp_fsm.devkit.provider import Call, ErrorEvent, Hang, Reply, ScriptedProvider
from acp_fsm.providers.types import Usage
from tests.e2e.support import Launcher, args, message_chunks, thought_chunks
from tests.e2e.test_cancel import cancel_and_wait, next_prompt_is_accepted
from tests.e2e.test_sessions import restore
from tests.e2e.test_settings import choose, new_session, option_updates
from tests.e2e.test_user_commands import said
from tests.harness import wait_until


def items(server: ScriptedProvider, index: int = -1) -> list[dict[str, Any]]:
    """The input items of a recorded Responses call."""
    request = server.requests[index]
    assert request.path == "/v1/responses"
    found: list[dict[str, Any]] = request.body["input"]
    return found


def kinds(found: list[dict[str, Any]]) -> list[str]:
    return [f"{i['type']}:{i.get('role', '')}" for i in found]


async def test_text_and_reasoning_summary_stream(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    server.script(Reply(thinking=("Let me ", "think."), text=("Hello", ", ", "world")))

    turn = await agent.prompt(session, "hi there")

    assert turn.stop_reason == "end_turn"
    assert turn.updates == [
        *thought_chunks("Let me ", "think."),
        *message_chunks("Hello", ", ", "world"),
    ]
    body = server.requests[-1].body
    assert body["stream"] is True and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert isinstance(body["instructions"], str) and body["instructions"]
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi there"}]}
    ]
    read_file = next(t for t in body["tools"] if t["name"] == "read_file")
    assert read_file["type"] == "function" and read_file["strict"] is False
    assert read_file["parameters"]["type"] == "object"


async def test_tool_loop_sends_the_reasoning_item_back_in_place(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    server.script(
        Reply(thinking="I should read it.", calls=(Call("c1", "read_file", args(path="a.txt")),)),
        Reply(text="It says alpha."),
    )

    turn = await agent.prompt(session, "what is in a.txt?")

    assert turn.stop_reason == "end_turn"
    second = items(server)
    assert kinds(second) == [
        "message:user",
        "reasoning:",
        "function_call:",
        "function_call_output:",
    ]
    reasoning, call, output = second[1:]
    assert reasoning["summary"] == [{"type": "summary_text", "text": "I should read it."}]
    assert reasoning["encrypted_content"]
    assert call == {
        "type": "function_call",
        "call_id": "c1",
        "name": "read_file",
        "arguments": args(path="a.txt"),
    }
    assert output["call_id"] == "c1" and "alpha" in output["output"]


async def test_openai_api_variable_selects_responses(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_OPENAI_API="responses")
    session = await agent.new_session(project)
    server.script(Reply(text="via responses"))

    turn = await agent.prompt(session, "hi")

    assert turn.updates == message_chunks("via responses")
    assert server.requests[-1].path == "/v1/responses"


async def test_cancel_mid_stream_then_the_next_prompt_is_accepted(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    # response.created, the message's output_item.added, its content part's, two text
    # deltas, then silence
    server.script(Reply(text=("partial ", "answer"), fault=Hang(5)))
    pending = await agent.start_prompt(session, "first")
    await wait_until(lambda: len(agent.updates(session, pending.start)) == 2, "two text chunks")

    turn = await cancel_and_wait(agent, pending)

    assert turn.updates == message_chunks("partial ", "answer")
    await wait_until(lambda: server.disconnects, "the provider to see the disconnect", 2.0)
    request = await next_prompt_is_accepted(agent, server, session)
    assert [i["type"] for i in request.body["input"]] == ["message"] * 3


async def test_a_reloaded_session_still_sends_its_reasoning_items(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    first = await launch.start("openai-responses")
    session = await first.new_session(project)
    server.script(
        Reply(thinking="Read first.", calls=(Call("c1", "read_file", args(path="a.txt")),)),
        Reply(thinking="Now answer.", text="alpha"),
    )
    assert (await first.prompt(session, "read a.txt")).stop_reason == "end_turn"
    before = items(server)
    await launch.close(first)

    second = await launch.start("openai-responses")
    await restore(second, "session/load", session, project)
    server.script(Reply(text="You're welcome"))
    turn = await second.prompt(session, "Thanks")

    assert turn.stop_reason == "end_turn"
    after = items(server)
    assert after[: len(before)] == before  # the first call's reasoning item among them
    assert kinds(after[len(before) :]) == ["reasoning:", "message:assistant", "message:user"]
    assert after[len(before)]["summary"][0]["text"] == "Now answer."


async def test_an_error_event_is_quoted(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    # after response.created, the message's item and part, and one delta
    fault = ErrorEvent(after=4, error_type="invalid_prompt", message="Bad prompt here")
    server.script(Reply(text=("Part", "ial"), fault=fault))

    failed = await agent.prompt(session, "first")

    assert failed.error["message"].startswith("openai stream invalid_prompt: Bad prompt here")
    assert failed.updates == message_chunks("Part")
    server.script(Reply(text="recovered"))
    turn = await agent.prompt(session, "second")
    assert turn.updates == message_chunks("recovered")


async def test_the_thought_level_sets_the_reasoning_effort(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses", ACP_FSM_MODEL="gpt-5", ACP_FSM_MODELS="gpt-5")
    session, _ = await new_session(agent, project)
    await choose(agent, session, "thought_level", "high")
    server.script(Reply(thinking="Deep.", text="a"))

    turn = await agent.prompt(session, "reason")

    assert turn.updates == [*thought_chunks("Deep."), *message_chunks("a")]
    assert server.requests[-1].body["reasoning"] == {"effort": "high", "summary": "auto"}


async def test_a_cancel_after_the_reasoning_leaves_input_the_api_takes(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    # response.created, the reasoning item (added, its summary part with one delta, done),
    # then silence
    server.script(Reply(thinking="Hmm.", text="never", fault=Hang(7)))
    pending = await agent.start_prompt(session, "first")
    await wait_until(lambda: len(agent.updates(session, pending.start)) == 1, "the thought")

    await cancel_and_wait(agent, pending)

    request = await next_prompt_is_accepted(agent, server, session)
    assert [i["type"] for i in request.body["input"]] == ["message"] * 2


async def test_calls_carry_the_sessions_cache_key_and_reasoning_tokens(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("alpha\n")
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    spent = Usage(input_tokens=20, output_tokens=9, thought_tokens=6)
    server.script(
        Reply(calls=(Call("c1", "read_file", args(path="a.txt")),), usage=spent),
        Reply(text="alpha", usage=spent),
    )

    turn = await agent.prompt(session, "read a.txt")

    assert [r.body["prompt_cache_key"] for r in server.requests[-2:]] == [session, session]
    usage = turn.response["result"]["_meta"]["acpFsm"]["usage"]
    assert usage["outputTokens"] == 18 and usage["thoughtTokens"] == 12
    status = said((await agent.prompt(session, "/status")).updates)
    assert "- Provider: openai, Responses API (http://127.0.0.1:" in status
    assert re.search(r"\d+ out \(12 of them reasoning\)", status), status  # a title's too


async def test_a_model_served_only_on_responses_goes_there_from_a_chat_session(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-5", ACP_FSM_MODELS="gpt-5,gpt-5-codex")
    session, created = await new_session(agent, project)
    [model] = [o for o in created["configOptions"] if o["id"] == "model"]
    about = {o["value"]: o.get("description") for o in model["options"]}
    assert about == {"gpt-5": None, "gpt-5-codex": "Responses API only"}
    server.script(Reply(text="on chat"), Reply(thinking="Hm.", text="on responses"))
    assert (await agent.prompt(session, "first")).stop_reason == "end_turn"
    assert server.requests[-1].path == "/v1/chat/completions"

    await choose(agent, session, "model", "gpt-5-codex")
    turn = await agent.prompt(session, "second")

    assert turn.updates == [*thought_chunks("Hm."), *message_chunks("on responses")]
    assert server.requests[-1].path == "/v1/responses"
    assert kinds(items(server)) == ["message:user", "message:assistant", "message:user"]
    await choose(agent, session, "model", "gpt-5")  # and back: the reasoning item stays out
    server.script(Reply(text="chat again"))
    assert (await agent.prompt(session, "third")).stop_reason == "end_turn"
    assert [m["role"] for m in server.requests[-1].body["messages"][1:]] == [
        "user", "assistant", "user", "assistant", "user"
    ]  # fmt: skip


async def test_a_subagents_calls_have_a_cache_key_of_their_own(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("t1", "task", args(description="look", prompt="say hi")),)),
        Reply(thinking="Easy.", text="hi"),  # the subagent's
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "delegate")).stop_reason == "end_turn"

    keys = [r.body["prompt_cache_key"] for r in server.requests[-3:]]
    assert keys == [session, f"{session}:task", session]
    sub = server.requests[-2].body
    assert sub["instructions"] != server.requests[-1].body["instructions"]
    assert kinds(sub["input"]) == ["message:user"]


async def test_the_picker_lists_the_servers_models(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.models = ("gpt-5-codex", "gpt-5", "text-embedding-3-small")
    agent = await launch.start("openai-responses")
    session, _ = await new_session(agent, project)

    await wait_until(lambda: option_updates(agent, session), "the list to arrive")
    [update] = option_updates(agent, session)
    [model] = [o for o in update["configOptions"] if o["id"] == "model"]
    assert [(o["value"], o.get("description")) for o in model["options"]] == [
        ("gpt-5-codex", "Responses API only"),
        ("gpt-5", None),
    ]
    server.script(Reply(text="ok"))
    assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
    assert server.requests[-1].body["model"] == "gpt-5-codex"  # a server's first: the default
