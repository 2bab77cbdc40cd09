"""A model on a compatible server: how it calls tools (native, text, decided from its first
answers and remembered per server and model), the small tool list it is shown, a request
prefix that stays the same across a session, and the room kept for its answers
(acp_fsm.call_modes, acp_fsm.tools.lean, providers.written_form)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from acp_fsm.tools.lean import LEAN
from tests.e2e.support import (
    Launcher,
    args,
    history,
    offered_tools,
    system_of,
    tool_results,
    user_texts,
)
from tests.harness import wait_until


@pytest.fixture(autouse=True)
def _local_default(launch: Launcher) -> None:
    """The tool list as a local server's model gets it by default."""
    launch.defaults["ACP_FSM_TOOLS"] = None


READ = Call("r1", "read_file", args(path="notes.txt"))
MODES_FILE = "call-modes.json"


def decided(home: Path) -> dict[str, Any]:
    """The modes the agent remembered, by model (one server in these tests)."""
    [models] = json.loads((home / MODES_FILE).read_text()).values()
    return dict(models)


async def test_a_model_that_writes_its_calls_is_then_spoken_to_in_text(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The first answer writes its call: from the next request on, the tools are taught in the
    system prompt (in the syntax it wrote, for a model of no known family) and none is
    declared; the call goes back in that syntax and its result as a tool response."""
    (project / "notes.txt").write_text("first line\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(text="Let me read it.", calls=(READ,), written="hermes"), Reply(text="It says so.")
    )

    turn = await agent.prompt(session, "what is in notes.txt?")

    assert turn.stop_reason == "end_turn"
    first, second = server.requests
    assert offered_tools(first) and "tools" not in second.body
    assert system_of(second).startswith(system_of(first))
    taught = system_of(second)[len(system_of(first)) :]
    example = '<tool_call>\n{"name": "read_file", "arguments": {"path": "..."}}\n</tool_call>'
    assert example in taught
    assert "- write_file: Create a file" in taught
    [call, result] = history(second)[-2:]
    assert call["role"] == "assistant" and "tool_calls" not in call
    assert call["content"].endswith(
        'Let me read it.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}'
        "\n</tool_call>"
    )
    assert result["role"] == "user"
    assert user_texts(second)[-1].startswith("<tool_response>\nfirst line\n")
    assert user_texts(second)[-1].endswith("</tool_response>")
    assert decided(launch.home) == {"gpt-5": {"mode": "text", "syntax": "hermes"}}


async def test_the_mode_decided_is_where_the_next_session_starts(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Remembered per server and model: another process's first request is already in text
    mode, taught the family's syntax; `/status` says so; the answer's calls run."""
    launch.home.mkdir(parents=True, exist_ok=True)
    (launch.home / MODES_FILE).write_text(
        json.dumps({f"openai {server.openai_base_url}": {"qwen3-coder-30b": {"mode": "text"}}})
    )
    (project / "notes.txt").write_text("first line\n")
    agent = await launch.start("openai", ACP_FSM_MODEL="qwen3-coder-30b")
    session = await agent.new_session(project)
    server.script(Reply(calls=(READ,), written="qwen3"), Reply(text="Read."))

    turn = await agent.prompt(session, "read notes.txt")
    status = await agent.prompt(session, "/status")

    first, second = server.requests
    assert "tools" not in first.body
    assert "<function=read_file>\n<parameter=path>\n...\n</parameter>" in system_of(first)
    assert "first line" in user_texts(second)[-1]
    assert turn.stop_reason == "end_turn"
    report = "".join(u["content"]["text"] for u in status.updates if "content" in u)
    assert "Tool calls: text (qwen3 syntax), decided from this model's answers" in report
    assert "Tool list: small (a local server's model; ACP_FSM_TOOLS=full for all)" in report


async def test_a_model_that_calls_natively_stays_native(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "notes.txt").write_text("first line\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(calls=(READ,)), Reply(text="Read."))

    await agent.prompt(session, "read notes.txt")

    assert offered_tools(server.requests[-1])
    assert list(tool_results(server.requests[-1])) == ["r1"]
    await wait_until(lambda: (launch.home / MODES_FILE).exists(), "the decision kept")
    assert decided(launch.home) == {"gpt-5": {"mode": "native", "syntax": None}}


async def test_the_setting_native_leaves_written_calls_as_text(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_TOOL_CALLS="native")
    session = await agent.new_session(project)
    server.script(Reply(calls=(READ,), written="hermes"))

    turn = await agent.prompt(session, "read notes.txt")

    shown = "".join(u["content"]["text"] for u in turn.updates if "content" in u)
    assert "<tool_call>" in shown and len(server.requests) == 1
    assert not (launch.home / MODES_FILE).exists()


async def test_a_compatible_server_s_model_is_shown_the_small_tool_list(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """By default: the few tools a small model needs, in few words; with ACP_FSM_TOOLS=full,
    every tool. The system prompt and the tools together stay well under 1,500 tokens (at
    the agent's own estimate of 3.5 characters a token)."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text="hi"))
    await agent.prompt(session, "hello")
    full = await launch.start("openai", ACP_FSM_TOOLS="full")
    server.script(Reply(text="hi"))
    await full.prompt(await full.new_session(project), "hello")

    lean, every = server.requests
    assert set(offered_tools(lean)) == set(LEAN) - {"edit_file"}  # gpt-5 patches
    assert {"glob", "task", "update_plan", "fetch_url"} <= set(offered_tools(every))
    chars = len(system_of(lean)) + len(json.dumps(lean.body["tools"]))
    assert chars / 3.5 < 1_000, chars
    assert system_of(lean).startswith("You are acp-fsm, a coding agent in the user's editor")


async def test_the_request_prefix_is_the_same_bytes_across_a_session(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A local server reuses its prompt cache only for a byte-identical prefix: each request
    of a text-mode session begins with the whole of the one before, its answer aside."""
    launch.home.mkdir(parents=True, exist_ok=True)
    (launch.home / MODES_FILE).write_text(
        json.dumps({f"openai {server.openai_base_url}": {"gpt-5": {"mode": "text"}}})
    )
    (project / "notes.txt").write_text("first line\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(calls=(READ,), written="hermes"), Reply(text="Read."), Reply(text="ok"))
    await agent.prompt(session, "read notes.txt")
    await agent.prompt(session, "thanks")

    bodies = [r.raw for r in server.requests]
    for before, after in pairwise(bodies):
        cut = before.index(b'"messages"')  # the model and the settings come first
        end = before.rindex(b"}]")  # the messages' end
        assert after[cut:end] == before[cut:end]


async def test_a_small_window_keeps_the_conversation(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """At a window of 4,096 tokens, requests of about 2,000 make no summary call: the room
    kept for the answer follows what answers need (an eighth of the window at first), and
    the answer may still use what the request leaves."""
    agent = await launch.start("openai", ACP_FSM_CONTEXT_WINDOW="4096")
    session = await agent.new_session(project)
    words = "lorem ipsum dolor sit amet " * 50  # about 400 tokens a prompt
    for _ in range(4):
        server.script(Reply(text="noted"))
        await agent.prompt(session, words)

    assert len(server.requests) == 4  # no summary call among them
    assert len(history(server.requests[-1])) == 7  # every earlier turn kept
    assert 1_000 < server.requests[0].body["max_tokens"] <= 2_048


async def test_a_call_of_a_tool_never_offered_runs_nothing_but_decides_text(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """What Qwen2.5-Coder 0.5B wrote on llama.cpp's server (issue 40): the file for the tool's
    name. It is shown as text and nothing runs; the model writes its calls as text, so the
    next request teaches it the tools in text."""
    wrong = '{"name": "greet.py", "arguments": {"greeting": "Howdy"}}'
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=wrong), Reply(text="ok"))

    first = await agent.prompt(session, "change the greeting in greet.py to Howdy")
    await agent.prompt(session, "and?")

    assert "".join(u["content"]["text"] for u in first.updates if "content" in u) == wrong
    assert all("toolCallId" not in u for u in first.updates)
    assert offered_tools(server.requests[0]) and "tools" not in server.requests[1].body
    assert decided(launch.home) == {"gpt-5": {"mode": "text", "syntax": "json"}}
