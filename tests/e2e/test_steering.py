"""Steering a running turn (`_session/steering`, the extension claude-agent-acp and codex-acp
ship): advertised; a message sent while a turn runs is shown at once, handed to the model
with its next call after the running calls' results, stored in order and replayed; an answer
that would end the turn first gets one more call; a steer with no turn running starts one,
or is left to the client (`promptRequired`); what a cancelled turn never read is kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_fsm.devkit.editor import HOLD, Message
from acp_fsm.devkit.provider import Call, HttpError, Reply, ScriptedProvider
from tests.e2e.support import (
    Agent,
    Launcher,
    PendingTurn,
    args,
    history,
    of_kind,
    text,
    user_texts,
)
from tests.harness import wait_until

ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def steer(agent: Agent, session: str, words: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": session, "prompt": [text(words)]}
    if meta:
        params["_meta"] = {"steering": meta}
    return dict(await agent.result("_session/steering", params))


def shown(agent: Agent, session: str, start: int) -> list[tuple[str, str]]:
    """The user's messages shown since `start`: (text, messageId)."""
    chunks = of_kind(agent.updates(session, start, ids=True), "user_message_chunk")
    return [(c["content"]["text"], c["messageId"]) for c in chunks]


async def asking(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str, *after: Reply
) -> tuple[Agent, str, PendingTurn, Message]:
    """A turn whose model wrote a file and waits for the user's permission (held), the model's
    replies after it scripted: the agent, the session, the turn and the held request."""
    agent = await launch.start(provider)
    agent.editor.permissions.append(HOLD)
    session = await agent.new_session(project)
    write = Call("w1", "write_file", args(path="a.txt", content="one\n"))
    server.script(Reply(text="Writing.", calls=(write,)), *after)
    pending = await agent.start_prompt(session, "write a.txt")
    return agent, session, pending, await agent.wait_request("session/request_permission")


async def test_it_is_advertised(launch: Launcher) -> None:
    agent = await launch.start()
    [init] = [m["result"] for m in agent.messages if "agentCapabilities" in m.get("result", {})]
    assert init["_meta"]["steering"] == {"supported": True}  # beside agentCapabilities


async def test_a_steered_message_joins_the_turn_after_the_running_calls(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    done = Reply(text="Done, b.txt noted.")
    agent, session, pending, asked = await asking(launch, server, project, "anthropic", done)

    start = len(agent.messages)
    assert await steer(agent, session, "and b.txt next") == {"outcome": "injected"}
    [(words, message_id)] = shown(agent, session, start)  # at once, the call still waiting
    assert words == "and b.txt next"
    assert len(server.requests) == 1

    await agent.answer_held(asked, ALLOW)
    turn = await pending.result()
    assert turn.stop_reason == "end_turn"
    second = server.requests[-1]
    roles = [m["role"] for m in history(second)]
    assert roles == ["user", "assistant", "user"]  # the result, then the message, one turn
    last = history(second)[-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert last[1]["text"] == "and b.txt next"
    await launch.close(agent)

    other = await launch.start("anthropic")
    start = len(other.messages)
    load = {"sessionId": session, "cwd": str(project), "mcpServers": []}
    assert "result" in await other.request("session/load", load)
    replayed = shown(other, session, start)
    assert replayed[-1] == ("and b.txt next", message_id)  # as shown live
    kinds = [u["sessionUpdate"] for u in other.updates(session, start)]
    assert kinds.index("tool_call_update") < len(kinds) - 1 - kinds[::-1].index(
        "user_message_chunk"
    )


async def test_an_answer_that_would_end_the_turn_gets_one_more_call(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Steered while the model streams its last answer: the turn goes on with one more
    call, so the message is answered in this turn."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=("Almost ", "there."), delay_s=0.3), Reply(text="Also the docs."))
    pending = await agent.start_prompt(session, "fix it")
    await wait_until(lambda: agent.updates(session, pending.start), "the answer to stream")
    assert await steer(agent, session, "update the docs too") == {"outcome": "injected"}

    turn = await pending.result()
    assert turn.stop_reason == "end_turn"
    assert len(server.requests) == 2
    assert user_texts(server.requests[-1]) == ["fix it", "update the docs too"]
    assert turn.response["result"]["_meta"]["acpFsm"]["modelCalls"] == 2


async def test_with_no_turn_running_it_starts_one_or_is_left_to_the_client(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    assert await steer(agent, session, "hello", idleBehavior="promptRequired") == {
        "outcome": "promptRequired",
        "reason": "noRunningTurn",
    }
    assert server.requests == []

    server.script(Reply(text="Hi there."))
    start = len(agent.messages)
    assert await steer(agent, session, "hello") == {"outcome": "startedNewTurn"}
    await wait_until(lambda: len(server.requests) == 1, "the turn it started")
    assert user_texts(server.requests[0]) == ["hello"]
    await wait_until(
        lambda: any(
            u["sessionUpdate"] == "agent_message_chunk" for u in agent.updates(session, start)
        ),
        "its answer",
    )
    [(words, _)] = shown(agent, session, start)
    assert words == "hello"


async def test_a_message_a_cancelled_turn_never_read_is_kept_for_the_next_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, pending, asked = await asking(launch, server, project, "openai")
    assert await steer(agent, session, "use tabs") == {"outcome": "injected"}
    await agent.cancel(session)
    await agent.answer_held(asked, {"outcome": {"outcome": "cancelled"}})
    assert (await pending.result()).stop_reason == "cancelled"

    server.script(Reply(text="Tabs it is."))
    turn = await agent.prompt(session, "go on")
    assert turn.stop_reason == "end_turn"
    # kept as the user's message: the next prompt's joins it (one user turn for the model)
    assert user_texts(server.requests[-1]) == ["write a.txt", "use tabs\n\ngo on"]


async def test_a_subagent_never_takes_the_sessions_steered_message(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A message steered while a subagent works waits for the parent's next call."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("t1", "task", args(description="look", prompt="look around")),)),
        Reply(text=("Report: ", "nothing."), delay_s=0.3),
        Reply(text="Nothing found; noted."),
    )
    pending = await agent.start_prompt(session, "investigate")
    await wait_until(lambda: len(server.requests) == 2, "the subagent's call")
    assert await steer(agent, session, "check tests too") == {"outcome": "injected"}
    turn = await pending.result()
    assert turn.stop_reason == "end_turn"
    subagent_call, parent_call = server.requests[1], server.requests[2]
    assert "check tests too" not in user_texts(subagent_call)
    assert user_texts(parent_call)[-1] == "check tests too"


async def test_a_turn_a_steered_message_started_that_fails_is_told_in_the_session(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """No request answers it with the error, so the session says it failed."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(HttpError(400, "bad request"))
    start = len(agent.messages)
    assert await steer(agent, session, "hello") == {"outcome": "startedNewTurn"}

    def said() -> str:
        chunks = of_kind(agent.updates(session, start), "agent_message_chunk")
        return "".join(c["content"]["text"] for c in chunks)

    await wait_until(lambda: "failed" in said(), "the failure told")
    assert said().startswith("The turn your steered message started failed: ")
