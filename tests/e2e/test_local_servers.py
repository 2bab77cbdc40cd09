"""The agent on local OpenAI-compatible servers, each answering as the real one does
(`acp_fsm.devkit.provider.local`, recorded answers in tests/recorded): tool turns that go on
turn after turn, errors that read as one line, a context that fills up without ending the
session, the server's own model and window."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.compaction import SUMMARY_REQUEST
from acp_fsm.devkit.provider import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    LM_STUDIO,
    OLLAMA,
    VLLM,
    Call,
    HttpError,
    LocalServer,
    Raw,
    RecordedRequest,
    Reply,
    Scripted,
    ScriptedProvider,
    estimate_tokens,
)
from acp_fsm.tools import ESSENTIAL
from tests.e2e.support import Launcher, args, history, of_kind, user_texts

RECORDED = Path(__file__).parents[1] / "recorded" / "llama-cpp-python"
MODEL = "/models/gemma-3-270m-q4_k_m.gguf"  # llama-cpp-python lists the model's path
PAGE = "".join(f"line {i}: the quick brown fox jumps over the lazy dog\n" for i in range(60))


@contextlib.asynccontextmanager
async def serving(
    local: LocalServer,
    tmp_path: Path,
    *replies: Scripted,
    window: int | None = None,
    models: tuple[str, ...] = (MODEL,),
    chars_per_token: float = 4.0,
) -> AsyncIterator[tuple[ScriptedProvider, Launcher]]:
    """A scripted `local` server with context `window` (its own setting) and its tokenizer's
    `chars_per_token`, and a launcher of agents pointed at it (no key: local servers need
    none), on Chat Completions in every run (the local servers are scripted on it)."""
    async with ScriptedProvider(
        *replies,
        local=local,
        context_window=window,
        models=models,
        chars_per_token=chars_per_token,
    ) as server:
        launcher = Launcher(server, tmp_path / "home")
        launcher.defaults["ACP_FSM_OPENAI_API"] = "chat"
        try:
            yield server, launcher
        finally:
            await launcher.close_all()


def summary_call(request: RecordedRequest) -> bool:
    texts = user_texts(request)
    return bool(texts) and SUMMARY_REQUEST in texts[-1]


def notices(updates: list[dict[str, Any]]) -> list[str]:
    return [
        u["content"]["text"]
        for u in of_kind(updates, "agent_message_chunk")
        if u["content"]["text"].startswith(("Context compacted", "The model"))
    ]


def reader(request: RecordedRequest) -> Reply:
    """A model that reads page.txt once per prompt, then answers; and summarises when asked."""
    if summary_call(request):
        return Reply(text="SUMMARY: the user asked for page.txt several times.")
    last = history(request)[-1]
    content = last.get("content")
    if last.get("role") == "tool" or (  # a tool's result, in either format
        isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    ):
        return Reply(text="I read it.")
    return Reply(calls=(Call(f"call_{len(history(request))}", "read_file", args(path="page.txt")),))


async def test_llama_cpp_python_tool_turns_go_on_turn_after_turn(tmp_path: Path) -> None:
    """Each model call after a tool call carries the assistant message with `content: ""`
    (llama-cpp-python answers `null` with a 500: no turn could go on after a tool call)."""
    recorded = (RECORDED / "tool_call.sse").read_bytes()
    async with serving(LLAMA_CPP_PYTHON, tmp_path) as (server, launch):
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "file_name.txt,").write_text("the data\n")  # as the model asked
        agent = await launch.start("openai", OPENAI_API_KEY=None)
        session = await agent.new_session(tmp_path)
        for i, prompt in enumerate(("read it", "again", "once more")):
            calls = recorded.replace(b"cmpl-8b386640", f"cmpl-{i:08d}".encode())  # its ids
            server.script(Raw((calls,)), Reply(text=f"done: {prompt}"))
            turn = await agent.prompt(session, prompt)
            assert turn.stop_reason == "end_turn"
            [done] = [
                u
                for u in of_kind(turn.updates, "tool_call_update")
                if u.get("status") == "completed"
            ]
            assert "the data" in done["content"][0]["content"]["text"]
    assistants = [m for m in history(server.requests[-1]) if m["role"] == "assistant"]
    assert [m["content"] for m in assistants if m.get("tool_calls")] == ["", "", ""]
    assert len(server.requests) == 6 and all(r.body["model"] == MODEL for r in server.requests)


async def test_a_long_error_body_reads_as_one_line_with_the_details_in_data(tmp_path: Path) -> None:
    recorded = (RECORDED / "assistant_content_null.500.json").read_bytes()
    async with serving(
        LLAMA_CPP_PYTHON, tmp_path, HttpError(500, body=recorded), Reply(text="fine")
    ) as (_, launch):
        agent = await launch.start("openai", OPENAI_API_KEY=None, ACP_FSM_MAX_RETRIES="0")
        session = await agent.new_session(tmp_path)
        failed = await agent.prompt(session, "hi")
        assert (await agent.prompt(session, "again")).stop_reason == "end_turn"
    message, data = failed.error["message"], failed.error["data"]
    assert message.startswith("openai HTTP 500 internal_server_error: 7 validation errors:")
    assert len(message) < 300 and "\n" not in message
    assert "Input should be a valid string" in data["details"] and data["status"] == 500


@pytest.mark.parametrize(
    ("window", "page"), [(2600, PAGE[:1500]), (4500, PAGE * 2), (6000, PAGE * 2)]
)
async def test_an_empty_stream_over_the_window_is_compacted_and_sent_again(
    tmp_path: Path, window: int, page: str
) -> None:
    """llama-cpp-python answers a request over its context with `200 OK` and an empty body.
    The agent (its window only assumed) takes it for that, compacts once and sends the
    request again, and the session goes on (before: three tries, then every prompt failed);
    the window it guesses so is lowered by each later empty stream."""
    async with serving(LLAMA_CPP_PYTHON, tmp_path, window=window) as (server, launch):
        server.fallback = reader
        (tmp_path / "page.txt").write_text(page)
        agent = await launch.start("openai", OPENAI_API_KEY=None)
        session = await agent.new_session(tmp_path)
        turns = [await agent.prompt(session, f"read page.txt ({i})") for i in range(10)]
    assert [t.stop_reason for t in turns] == ["end_turn"] * 10
    empty = [i for i, s in enumerate(server.served) if s.reply == Raw(())]
    assert empty, "the window was never passed: the test proves nothing"
    after = server.requests[empty[0] + 1]  # the summary call, or (a window too small for
    assert estimate_tokens(after.body) < window  # a summary) the request cut down
    told = [n for t in turns for n in notices(t.updates)]
    assert any(n.startswith("Context compacted") for n in told)
    assert estimate_tokens(server.requests[-1].body) < window


async def test_an_empty_stream_that_compacting_cannot_fix_says_what_to_do(tmp_path: Path) -> None:
    """The system prompt and the tools alone pass llama-cpp-python's default window."""
    async with serving(LLAMA_CPP_PYTHON, tmp_path, window=800) as (server, launch):
        agent = await launch.start("openai", OPENAI_API_KEY=None)
        session = await agent.new_session(tmp_path)
        failed = await agent.prompt(session, "hi")
        # compacted (nothing to summarise yet) and sent once more, never the same thrice
        assert [s.reply for s in server.served] == [Raw(())] * 2
        again = await agent.prompt(session, "hi again")
        assert len(server.served) <= 4
    for turn in (failed, again):
        message = turn.error["message"]
        assert "empty_stream" in message and "llama-cpp-python" in message
        assert "/compact" in message and "ACP_FSM_CONTEXT_WINDOW" in message


