"""Session titles: the first prompt's words, then the title one short model call makes after
the first completed turn (`acp_fsm.session.naming`), told after the answer, stored and listed;
a failing, hanging or rambling title call, and one cut short by the session's end."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from acp_fsm.devkit.provider import (
    ErrorEvent,
    Hang,
    HttpError,
    RecordedRequest,
    Reply,
    Scripted,
    ScriptedProvider,
)
from acp_fsm.titles import INSTRUCTIONS, REASONING_ROOM_TOKENS, TITLE_MAX_TOKENS
from tests.e2e.support import (
    API_KEY,
    Agent,
    Launcher,
    assert_restored,
    made_titles,
    of_kind,
    reasoning_effort,
    system_of,
    text_events,
    user_texts,
)
from tests.harness import MADE_TITLE, TITLE_MODEL, wait_until
from tests.timing import INTERRUPTED_S

PROVIDERS = ("openai", "anthropic")
PROMPT = "Please fix the flaky login test in tests/test_auth.py"
FIRST_WORDS = PROMPT  # the title until the model's is made (and when it is not)


async def first_turn(agent: Agent, server: ScriptedProvider, session: str) -> int:
    """The first turn, completed; the index of its answer in `agent.messages`."""
    server.script(Reply(text="Looking at the test now."))
    turn = await agent.prompt(session, PROMPT)
    assert turn.stop_reason == "end_turn"
    return turn.end


async def listed_titles(agent: Agent) -> list[str | None]:
    return [s.get("title") for s in (await agent.result("session/list", {}))["sessions"]]


def limit(request: RecordedRequest) -> int:
    body = request.body  # compatible servers' name and Anthropic's, or the Responses API's
    return int(body["max_tokens"] if "max_tokens" in body else body["max_output_tokens"])


def title_text(request: RecordedRequest) -> str:
    """The system prompt of a title call, and what it shows of the conversation."""
    return f"{system_of(request)}\n{' '.join(user_texts(request))}"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_title_model_names_the_session_once_after_its_first_answer(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path, provider: str
) -> None:
    server.lanes[TITLE_MODEL] = Reply(text="Flaky login test fix")
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    answered = await first_turn(agent, server, session)

    await wait_until(lambda: made_titles(agent, session, answered), "the model's title")
    [told] = made_titles(agent, session, answered)  # after the answer, never before it
    assert told["title"] == "Flaky login test fix" and told["updatedAt"].endswith("Z")
    before = of_kind(agent.updates(session, 0, answered, metadata=True), "session_info_update")
    assert [u["title"] for u in before] == [FIRST_WORDS]
    [call] = server.lane_requests
    assert call.body["model"] == TITLE_MODEL
    assert "tools" not in call.body and "tool_choice" not in call.body
    assert "thinking" not in call.body and reasoning_effort(call) is None
    assert limit(call) == TITLE_MAX_TOKENS
    shown = title_text(call)
    assert INSTRUCTIONS in shown and PROMPT in shown and "Looking at the test now." in shown
    assert await listed_titles(agent) == ["Flaky login test fix"]

    server.script(Reply(text="Fixed."))
    second = await agent.prompt(session, "and run it")
    assert second.stop_reason == "end_turn"
    assert len(server.lane_requests) == 1  # once a session
    usage = second.response["result"]["_meta"]["acpFsm"]
    assert usage["usage"]["inputTokens"] == 12  # the turn's own call
    assert usage["sessionUsage"]["inputTokens"] == 36  # two turns and the title call
    await launch.close(agent)

    # another process lists it, and makes no title of its own after a turn
    other = await launch.start(provider)
    assert await listed_titles(other) == ["Flaky login test fix"]
    load = {"sessionId": session, "cwd": str(project), "mcpServers": []}
    assert_restored(await other.result("session/load", load))
    server.script(Reply(text="Still green."))
    again = await other.prompt(session, "once more")
    assert again.stop_reason == "end_turn"
    assert len(server.lane_requests) == 1
    assert made_titles(other, session, 0) == []


@pytest.mark.parametrize(
    ("provider", "model", "room"),
    [
        ("openai", "gpt-5", TITLE_MAX_TOKENS + REASONING_ROOM_TOKENS),  # it reasons, a little
        ("openai", "qwen2.5-coder:7b", TITLE_MAX_TOKENS),
        ("anthropic", "claude-sonnet-4-5", TITLE_MAX_TOKENS),  # no thinking for a title
    ],
)
async def test_a_title_model_that_is_the_session_s_own_makes_it(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str, model: str, room: int
) -> None:
    """The title call of each kind of model. On the providers' own APIs the session's model
    makes it unless ACP_FSM_TITLE_MODEL names another (tests/test_titles.py); on a compatible
    server such as the scripted one, only when that names one."""
    agent = await launch.start(provider, ACP_FSM_TITLE_MODEL=model, ACP_FSM_MODEL=model)
    session = await agent.new_session(project)
    server.script(Reply(text="On it."), Reply(text="Login test repair"))
    turn = await agent.prompt(session, PROMPT)
    assert turn.stop_reason == "end_turn"

    await wait_until(lambda: made_titles(agent, session, turn.end), "the model's title")
    assert made_titles(agent, session, turn.end)[0]["title"] == "Login test repair"
    answer, call = server.requests
    assert call.body["model"] == answer.body["model"] == model
    assert "tools" in answer.body and "tools" not in call.body
    assert limit(call) == room
    assert reasoning_effort(call) == ("low" if model == "gpt-5" else None)
    assert "thinking" not in call.body
    assert server.lane_requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_on_a_compatible_server_the_first_prompt_s_words_are_the_title_without_a_call(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    """Without ACP_FSM_TITLE_MODEL, on a server other than the providers' own APIs (the
    scripted one is such): a title call evicts a single-slot server's prompt cache, and
    llama-cpp-python read 3,959 tokens again on the next turn (59 s against 3.4 s)."""
    agent = await launch.start(provider, ACP_FSM_TITLE_MODEL=None)
    session = await agent.new_session(project)
    server.script(Reply(text="On it."), Reply(text="Done."))

    first = await agent.prompt(session, f"  {PROMPT}  \nTraceback (most recent call last):\n")
    second = await agent.prompt(session, "and run it")

    assert first.stop_reason == second.stop_reason == "end_turn"
    assert len(server.requests) == 2 and all("tools" in r.body for r in server.requests)
    assert server.lane_requests == [] and server.remaining == 0
    told = of_kind(agent.updates(session, 0, metadata=True), "session_info_update")
    before = of_kind(agent.updates(session, 0, first.end, metadata=True), "session_info_update")
    assert [u["title"] for u in told] == [u["title"] for u in before] == [PROMPT]  # first line
    assert await listed_titles(agent) == [PROMPT]


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(HttpError(500, "title server down"), id="http-500"),
        pytest.param(Reply(text="Half a", fault=ErrorEvent(1)), id="error-event"),
        pytest.param(Reply(text=""), id="empty"),
        pytest.param(Reply(text='\n  **  \n""\n'), id="no-title-in-it"),
        pytest.param(Reply(text="<think>The user wants a title for"), id="thinking-only"),
    ],
)
async def test_a_failed_title_call_keeps_the_first_prompt_s_words(
    launch: Launcher, server: ScriptedProvider, project: Path, failure: Scripted
) -> None:
    server.lanes[TITLE_MODEL] = failure
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    answered = await first_turn(agent, server, session)

    await wait_until(
        lambda: agent.log("title_call_failed") or agent.log("title_unusable"), "the title call"
    )
    assert len(server.lane_requests) == 1
    assert made_titles(agent, session, answered) == []
    assert await listed_titles(agent) == [FIRST_WORDS]
    server.script(Reply(text="Next."))
    assert (await agent.prompt(session, "go on")).stop_reason == "end_turn"
    assert len(server.lane_requests) == 1  # tried once in this process
    assert made_titles(agent, session, answered) == []


@pytest.mark.parametrize("ending", ["session/close", "exit"])
async def test_a_hanging_title_call_delays_nothing_and_ends_with_the_session(
    launch: Launcher, server: ScriptedProvider, project: Path, ending: str
) -> None:
    server.lanes[TITLE_MODEL] = Reply(text="Never told", fault=Hang(0))
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    answered = await first_turn(agent, server, session)
    await wait_until(lambda: server.lane_requests, "the title call")

    server.script(Reply(text="Meanwhile."))
    meanwhile = await agent.prompt(session, "and meanwhile?")  # beside the hanging call
    assert meanwhile.stop_reason == "end_turn"
    assert await listed_titles(agent) == [FIRST_WORDS]
    assert server.disconnects == []

    started = time.monotonic()
    if ending == "session/close":
        assert await agent.result("session/close", {"sessionId": session}) == {}
    else:
        await launch.close(agent)  # exit code 0, clean output
    assert time.monotonic() - started < INTERRUPTED_S
    await wait_until(lambda: server.disconnects, "the title call's connection closed")
    assert [d.path for d in server.disconnects] == ["/v1/messages"]
    assert made_titles(agent, session, answered) == []
    if ending == "session/close":
        assert [e["reason"] for e in agent.log("title_call_cancelled")] == ["session/close"]


@pytest.mark.parametrize("ending", ["cancelled", "failed"])
async def test_only_a_completed_turn_is_followed_by_the_title_call(
    launch: Launcher, server: ScriptedProvider, project: Path, ending: str
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    if ending == "cancelled":
        server.script(Reply(text=("partial ", "answer"), fault=Hang(text_events(2))))
        pending = await agent.start_prompt(session, PROMPT)
        await wait_until(lambda: agent.updates(session, pending.start), "the first chunk")
        await agent.cancel(session)
        turn = await pending.result()
        assert turn.stop_reason == "cancelled"
    else:
        server.script(HttpError(400, "bad request"))
        turn = await agent.prompt(session, PROMPT)
        assert "error" in turn.response
    server.script(Reply(text="Done this time."))
    done = await agent.prompt(session, "try again")
    assert done.stop_reason == "end_turn"

    await wait_until(lambda: made_titles(agent, session, done.end), "the model's title")
    [call] = server.lane_requests  # none after the first turn: it did not complete
    assert call.time > server.requests[-1].time
    shown = title_text(call)
    assert PROMPT in shown  # the first prompt, which the title is made of
    assert made_titles(agent, session, turn.end)[0]["title"] == MADE_TITLE


@pytest.mark.parametrize(
    ("typed", "about", "expanded"),
    [
        ("/init", "Study the project and write AGENTS.md", "Study this project, then write"),
        ("/review main..HEAD", "Review the uncommitted changes", "The user asked for a review"),
        ("/ship v2", "Ship a release to the store", "Release v2: bump, tag and upload"),
    ],
)
async def test_a_command_is_named_by_what_the_user_typed(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    typed: str,
    about: str,
    expanded: str,
) -> None:
    """The model read the command's expansion; the title is made of what the user typed, with
    what the command does (a title model shown "/init" alone has little to go by)."""
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "ship.md").write_text(
        "---\ndescription: Ship a release to the store\n---\nRelease $1: bump, tag and upload\n"
    )
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(Reply(text="On it."))

    turn = await agent.prompt(session, typed)

    assert turn.stop_reason == "end_turn"
    assert user_texts(server.requests[0])[0].startswith(expanded)  # the model's prompt
    await wait_until(lambda: made_titles(agent, session, turn.end), "the model's title")
    first = of_kind(agent.updates(session, 0, turn.end, metadata=True), "session_info_update")
    assert [u["title"] for u in first] == [typed]
    [call] = server.lane_requests
    shown = " ".join(user_texts(call))
    assert shown.startswith(f"The user wrote:\n{typed}\n(the command /{typed.split()[0][1:]}: ")
    assert about in shown and expanded not in shown and "On it." in shown


@pytest.mark.parametrize(
    ("answer", "title"),
    [
        ('Title: "Fix flaky login test"', "Fix flaky login test"),
        ("Sure! Here's a title:\n\n# **Login Bug Fix.**\n\nI hope this helps", "Login Bug Fix"),
        (
            "This conversation is about a user who wants to fix a flaky login test and more",
            "This conversation is about a user who wants to fix",  # ten words at most
        ),
        ("<think>Short, so: login.</think>\n`Flaky login test`", "Flaky login test"),
        (f"Key {API_KEY} leak", "Key [redacted] leak"),
        ("- " + "Word" * 40, "Word" * 19 + "Wor…"),  # 80 characters at most
    ],
)
async def test_what_is_kept_of_a_small_model_s_answer(
    launch: Launcher, server: ScriptedProvider, project: Path, answer: str, title: str
) -> None:
    server.lanes[TITLE_MODEL] = Reply(text=answer)
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    answered = await first_turn(agent, server, session)

    await wait_until(lambda: made_titles(agent, session, answered), "the model's title")
    assert made_titles(agent, session, answered)[0]["title"] == title
    assert await listed_titles(agent) == [title]


# ------------------------------------------------------------------ titles the user sets


async def test_a_title_the_user_sets_is_stored_told_listed_and_never_replaced(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """`session/set_title` (unstable ACP): normalised, stored, told with
    `session_info_update`, listed; no title made after it replaces it, in any process."""
    server.lanes[TITLE_MODEL] = Reply(text="Flaky login test fix")
    agent = await launch.start("openai")
    [init] = [m["result"] for m in agent.messages if "agentCapabilities" in m.get("result", {})]
    assert init["agentCapabilities"]["sessionCapabilities"]["title"] == {}
    session = await agent.new_session(project)
    start = len(agent.messages)

    result = await agent.result(
        "session/set_title", {"sessionId": session, "title": "  Login\n  bug   hunt "}
    )

    assert result == {"title": "Login bug hunt"}
    [told] = of_kind(agent.updates(session, start, metadata=True), "session_info_update")
    assert told["title"] == "Login bug hunt"
    answered = await first_turn(agent, server, session)
    assert await listed_titles(agent) == ["Login bug hunt"]  # not the first prompt's words
    assert made_titles(agent, session, answered) == []
    assert server.lane_requests == []  # no title call: the user named it
    await launch.close(agent)

    other = await launch.start("openai")
    load = {"sessionId": session, "cwd": str(project), "mcpServers": []}
    assert_restored(await other.result("session/load", load))
    server.script(Reply(text="Still green."))
    assert (await other.prompt(session, "once more")).stop_reason == "end_turn"
    assert await listed_titles(other) == ["Login bug hunt"]
    assert server.lane_requests == []


async def test_a_session_open_elsewhere_or_nowhere_can_be_retitled(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Any stored session can be retitled, open on this connection or not; the title
    replaces a model's."""
    server.lanes[TITLE_MODEL] = Reply(text="Flaky login test fix")
    first = await launch.start("openai")
    session = await first.new_session(project)
    answered = await first_turn(first, server, session)
    await wait_until(lambda: made_titles(first, session, answered), "the model's title")
    await launch.close(first)

    second = await launch.start("openai")
    result = await second.result("session/set_title", {"sessionId": session, "title": "Mine"})
    assert result == {"title": "Mine"}
    assert await listed_titles(second) == ["Mine"]
    assert second.updates(session, metadata=True) == []  # not open here: nothing to tell


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"sessionId": "sess_nope", "title": "x"}, -32002),
        ({"sessionId": None, "title": " \n\t "}, -32602),
    ],
)
async def test_an_unknown_session_or_an_empty_title_is_refused(
    launch: Launcher, project: Path, params: dict[str, object], code: int
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    sent = {**params, "sessionId": params["sessionId"] or session}
    response = await agent.request("session/set_title", sent)
    assert response["error"]["code"] == code, response
    assert await listed_titles(agent) == []


async def test_a_title_set_in_another_process_is_not_contradicted_by_a_first_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Open in process A, retitled in process B: A's first prompt tells no title of its
    own (neither its words nor a model's) and lists the user's."""
    server.lanes[TITLE_MODEL] = Reply(text="Flaky login test fix")
    first = await launch.start("openai")
    session = await first.new_session(project)
    second = await launch.start("openai")
    await second.result("session/set_title", {"sessionId": session, "title": "User Chosen"})

    answered = await first_turn(first, server, session)
    told = of_kind(first.updates(session, 0, answered, metadata=True), "session_info_update")
    assert [u["title"] for u in told] == []
    assert await listed_titles(first) == ["User Chosen"]
    assert made_titles(first, session, answered) == []
    assert server.lane_requests == []
