"""Context that never overflows: before a model call that would not fit
`ACP_FSM_CONTEXT_WINDOW`, or after the provider refuses one as too long, the agent summarises
the older part of the conversation with one model call and goes on with the summary and the
latest turns, tool calls with their results. `/compact` does it on demand. The scripted
provider holds every request to the real APIs' pairing rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, TypedDict

import pytest

from acp_fsm.compaction import NOTHING_TO_COMPACT, OMITTED, SUMMARY_HEADER, SUMMARY_REQUEST
from acp_fsm.devkit.provider import (
    Call,
    Hang,
    HttpError,
    Raw,
    RecordedRequest,
    Reply,
    ScriptedProvider,
)
from tests.e2e.support import (
    BARE,
    Agent,
    Launcher,
    args,
    history,
    is_openai,
    tool_call_ids,
    tool_results,
    user_texts,
)
from tests.harness import wait_until


class Limits(TypedDict):
    """A context window and an output cap (its keys are `Launcher.start`'s overrides)."""

    ACP_FSM_CONTEXT_WINDOW: str
    ACP_FSM_MAX_TOKENS: str


TIGHT: Final[Limits] = {"ACP_FSM_CONTEXT_WINDOW": "8000", "ACP_FSM_MAX_TOKENS": "1000"}
BIG = "x" * 10_500  # about 3,000 tokens
SUMMARY = "SUMMARY: the user had the files read; both hold x."


def is_summary_call(request: RecordedRequest) -> bool:
    texts = user_texts(request)
    return bool(texts) and SUMMARY_REQUEST in texts[-1]


def first_text(request: RecordedRequest) -> str:
    return user_texts(request)[0]


def notices(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"]["text"]
        for u in updates
        if u["sessionUpdate"] == "agent_message_chunk"
        and u["content"]["text"].startswith(("Context compacted", "Nothing to compact"))
    ]


def read(call_id: str, name: str) -> Reply:
    return Reply(calls=(Call(call_id, "read_file", args(path=name)),))


async def start(launch: Launcher, project: Path, provider: str, **env: str) -> tuple[Agent, str]:
    for name in ("a.txt", "b.txt"):
        (project / name).write_text(BIG)
    agent = await launch.start(provider, capabilities=BARE, **env)
    return agent, await agent.new_session(project)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_session_past_the_window_is_compacted_and_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    agent, session = await start(launch, project, provider, **TIGHT)
    server.script(
        read("a", "a.txt"),
        Reply(text="a holds x"),
        read("b", "b.txt"),
        Reply(text=SUMMARY),
        Reply(text="b holds x too"),
        Reply(text="still here"),
    )

    first = await agent.prompt(session, "read a.txt")
    second = await agent.prompt(session, "read b.txt")
    third = await agent.prompt(session, "and now?")

    assert [t.stop_reason for t in (first, second, third)] == ["end_turn"] * 3
    summary_call, after = server.requests[3], server.requests[4]
    assert [is_summary_call(r) for r in server.requests] == [
        False,
        False,
        False,
        True,
        False,
        False,
    ]
    # The summary call: the older part, the same tools, and no tool may be called.
    assert summary_call.body["tool_choice"] == (
        "none" if is_openai(summary_call) else {"type": "none"}
    )
    assert summary_call.body["tools"] == server.requests[2].body["tools"]
    assert "read a.txt" in user_texts(summary_call)[0] and tool_call_ids(summary_call) == ["a"]
    # Then the summary and the latest turn, the b call with its result, and nothing older.
    assert first_text(after).startswith(SUMMARY_HEADER) and SUMMARY in first_text(after)
    assert tool_call_ids(after) == ["b"] and "read a.txt" not in str(history(after))
    [notice] = notices(second.updates)
    # the cut is inside the second turn: its prompt is summarised, its call and result stay
    assert notice.startswith("Context compacted: 5 earlier messages")
    assert notices(first.updates) == notices(third.updates) == []
    assert first_text(server.requests[5]).startswith(SUMMARY_HEADER)
    assert len(agent.log("context_compacted")) == 1

    # A reload shows the notice where it was, and goes on from the compacted conversation.
    await launch.close(agent)
    other = await launch.start(provider, **TIGHT)
    await other.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    replayed = other.updates(session)
    assert notices(replayed) == notices(second.updates)
    server.script(Reply(text="yes"))
    assert (await other.prompt(session, "you remember?")).stop_reason == "end_turn"
    before_reload = history(server.requests[5])
    assert history(server.requests[-1])[: len(before_reload)] == before_reload
    assert user_texts(server.requests[-1])[-1] == "you remember?"


async def test_an_empty_stream_after_a_compaction_on_a_known_window_is_said_not_compacted(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """An empty answer to a compacted request far below a configured window is a server's
    hiccup, not a refusal for length: the turn says so, and is not summarised once more."""
    agent, session = await start(launch, project, "openai", **TIGHT, ACP_FSM_TOOLS="lean")
    server.script(
        read("a", "a.txt"),
        Reply(text="a holds x"),
        read("b", "b.txt"),
        Reply(text=SUMMARY),
        Raw(()),  # to a request of under half the usable window
    )
    await agent.prompt(session, "read a.txt")

    second = await agent.prompt(session, "read b.txt")

    assert second.error is not None and "empty" in second.error["message"]
    [compacted] = agent.log("context_compacted")  # once, to under half the usable window
    assert compacted["after"] < 3500 and len(server.requests) == 5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_request_the_provider_refuses_as_too_long_is_compacted_and_sent_again(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    """The configured window (the default) is far larger than the provider's: what the
    refusal says of the real one sizes the summary call and the rest of the session."""
    agent, session = await start(launch, project, provider, ACP_FSM_MAX_TOKENS="1000")
    (project / "c.txt").write_text(BIG)
    server.script(
        read("a", "a.txt"), read("b", "b.txt"), read("c", "c.txt"), Reply(text="all hold x")
    )
    assert (await agent.prompt(session, "read them")).stop_reason == "end_turn"
    server.context_window = 7000  # the conversation is now far over it
    server.script(Reply(text=SUMMARY), Reply(text="hello"), Reply(text="still fine"))

    turn = await agent.prompt(session, "hi")

    assert turn.stop_reason == "end_turn"
    refused, summary_call, sent_again = server.requests[4:7]
    assert [s.path for s in server.served][-2:] == [summary_call.path, sent_again.path]
    assert is_summary_call(summary_call) and not is_summary_call(refused)
    assert first_text(sent_again).startswith(SUMMARY_HEADER)
    assert user_texts(sent_again)[-1].endswith("hi")  # OpenAI: one user message, merged
    [exceeded] = agent.log("context_exceeded")
    assert exceeded["maximum"] == 7000
    assert notices(turn.updates)[0].startswith("Context compacted")
    assert (await agent.prompt(session, "and now?")).stop_reason == "end_turn"


async def test_one_huge_tool_result_is_cut_down_and_the_session_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await start(launch, project, "anthropic", **TIGHT)
    server.context_window = 8000
    (project / "huge.txt").write_text("start\n" + "h" * 40_000 + "\nend")
    server.script(
        read("h", "huge.txt"), Reply(text=SUMMARY), Reply(text="it is big"), Reply(text="yes")
    )

    first = await agent.prompt(session, "read huge.txt")
    second = await agent.prompt(session, "still there?")

    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert is_summary_call(server.requests[1])
    result, _ = tool_results(server.requests[2])["h"]
    assert result.startswith("start") and result.endswith("end")
    assert "characters cut here to fit the context window" in result
    assert len(server.requests) == 4  # nothing refused


async def test_compact_on_demand_sends_the_tools_the_transcript_names(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Anthropic refuses tool_use blocks in a request that declares no tools."""
    agent, session = await start(launch, project, "anthropic")
    server.script(read("a", "a.txt"), Reply(text="x"), Reply(text="two"), Reply(text=SUMMARY))
    await agent.prompt(session, "read a.txt")
    await agent.prompt(session, "second")

    turn = await agent.prompt(session, "/compact")

    assert turn.stop_reason == "end_turn"
    summary_call = server.requests[-1]
    assert is_summary_call(summary_call) and tool_call_ids(summary_call) == ["a"]
    assert summary_call.body["tools"] == server.requests[0].body["tools"]
    assert turn.response["result"]["_meta"]["acpFsm"]["modelCalls"] == 1


async def test_compact_on_demand_keeps_the_last_turn_and_is_not_a_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await start(launch, project, "anthropic")
    server.script(Reply(text="one"), Reply(text="two"), Reply(text=SUMMARY), Reply(text="three"))
    await agent.prompt(session, "first question")
    await agent.prompt(session, "second question")

    compact = await agent.prompt(session, "/compact keep the file names")

    assert compact.stop_reason == "end_turn"
    summary_call = server.requests[2]
    assert user_texts(summary_call)[0] == "first question"
    assert user_texts(summary_call)[-1].endswith("The user asks to focus on: keep the file names")
    assert "second question" not in str(history(summary_call))
    [notice] = notices(compact.updates)
    assert notice.startswith("Context compacted: 2 earlier messages")
    await agent.prompt(session, "third question")
    after = server.requests[3]
    assert user_texts(after) == [
        f"{SUMMARY_HEADER}\n\n{SUMMARY}",
        "second question",
        "third question",
    ]
    # announced right after the session/new answer
    answered = next(
        i for i, m in enumerate(agent.messages) if m.get("result", {}).get("sessionId") == session
    )
    announced = agent.messages[answered + 1]["params"]["update"]
    assert announced["sessionUpdate"] == "available_commands_update"
    assert [c["name"] for c in announced["availableCommands"]] == [
        "compact",
        "init",
        "review",
        "status",
        "mcp",
        "permissions",
        "rewind",
    ]

    await launch.close(agent)
    other = await launch.start("anthropic")
    await other.result(
        "session/resume", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    await other.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    replayed = other.updates(session)
    users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert users == [
        "first question",
        "second question",
        "/compact keep the file names",
        "third question",
    ]
    assert notices(replayed) == [notice]


async def test_compact_with_nothing_to_summarise_says_so(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await start(launch, project, "openai")
    server.script(Reply(text="one"))
    await agent.prompt(session, "only question")

    turn = await agent.prompt(session, "/compact")

    assert turn.stop_reason == "end_turn" and notices(turn.updates) == [NOTHING_TO_COMPACT]
    assert len(server.requests) == 1
    await launch.close(agent)
    other = await launch.start("openai")
    await other.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    assert notices(other.updates(session)) == [NOTHING_TO_COMPACT]  # the answer, shown again


async def test_a_cancel_during_compaction_keeps_the_conversation_whole(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await start(launch, project, "openai")
    server.script(
        Reply(text="one"), Reply(text="two"), Reply(text="SUMM", fault=Hang(1)), Reply(text="after")
    )
    await agent.prompt(session, "first")
    await agent.prompt(session, "second")

    running = await agent.start_prompt(session, "/compact")
    await wait_until(lambda: len(server.requests) == 3, "the summary call")
    await agent.cancel(session)
    turn = await running.result()

    assert turn.stop_reason == "cancelled" and notices(turn.updates) == []
    await agent.prompt(session, "third")
    assert user_texts(server.requests[-1]) == ["first", "second", "third"]


async def test_a_failed_summary_drops_the_older_part_and_the_session_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """No summary, no stop: the older turns are dropped (the last one kept), the user is told
    why, and the next prompts go on from there (before, every later prompt failed too)."""
    agent, session = await start(launch, project, "anthropic")
    server.script(
        Reply(text="one"), Reply(text="two"), HttpError(500, "summariser down"), Reply(text="after")
    )
    await agent.prompt(session, "first")
    await agent.prompt(session, "second")

    turn = await agent.prompt(session, "/compact")

    assert turn.stop_reason == "end_turn"
    [told] = notices(turn.updates)
    assert "dropped" in told and "without a summary" in told and "summariser down" in told
    assert (await agent.prompt(session, "third")).stop_reason == "end_turn"
    assert user_texts(server.requests[-1]) == [OMITTED, "second", "third"]
    await launch.close(agent)
    other = await launch.start("anthropic")
    await other.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    assert notices(other.updates(session)) == [told]  # stored, shown again