@pytest.mark.parametrize("local", [LLAMA_CPP_PYTHON, LLAMA_CPP])
async def test_an_empty_answer_is_said_and_the_roles_still_alternate(
    tmp_path: Path, local: LocalServer
) -> None:
    """A role chunk and a stop (recorded from llama-cpp-python): the user is told, and the
    next request holds no two user messages in a row (llama.cpp's strict templates answer
    500 "Conversation roles must alternate")."""
    empty = Raw(((RECORDED / "empty_answer.sse").read_bytes(),))
    async with serving(local, tmp_path, empty, Reply(text="hello")) as (server, launch):
        agent = await launch.start("openai", OPENAI_API_KEY=None)
        session = await agent.new_session(tmp_path)
        first = await agent.prompt(session, "hi")
        second = await agent.prompt(session, "are you there?")
    assert first.stop_reason == second.stop_reason == "end_turn"
    assert notices(first.updates) == [
        "The model returned an empty answer (no text and no tool call)."
    ]
    roles = [m["role"] for m in history(server.requests[-1])]
    assert not any(a == b for a, b in pairwise(roles)), roles
    assert user_texts(server.requests[-1]) == ["hi\n\nare you there?"]


async def test_a_window_too_small_for_the_tools_costs_no_summary_call_per_prompt(
    tmp_path: Path,
) -> None:
    """ACP_FSM_CONTEXT_WINDOW set to llama-cpp-python's small context: the system prompt
    and the tools alone pass the threshold, so older turns are dropped without a model call
    (before: a summary call at every prompt, which could never make it fit)."""
    async with serving(LLAMA_CPP_PYTHON, tmp_path, window=2048) as (server, launch):
        server.fallback = Reply(text=PAGE[:2000])  # long answers: older turns to drop
        agent = await launch.start("openai", OPENAI_API_KEY=None, ACP_FSM_CONTEXT_WINDOW="2048")
        session = await agent.new_session(tmp_path)
        turns = [await agent.prompt(session, f"question {i}") for i in range(4)]
    assert [t.stop_reason for t in turns] == ["end_turn"] * 4
    assert not any(summary_call(r) for r in server.requests)
    assert len(server.requests) == 4
    dropped = [n for t in turns[1:] for n in notices(t.updates)]
    assert len(dropped) == 3 and all("system prompt and the tools alone" in n for n in dropped)


