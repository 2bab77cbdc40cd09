"""OpenAI's Responses API through the real process: text and reasoning summaries streamed, a
tool loop carrying its reasoning items from call to call (the scripted server refuses a
function call sent back without its reasoning item), cancel, compaction, reload and the repair
of a killed turn each leaving input the API takes, retries and errors."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.compaction import SUMMARY_HEADER
from acp_fsm.devkit.editor import HOLD
from acp_fsm.devkit.provider import Call, ErrorEvent, Hang, HttpError, Reply, ScriptedProvider
from acp_fsm.providers.types import Usage
from acp_fsm.transcript import NOT_STARTED
from tests.e2e.support import API_KEY, Launcher, args, message_chunks, thought_chunks
from tests.e2e.test_cancel import cancel_and_wait, next_prompt_is_accepted
from tests.e2e.test_compaction import SUMMARY, TIGHT, is_summary_call, notices, read
from tests.e2e.test_compaction import start as compaction_start
from tests.e2e.test_sessions import restore
from tests.e2e.test_settings import choose, new_session
from tests.e2e.test_user_commands import said
from tests.harness import wait_until


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    """A scripted provider whose replies reason only when they say so (whatever the run)."""
    async with ScriptedProvider() as provider:
        yield provider


def items(server: ScriptedProvider, index: int = -1) -> list[dict[str, Any]]:
    """The input items of a recorded Responses call."""
    request = server.requests[index]
    assert request.path == "/v1/responses"
    found: list[dict[str, Any]] = request.body["input"]
    return found


def kinds(found: list[dict[str, Any]]) -> list[str]:
    return [f"{i['type']}:{i.get('role', '')}" for i in found]


def summaries(found: list[dict[str, Any]]) -> list[str]:
    """The summary text of each reasoning item, in order."""
    return [i["summary"][0]["text"] for i in found if i["type"] == "reasoning"]


def answered(found: list[dict[str, Any]]) -> dict[str, str]:
    """call id -> the output sent for it, every call answered (the server checks where)."""
    calls = [i["call_id"] for i in found if i["type"] == "function_call"]
    outputs = {i["call_id"]: i["output"] for i in found if i["type"] == "function_call_output"}
    assert sorted(calls) == sorted(outputs)
    return outputs


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
    """After a restart and `session/load`, a tool loop: each stored reasoning item goes back
    before its own response's items, and the new call's with it."""
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
    server.script(
        Reply(thinking="Again.", calls=(Call("c2", "read_file", args(path="a.txt")),)),
        Reply(text="Still alpha"),
    )
    turn = await second.prompt(session, "read it again")

    assert turn.stop_reason == "end_turn"
    after = items(server)
    assert after[: len(before)] == before  # the first call's reasoning item among them
    assert kinds(after[len(before) :]) == [
        "reasoning:",
        "message:assistant",
        "message:user",
        "reasoning:",
        "function_call:",
        "function_call_output:",
    ]
    assert summaries(after) == ["Read first.", "Now answer.", "Again."]


async def test_a_reasoning_item_without_its_encrypted_content_is_never_sent_back(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A compatible server, or a proxy, returns a reasoning item without `encrypted_content`:
    with `store: false` the API cannot resolve it (the scripted one refuses it, as OpenAI
    does), so it is never sent back, in this process or after a reload; its thought is
    still shown, and the items that came sealed still go back."""
    (project / "a.txt").write_text("alpha\n")
    first = await launch.start("openai-responses")
    session = await first.new_session(project)
    read = Call("c1", "read_file", args(path="a.txt"))
    server.script(
        Reply(thinking="Read it.", calls=(read,), encrypted=False),
        Reply(thinking="Now answer.", text="alpha"),
        Reply(text="still alpha"),
    )

    turn = await first.prompt(session, "what is in a.txt?")
    later = await first.prompt(session, "and now?")

    assert turn.stop_reason == later.stop_reason == "end_turn"
    assert turn.updates[0] == thought_chunks("Read it.")[0]
    assert kinds(items(server, 1)) == [
        "message:user",
        "function_call:",
        "function_call_output:",
    ]
    assert summaries(items(server)) == ["Now answer."]  # the sealed one
    await launch.close(first)

    second = await launch.start("openai-responses")
    await restore(second, "session/load", session, project)
    server.script(Reply(text="alpha again"))
    assert (await second.prompt(session, "once more")).stop_reason == "end_turn"
    assert summaries(items(server)) == ["Now answer."]


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


