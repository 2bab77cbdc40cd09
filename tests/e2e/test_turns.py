"""Plain turns on each provider, stop reasons, the per-prompt request cap, provider failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_fsm.devkit.provider import Call, Drop, ErrorEvent, HttpError, Reply, ScriptedProvider
from acp_fsm.providers.types import StopReason
from tests.e2e.support import (
    API_KEY,
    Launcher,
    args,
    history,
    made_titles,
    message_chunks,
    text_events,
    thought_chunks,
    tool_results,
    user_texts,
)
from tests.harness import MADE_TITLE, wait_until

PROVIDERS = ("openai", "anthropic")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_plain_turn_streams_thinking_then_text(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    server.script(
        Reply(thinking=("Let me ", "think."), signature="sig-e2e-1", text=("Hello", ", ", "world"))
    )

    turn = await agent.prompt(session, "hi there")

    assert turn.stop_reason == "end_turn"
    assert turn.updates == [
        *thought_chunks("Let me ", "think."),
        *message_chunks("Hello", ", ", "world"),
    ]
    await agent.assert_quiet_after(turn, session)
    assert user_texts(server.requests[0]) == ["hi there"]
    assert len(history(server.requests[0])) == 1

    server.script(Reply(text="again"))
    second = await agent.prompt(session, "more")
    assert second.stop_reason == "end_turn"
    assert second.updates == message_chunks("again")
    echoed = history(server.requests[1])[1]
    if provider == "anthropic":
        # the thinking block goes back unmodified, with its signature, before the text
        assert echoed == {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Let me think.", "signature": "sig-e2e-1"},
                {"type": "text", "text": "Hello, world"},
            ],
        }
    else:
        assert echoed["role"] == "assistant" and echoed["content"] == "Hello, world"
    assert user_texts(server.requests[1]) == ["hi there", "more"]


async def test_thinking_before_a_tool_call_goes_back_with_its_signature(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(
        Reply(
            thinking="I need the file.",
            signature="sig-tool",
            calls=(Call("r1", "read_file", args(path="a.txt")),),
        ),
        Reply(text="It says A."),
    )

    turn = await agent.prompt(session, "what is in a.txt?")

    assert turn.stop_reason == "end_turn"
    assert turn.updates[0] == thought_chunks("I need the file.")[0]
    assert history(server.requests[1])[1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I need the file.", "signature": "sig-tool"},
                {"type": "tool_use", "id": "r1", "name": "read_file", "input": {"path": "a.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "r1", "content": "A\n", "is_error": False}
            ],
        },
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_lone_surrogate_from_the_model_reaches_the_editor_as_valid_utf8(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    """A model's token that cuts a character in two comes as a lone `\\ud83d` escape, which
    strict JSON parsers (Zed's) refuse: the editor gets its bytes as `\\xNN`, and the model
    gets its own text back exactly."""
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    server.script(Reply(text=("half ", "\ud83d", " a face")), Reply(text="ok"))

    turn = await agent.prompt(session, "hi")
    await agent.prompt(session, "again")

    assert turn.updates == message_chunks("half ", "\\xed\\xa0\\xbd", " a face")
    agent.assert_strict_json()
    echoed = history(server.requests[1])[1]["content"]
    parts = [echoed] if isinstance(echoed, str) else [part["text"] for part in echoed]
    assert parts == ["half \ud83d a face"]


async def test_prompt_content_reaches_the_model(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(Reply(text="seen"))
    pixel = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
        "AAAABJRU5ErkJggg=="
    )
    prompt = [
        {"type": "text", "text": "Look:"},
        {"type": "resource_link", "uri": "file:///x/y.py", "name": "y.py"},
        {"type": "resource", "resource": {"uri": "file:///x/z.py", "text": "z = 1"}},
        {"type": "image", "mimeType": "image/png", "data": pixel},
    ]

    response = await agent.request("session/prompt", {"sessionId": session, "prompt": prompt})

    assert response["result"]["stopReason"] == "end_turn"
    assert response["result"]["_meta"]["acpFsm"]["statePath"] == ["idle", "streaming", "done"]
    content = history(server.requests[0])[0]["content"]
    assert content[0] == {"type": "text", "text": "Look:"}
    assert "file:///x/y.py" in content[1]["text"]
    assert "file:///x/z.py" in content[2]["text"] and "z = 1" in content[2]["text"]
    assert content[3]["type"] == "image" and content[3]["source"]["data"] == pixel


@pytest.mark.parametrize(
    ("stop", "expected"), [(StopReason.MAX_TOKENS, "max_tokens"), (StopReason.REFUSAL, "refusal")]
)
async def test_model_stop_reasons(
    launch: Launcher, server: ScriptedProvider, project: Path, stop: StopReason, expected: str
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(Reply(text="cut sh", stop=stop), Reply(text="fine"))
    turn = await agent.prompt(session, "go")
    assert turn.stop_reason == expected
    assert turn.updates == message_chunks("cut sh")
    assert (await agent.prompt(session, "next")).stop_reason == "end_turn"


async def test_max_turn_requests_caps_model_calls(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "loop.txt").write_text("again\n")
    agent = await launch.start("openai", ACP_FSM_MAX_TURN_REQUESTS="2")
    session = await agent.new_session(project)
    server.script(
        *(Reply(calls=(Call(f"call_{n}", "read_file", args(path="loop.txt")),)) for n in range(2))
    )

    turn = await agent.prompt(session, "loop forever")

    assert turn.stop_reason == "max_turn_requests"
    assert len(server.requests) == 2
    statuses = [
        (u["toolCallId"], u["status"])
        for u in turn.updates
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]
    assert statuses == [
        ("call_0", "pending"),
        ("call_0", "in_progress"),
        ("call_0", "completed"),
        ("call_1", "pending"),
        ("call_1", "in_progress"),
        ("call_1", "completed"),
    ]
    server.script(Reply(text="stopped"))
    assert (await agent.prompt(session, "ok")).stop_reason == "end_turn"
    assert tool_results(server.requests[-1]) == {
        "call_0": ("again\n", None),
        "call_1": ("again\n", None),
    }


# --------------------------------------------------------------------------- provider failures


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_unauthorized_is_a_json_rpc_error_without_the_key(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    server.api_key = "sk-the-right-key-0000"
    # a model configured: the listing, refused too, is not awaited (and said) before the session
    agent = await launch.start(provider, ACP_FSM_MODEL="m")
    session = await agent.new_session(project)

    failed = await agent.prompt(session, "first")

    error = failed.error
    expected = (
        "openai HTTP 401 invalid_api_key: Incorrect API key provided"
        if provider == "openai"
        else "anthropic HTTP 401 authentication_error: invalid"
    )
    assert error["message"].startswith(expected), error
    assert error["data"]["status"] == 401
    assert failed.updates == []
    server.api_key = API_KEY
    server.script(Reply(text="welcome back"))
    turn = await agent.prompt(session, "second")
    assert turn.stop_reason == "end_turn"
    assert turn.updates == message_chunks("welcome back")
    # Both prompts, in one user message on Chat Completions (chat templates want turns to
    # alternate), two text blocks of one on Anthropic.
    expected_texts = ["first\n\nsecond"] if provider == "openai" else ["first", "second"]
    assert user_texts(server.requests[-1]) == expected_texts
    await agent.proc.close()
    assert API_KEY.encode() not in b"".join(agent.proc.raw_lines)
    assert API_KEY.encode() not in agent.proc.stderr


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_rate_limit_is_retried(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    agent = await launch.start(provider, ACP_FSM_MAX_RETRIES="2")
    session = await agent.new_session(project)
    server.script(
        HttpError(429, "slow down", headers={"retry-after-ms": "20"}), Reply(text=("made ", "it"))
    )
    turn = await agent.prompt(session, "hello")
    assert turn.stop_reason == "end_turn"
    assert turn.updates == message_chunks("made ", "it")
    assert [r.body for r in server.requests[:1]] == [server.requests[1].body]
    assert len(server.requests) == 2


# How each failure reads, per provider; the stream faults cut after "Part" (OpenAI: `text_events`;
# Anthropic: message_start, block start, ping, "Part").
FAILURES: dict[str, tuple[dict[str, Drop | ErrorEvent], str]] = {
    "drop": (
        {"openai": Drop(text_events(1)), "anthropic": Drop(4)},
        "stream connection_error: connection failed",
    ),
    "error_event": (
        {"openai": ErrorEvent(text_events(1)), "anthropic": ErrorEvent(4)},
        "stream {type}: Overloaded",
    ),
}


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_a_broken_stream_fails_the_turn_and_the_next_prompt_works(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str, failure: str
) -> None:
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    faults, wording = FAILURES[failure]
    server.script(Reply(text=("Part", "ial", " answer"), fault=faults[provider]))

    failed = await agent.prompt(session, "first")

    error_type = "server_error" if provider == "openai" else "overloaded_error"
    assert failed.error["message"].startswith(f"{provider} {wording.format(type=error_type)}")
    assert failed.updates == message_chunks("Part")
    await agent.assert_quiet_after(failed, session)
    server.script(Reply(text="recovered"))
    turn = await agent.prompt(session, "second")
    assert turn.stop_reason == "end_turn"
    assert turn.updates == message_chunks("recovered")
    assert user_texts(server.requests[-1]) == ["first", "second"]


async def test_a_provider_error_after_tools_keeps_their_results(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.txt").write_text("A\n")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("r1", "read_file", args(path="a.txt")),)),
        HttpError(500, "upstream exploded"),
    )

    failed = await agent.prompt(session, "read")

    assert failed.error["message"] == "anthropic HTTP 500 api_error: upstream exploded"
    assert failed.error["data"]["status"] == 500
    assert [u["status"] for u in failed.updates] == ["pending", "in_progress", "completed"]
    server.script(Reply(text="fine now"))
    assert (await agent.prompt(session, "retry")).stop_reason == "end_turn"
    assert tool_results(server.requests[-1]) == {"r1": ("A\n", False)}


async def test_no_api_key_for_the_real_endpoint_names_the_variables(
    launch: Launcher, project: Path
) -> None:
    agent = await launch.start(
        "openai",
        OPENAI_API_KEY=None,
        ANTHROPIC_API_KEY=None,
        OPENAI_BASE_URL=None,
        ANTHROPIC_BASE_URL=None,
    )
    response = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
    error = response["error"]
    assert error["code"] == -32000  # ACP's auth_required, before anything is typed
    assert "OPENAI_API_KEY" in error["message"] and "ANTHROPIC_API_KEY" in error["message"]
    assert "acp-fsm login" in error["message"]
    assert launch.server.requests == []


async def test_title_and_usage_are_reported_before_the_answer(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="one"), Reply(text="two"))
    first = await agent.request(
        "session/prompt",
        {
            "sessionId": session,
            "prompt": [{"type": "text", "text": "  Summarise   the project  \n in a line"}],
        },
    )
    end = agent.messages.index(first)
    meta = [
        u
        for u in agent.updates(session, 0, end, metadata=True)
        if u["sessionUpdate"] in ("session_info_update", "usage_update")
    ]
    assert meta[0]["sessionUpdate"] == "session_info_update"
    assert meta[0]["title"] == "Summarise the project"
    assert meta[1].pop("cost")["currency"] == "USD"  # gpt-5's price: tests/e2e/test_cost.py
    assert meta[1] == {"sessionUpdate": "usage_update", "used": 19, "size": 128000}
    await wait_until(lambda: made_titles(agent, session, end), "the model's title")
    second = await agent.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}
    )
    kinds = [
        u["sessionUpdate"]
        for u in agent.updates(session, end + 1, agent.messages.index(second), metadata=True)
    ]
    # the model's title follows the first answer, once; the second turn says none
    assert [u["title"] for u in made_titles(agent, session, end)] == [MADE_TITLE]
    assert kinds.count("usage_update") == 1