async def test_without_a_model_set_the_first_session_answers_with_the_server_s_models(
    tmp_path: Path,
) -> None:
    """The first session's picker showed `gpt-5` until the server's list came, and Ollama
    refuses a model it does not have: `session/new` waits for the list."""
    models = ("qwen2.5-coder:7b", "llama3.2:1b")
    async with serving(OLLAMA, tmp_path, Reply(text="hi"), models=models) as (server, launch):
        agent = await launch.start("openai", OPENAI_API_KEY=None)
        result = await agent.result("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = result["sessionId"]
        turn = await agent.prompt(session, "hello")
        options = agent.updates(session, metadata=True)
    assert turn.stop_reason == "end_turn"
    assert server.requests[-1].body["model"] == "qwen2.5-coder:7b"
    [model] = [o for o in result["configOptions"] if o["id"] == "model"]
    assert model["currentValue"] == "qwen2.5-coder:7b"
    assert [v["value"] for v in model["options"]] == list(models)
    assert of_kind(options, "config_option_update") == []  # nothing to correct
    assert not [t for t in user_texts(server.requests[-1]) if "did not list" in t]


async def test_a_server_that_does_not_list_its_models_is_said_to_at_the_first_prompt(
    tmp_path: Path,
) -> None:
    """No model configured and the listing fails: the session goes to the provider's default
    name, and the user is told why and what to set (once a session)."""
    async with serving(OLLAMA, tmp_path, models=("qwen2.5-coder:7b",)) as (server, launch):
        server.models_error = HttpError(500, "the listing broke")
        agent = await launch.start("openai", OPENAI_API_KEY=None)
        result = await agent.result("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = result["sessionId"]
        first = await agent.prompt(session, "hello")
        second = await agent.prompt(session, "again")
        base = server.openai_base_url
    [model] = [o for o in result["configOptions"] if o["id"] == "model"]
    assert model["currentValue"] == "gpt-5"
    told = [u["content"]["text"] for u in of_kind(first.updates, "agent_message_chunk")]
    assert told[0].startswith(
        f"The server at {base} did not list its models (GET {base}/models: HTTP 500): calls "
        "go to 'gpt-5', a name it may not serve. Set ACP_FSM_MODEL to a model it serves."
    )
    assert 'model "gpt-5" not found' in first.error["message"]  # Ollama's own words
    assert not [u for u in of_kind(second.updates, "agent_message_chunk") if "did not" in str(u)]
    assert all(r.body["model"] == "gpt-5" for r in server.requests)


@pytest.mark.parametrize(
    ("local", "provider"),
    [
        (LLAMA_CPP, "openai"),
        (VLLM, "openai"),
        (OLLAMA, "openai"),
        (LM_STUDIO, "openai"),
        (LLAMA_CPP, "anthropic"),  # its server speaks the Messages API too
    ],
    ids=["llama.cpp", "vllm", "ollama", "lm-studio", "llama.cpp-anthropic"],
)
async def test_the_window_a_server_states_keeps_every_request_within_it(
    tmp_path: Path, local: LocalServer, provider: str
) -> None:
    """llama.cpp's /props, vLLM's max_model_len, Ollama's /api/ps and LM Studio's
    /api/v0/models (the last two once the model is loaded): the agent compacts before the
    server would refuse (llama.cpp, vLLM, LM Studio) or cut (Ollama) a request, and never
    asks for more output than the window leaves. On the Anthropic route to llama.cpp
    (ACP_FSM_PROVIDER=anthropic, ANTHROPIC_BASE_URL at its server) the agent assumed 200,000
    tokens and asked for 8,192 (one prompt ran ten minutes)."""
    window = 6000
    async with serving(local, tmp_path, window=window, models=("coder",)) as (server, launch):
        server.fallback = reader
        (tmp_path / "page.txt").write_text(PAGE * 2)
        agent = await launch.start(provider, OPENAI_API_KEY=None, ANTHROPIC_API_KEY=None)
        session = await agent.new_session(tmp_path)
        turns = [await agent.prompt(session, f"read page.txt ({i})") for i in range(6)]
    assert [t.stop_reason for t in turns] == ["end_turn"] * 6
    path = "/v1/messages" if provider == "anthropic" else "/v1/chat/completions"
    assert {r.path for r in server.requests} == {path}
    assert all(isinstance(s.reply, Reply) for s in server.served)  # nothing refused
    assert server.truncated == []  # nothing cut (Ollama)
    assert any(summary_call(r) for r in server.requests)
    assert all(r.body["model"] == "coder" for r in server.requests)
    # (Ollama and LM Studio state the window once the model is loaded: after the first call)
    assert all(r.body["max_tokens"] < window for r in server.requests[1:])
    assert all(estimate_tokens(request.body) < window for request in server.requests)
    usage = of_kind(agent.updates(session, turns[1].start, metadata=True), "usage_update")
    assert usage and {u["size"] for u in usage} == {window}


async def test_a_tokenizer_that_counts_more_than_the_estimate_is_followed_after_compacting(
    tmp_path: Path,
) -> None:
    """A local model's tokenizer counts a conversation of tool calls and paths at fewer
    characters a token than the agent's estimate (3.5; Qwen2.5-Coder 2.5, here 2): the ratio
    the server's counts showed sizes every later request, a compacted one's too, so none is
    refused (bench/local_model: a compacted request the estimate put at 6,057 tokens was
    8,437 on a window of 8,192, and the turn failed)."""
    window = 6000
    async with serving(
        LLAMA_CPP, tmp_path, window=window, models=("coder",), chars_per_token=2.0
    ) as (server, launch):
        server.fallback = reader
        (tmp_path / "page.txt").write_text(PAGE * 3)
        agent = await launch.start("openai", OPENAI_API_KEY=None, ACP_FSM_TOOLS="lean")
        session = await agent.new_session(tmp_path)
        turns = [await agent.prompt(session, f"read page.txt ({i})") for i in range(5)]
    assert [t.stop_reason for t in turns] == ["end_turn"] * 5
    assert all(isinstance(s.reply, Reply) for s in server.served)  # nothing refused
    assert any(summary_call(r) for r in server.requests), "the test proves nothing"
    assert all(estimate_tokens(r.body, 2.0) < window for r in server.requests)


async def test_a_window_the_tools_nearly_fill_still_takes_prompt_after_prompt(
    tmp_path: Path,
) -> None:
    """llama-cpp-python's default context, its size unknown to the agent, a small output
    limit: once the first empty stream has shown the window, the model calls list only the
    essential tools (all of them would nearly fill it), and what the system prompt and those
    tools leave is the conversation's (seen with the real server: with every tool listed,
    every later prompt was refused). The guess that first request taught is too large for
    the lean ones: a compacted request refused brings it down and is compacted once more."""
    async with serving(LLAMA_CPP_PYTHON, tmp_path, window=2000) as (server, launch):
        server.fallback = Reply(text=PAGE[:400])
        agent = await launch.start("openai", OPENAI_API_KEY=None, ACP_FSM_MAX_TOKENS="512")
        session = await agent.new_session(tmp_path)
        turns = [await agent.prompt(session, f"question {i}") for i in range(10)]
    assert [t.stop_reason for t in turns] == ["end_turn"] * 10
    assert any(s.reply == Raw(()) for s in server.served), "the test proves nothing"
    names = [{t["function"]["name"] for t in r.body.get("tools") or ()} for r in server.requests]
    assert names[0] >= ESSENTIAL - {"apply_patch"} | {"glob", "multi_edit", "update_plan"}
    assert all(listed <= ESSENTIAL for listed in names[1:] if listed)


@pytest.mark.parametrize(
    ("provider", "api", "said", "instead"),
    [
        ("anthropic", None, "does not serve Anthropic's Messages API", "ACP_FSM_PROVIDER=openai"),
        ("openai", "responses", "does not serve OpenAI's Responses API", "ACP_FSM_OPENAI_API=chat"),
    ],
)
async def test_an_api_the_server_lacks_is_said_with_what_to_set_instead(
    tmp_path: Path, provider: str, api: str | None, said: str, instead: str
) -> None:
    """llama-cpp-python serves neither the Messages nor the Responses API: the prompt's error
    said "HTTP 404" and no more."""
    async with serving(LLAMA_CPP_PYTHON, tmp_path, Reply(text="never")) as (server, launch):
        agent = await launch.start(
            provider, OPENAI_API_KEY=None, ANTHROPIC_API_KEY=None, ACP_FSM_OPENAI_API=api
        )
        session = await agent.new_session(tmp_path)
        failed = await agent.prompt(session, "hi")
        assert server.remaining == 1 and len(server.requests) == 1  # not retried
    message = failed.error["message"]
    assert "Not Found" in message and f". This server {said} (POST " in message
    assert instead in message
    assert failed.error["data"]["status"] == 404