async def test_a_compatible_server_serves_a_codex_model_on_the_api_it_was_given(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Only on OpenAI's own API does a model served on the Responses API only go there by
    itself (`providers.config.api_of`); a proxy or a local server serves its models as it
    says: Chat Completions here, and the picker marks nothing."""
    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-5", ACP_FSM_MODELS="gpt-5,gpt-5-codex")
    session, created = await new_session(agent, project)
    [model] = [o for o in created["configOptions"] if o["id"] == "model"]
    assert [o.get("description") for o in model["options"]] == [None, None]

    await choose(agent, session, "model", "gpt-5-codex")
    server.script(Reply(text="on chat"))
    assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
    assert server.requests[-1].path == "/v1/chat/completions"


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
    session, result = await new_session(agent, project)  # a compatible server's list, awaited

    [model] = [o for o in result["configOptions"] if o["id"] == "model"]
    assert [o["value"] for o in model["options"]] == ["gpt-5-codex", "gpt-5"]
    server.script(Reply(text="ok"))
    assert (await agent.prompt(session, "hi")).stop_reason == "end_turn"
    assert server.requests[-1].body["model"] == "gpt-5-codex"  # a server's first: the default


async def test_a_cancel_in_a_later_call_of_a_tool_loop_leaves_input_the_api_takes(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Cancelled at the permission of its second call's write: the next prompt sends both
    responses' reasoning items in place, and an output for every call."""
    (project / "a.txt").write_text("alpha\n")
    agent = await launch.start("openai-responses")
    agent.editor.permissions.append(HOLD)
    session = await agent.new_session(project)
    write = Call("w1", "write_file", args(path="b.txt", content="beta\n"))
    server.script(
        Reply(thinking="Read first.", calls=(Call("r1", "read_file", args(path="a.txt")),)),
        Reply(thinking="Then write.", text="Writing.", calls=(write,)),
    )
    pending = await agent.start_prompt(session, "copy a.txt")
    asked = await agent.wait_request("session/request_permission")

    await cancel_and_wait(agent, pending)

    await agent.answer_held(asked, {"outcome": {"outcome": "cancelled"}})
    await next_prompt_is_accepted(agent, server, session)
    sent = items(server)
    assert kinds(sent) == [
        "message:user",
        "reasoning:",
        "function_call:",
        "function_call_output:",
        "reasoning:",
        "message:assistant",
        "function_call:",
        "function_call_output:",
        "message:user",
    ]
    assert summaries(sent) == ["Read first.", "Then write."]
    assert answered(sent) == {"r1": "alpha\n", "w1": NOT_STARTED}


async def test_a_compaction_leaves_input_the_api_takes(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The summary call carries the older turns with their reasoning items; after it, only
    the kept call's reasoning item is sent, before it, and nothing of the summarised turns."""
    agent, session = await compaction_start(launch, project, "openai-responses", **TIGHT)
    server.script(
        Reply(thinking="Read a.", calls=read("a", "a.txt").calls),
        Reply(thinking="Answer a.", text="a holds x"),
        Reply(thinking="Read b.", calls=read("b", "b.txt").calls),
        Reply(text=SUMMARY),
        Reply(thinking="Answer b.", text="b holds x too"),
    )

    await agent.prompt(session, "read a.txt")
    second = await agent.prompt(session, "read b.txt")

    assert second.stop_reason == "end_turn" and notices(second.updates)
    summary_call, after = items(server, 3), items(server, 4)
    assert is_summary_call(server.requests[3])
    assert kinds(summary_call) == [
        "message:user",
        "reasoning:",
        "function_call:",
        "function_call_output:",
        "reasoning:",
        "message:assistant",
        "message:user",
        "message:user",
    ]
    assert summaries(summary_call) == ["Read a.", "Answer a."]
    assert kinds(after) == [
        "message:user",
        "reasoning:",
        "function_call:",
        "function_call_output:",
    ]
    assert after[0]["content"][0]["text"].startswith(SUMMARY_HEADER)
    assert summaries(after) == ["Read b."] and answered(after).keys() == {"b"}


async def test_a_kill_mid_tool_call_then_a_reload_sends_a_repaired_loop(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Killed while its call waits for permission: after `session/load` in a new process the
    call is answered as interrupted and its reasoning item goes back before it."""
    first = await launch.start("openai-responses")
    first.editor.permissions.append(HOLD)
    session = await first.new_session(project)
    write = Call("w1", "write_file", args(path="b.txt", content="beta\n"))
    server.script(Reply(thinking="Write it.", calls=(write,)))
    await first.start_prompt(session, "write b.txt")
    await first.wait_request("session/request_permission")
    await launch.kill(first)

    second = await launch.start("openai-responses")
    await restore(second, "session/load", session, project)
    await next_prompt_is_accepted(second, server, session)
    sent = items(server)

    assert kinds(sent) == [
        "message:user",
        "reasoning:",
        "function_call:",
        "function_call_output:",
        "message:user",
    ]
    assert summaries(sent) == ["Write it."]
    assert list(answered(sent)) == ["w1"]


async def test_a_server_error_is_retried_and_an_api_error_quoted_without_the_key(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai-responses", ACP_FSM_MAX_RETRIES="1")
    session = await agent.new_session(project)
    server.script(
        HttpError(500, "The server had an error", headers={"retry-after-ms": "20"}),
        Reply(text="made it"),
        HttpError(400, f"Invalid input for key {API_KEY}.", code="invalid_value", param="input"),
    )

    retried = await agent.prompt(session, "hello")
    failed = await agent.prompt(session, "again")

    assert retried.updates == message_chunks("made it")
    assert server.requests[0].body == server.requests[1].body
    message = failed.error["message"]
    assert message.startswith("openai HTTP 400 invalid_value: Invalid input for key [redacted].")
    assert failed.error["data"]["status"] == 400 and API_KEY not in str(failed.error)
    assert len(server.requests) == 3  # a 400 is not retried


async def test_calls_sent_without_a_call_id_get_made_up_ids_of_their_own(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A compatible server's function calls without a `call_id`: each gets its own, shown to
    the editor and sent back with its output."""
    (project / "a.txt").write_text("A\n")
    agent = await launch.start("openai-responses")
    session = await agent.new_session(project)
    read_a = Call("", "read_file", args(path="a.txt"))
    server.script(Reply(calls=(read_a, read_a)), Reply(text="done"))

    turn = await agent.prompt(session, "read it twice")

    announced = [u["toolCallId"] for u in turn.updates if u["sessionUpdate"] == "tool_call"]
    assert len(set(announced)) == 2 and "" not in announced
    assert answered(items(server)) == dict.fromkeys(announced, "A\n")


async def test_another_model_is_not_sent_the_reasoning_it_cannot_read(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Encrypted reasoning is readable by the model that made it only (the scripted API, as
    the real one, refuses it with invalid_encrypted_content): a switch leaves it out, and a
    switch back sends it again."""
    (project / "a.txt").write_text("alpha\n")
    agent = await launch.start("openai-responses", ACP_FSM_MODEL="gpt-5", ACP_FSM_MODELS="gpt-5,o3")
    session, _ = await new_session(agent, project)
    server.script(
        Reply(thinking="Read.", calls=(Call("c1", "read_file", args(path="a.txt")),)),
        Reply(text="alpha"),
    )
    assert (await agent.prompt(session, "read a.txt")).stop_reason == "end_turn"

    await choose(agent, session, "model", "o3")
    server.script(Reply(thinking="Mine.", text="o3 here"))
    assert (await agent.prompt(session, "and now?")).stop_reason == "end_turn"
    assert "reasoning:" not in kinds(items(server))

    await choose(agent, session, "model", "gpt-5")
    server.script(Reply(text="gpt-5 again"))
    assert (await agent.prompt(session, "back")).stop_reason == "end_turn"
    assert kinds(items(server)).count("reasoning:") == 1  # its own, not o3's


async def test_summaries_are_asked_for_and_dropped_where_they_are_refused(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A model that reasons is asked for its summary at the default level; an organization
    OpenAI has not verified is refused it, and the call is made again without, for good."""
    agent = await launch.start("openai-responses", ACP_FSM_MODEL="gpt-5", ACP_FSM_MAX_RETRIES="1")
    session = await agent.new_session(project)
    refused = HttpError(
        400,
        "Your organization must be verified to generate reasoning summaries.",
        code="unsupported_value",
        param="reasoning.summary",
    )
    server.script(refused, Reply(text="without"), Reply(text="still without"))

    turn = await agent.prompt(session, "hi")

    assert turn.updates == message_chunks("without")
    first, second = (r.body.get("reasoning") for r in server.requests[-2:])
    assert first == {"summary": "auto"} and second is None
    assert (await agent.prompt(session, "again")).stop_reason == "end_turn"
    assert "reasoning" not in server.requests[-1].body
