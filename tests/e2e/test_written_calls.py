"""Calls a model on a compatible server writes in its answer's text are run as calls
(acp_fsm.turn.written_calls): shown as tool calls, not as text, their results sent back in
the model's own convention (providers.written_form); an example in an explanation stays
text and runs nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from acp_fsm.providers.types import StopReason
from acp_fsm.providers.written_form import WRITE as WRITTEN
from tests.e2e.support import (
    Launcher,
    args,
    statuses,
    stored,
    tool_results,
    user_texts,
)
from tests.harness import wait_until

HERMES = (
    "Let me read it.\n"
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n</tool_call>'
)
# What Qwen2.5-Coder 1.5B answered on llama.cpp's server (issue 40), word for word.
FENCED = (
    'To create a file `notes.txt` containing the word "hi", please enter:\n'
    "```json\n"
    '{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}\n'
    "```"
)
EXAMPLE = (
    "A call names the tool and its arguments, for example:\n"
    "```json\n"
    '{"name": "read_file", "arguments": {"path": "notes.txt"}}\n'
    "```\n"
    "The agent would then read notes.txt and show you its lines, one by one, with their "
    "numbers; nothing is changed on disk."
)


# The format the recogniser names for each family the scripted server writes.
FORMATS = {
    "hermes": "hermes",
    "qwen3": "qwen3_xml",
    "mistral": "mistral",
    "llama3": "python_tag",
    "json": "fenced_json",
}


def shown(updates: list[dict[str, Any]]) -> str:
    """The answer's text as the editor was shown it."""
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def calls(updates: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each tool call's updates, by its id."""
    found: dict[str, list[dict[str, Any]]] = {}
    for update in updates:
        if "toolCallId" in update:
            found.setdefault(update["toolCallId"], []).append(update)
    return found


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_call_written_in_tags_is_run_and_its_result_sent_back(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    (project / "notes.txt").write_text("first line\n")
    agent = await launch.start(provider)
    session = await agent.new_session(project)
    server.script(Reply(text=HERMES), Reply(text="It says: first line."))

    turn = await agent.prompt(session, "what is in notes.txt?")

    assert turn.stop_reason == "end_turn"
    assert shown(turn.updates) == "Let me read it.\nIt says: first line."
    [updates] = calls(turn.updates).values()
    assert updates[0]["title"] == "Read notes.txt" and updates[0]["kind"] == "read"
    assert statuses(updates) == ["pending", "in_progress", "completed"]
    assert tool_results(server.requests[-1]) == {}  # text mode from here on
    assert user_texts(server.requests[-1])[-1] == "<tool_response>\nfirst line\n\n</tool_response>"
    assert agent.log("written_calls")[0]["tools"] == ["read_file"]


@pytest.mark.parametrize("family", sorted(WRITTEN))
async def test_each_family_s_written_calls_are_run(
    launch: Launcher, server: ScriptedProvider, project: Path, family: str
) -> None:
    """Two calls, one with a number among its arguments, as each family writes them."""
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    reads = (
        Call("r1", "read_file", args(path="notes.txt", offset=2, limit=1)),
        Call("r2", "list_directory", args(path=".")),
    )
    server.script(Reply(text="Looking.", calls=reads, written=family), Reply(text="Seen."))

    turn = await agent.prompt(session, "look at notes.txt")

    assert turn.stop_reason == "end_turn"
    assert shown(turn.updates).split() == ["Looking.", "Seen."]  # no syntax shown
    results = user_texts(server.requests[-1])[-1]  # both, in the family's convention
    assert "two" in results and "three" not in results and "notes.txt" in results
    [found] = await wait_until(lambda: agent.log("written_calls"), "the calls' log line")
    assert found["formats"] == [FORMATS[family]]
    assert found["tools"] == ["read_file", "list_directory"]


async def test_the_call_a_small_model_wrote_as_json_writes_the_file(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(Reply(text=FENCED), Reply(text="Done."))

    turn = await agent.prompt(session, 'create notes.txt containing "hi"')

    assert turn.stop_reason == "end_turn"
    assert (project / "notes.txt").read_text() == "hi"
    assert "```" not in shown(turn.updates) and '"arguments"' not in shown(turn.updates)
    assert len(calls(turn.updates)) == 1


# What Qwen2.5-Coder 1.5B and 0.5B wrote on llama.cpp's server (bench/local_model), word for
# word: doubled braces in the tool list's tags; the last brace left out; a ```python fence.
SLIPS = {
    "doubled-braces": (
        "<tools>\n"
        '{{"name": "read_file", "arguments": {"path": "greet.py"}}}\n'
        '{{"name": "edit_file", "arguments": {"path": "greet.py", "old_text": "Hello", '
        '"new_text": "Howdy"}}}\n</tools>'
    ),
    "last-brace-left-out": (
        '{"name": "edit_file", "arguments": {"path": "greet.py", "old_text": "Hello", '
        '"new_text": "Howdy"}'
    ),
    "python-fence": (
        "Change it, then check it:\n\n```python\n"
        '{"name": "edit_file", "arguments": {"path": "greet.py", "old_text": "Hello", '
        '"new_text": "Howdy", "replace_all": False}}\n```\n\nThis changes the greeting.'
    ),
}


@pytest.mark.parametrize("slip", list(SLIPS))
async def test_a_small_model_s_slips_in_writing_a_call_still_run_it(
    launch: Launcher, server: ScriptedProvider, project: Path, slip: str
) -> None:
    (project / "greet.py").write_text('print("Hello")\n')
    agent = await launch.start("openai", ACP_FSM_EDIT_TOOLS="replace")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(Reply(text=SLIPS[slip]), Reply(text="Done."))

    turn = await agent.prompt(session, "In greet.py change the greeting from Hello to Howdy")

    assert turn.stop_reason == "end_turn"
    assert (project / "greet.py").read_text() == 'print("Howdy")\n'
    ran = calls(turn.updates)
    assert ran and all(statuses(updates)[-1] == "completed" for updates in ran.values())
    assert '"arguments"' not in shown(turn.updates)


async def test_calls_looped_until_the_length_limit_cut_them_run_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Qwen2.5-Coder 0.5B looped through calls until max_tokens cut the last: none runs."""
    call = '{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}\n'
    looped = call * 3 + '{"name": "edit_file", "arguments": {"path": "notes.txt", "old_t'
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=looped, stop=StopReason.MAX_TOKENS))

    turn = await agent.prompt(session, "create notes.txt containing hi")

    assert turn.stop_reason == "max_tokens"
    assert shown(turn.updates) == looped
    assert calls(turn.updates) == {} and not (project / "notes.txt").exists()


async def test_an_answer_that_loops_is_stopped_long_before_its_limit(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Qwen2.5-Coder 0.5B wrote `hi\\n` inside a call's content for 230 s (bench/local_model):
    the agent stops such an answer once it repeats itself, runs none of it and says why."""
    start = '```json\n{"name": "write_file", "arguments": {"path": "notes.txt", "content": "'
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=[start, *["hi\\n"] * 20_000]))  # 80,000 characters

    turn = await agent.prompt(session, "create notes.txt containing hi")

    assert turn.stop_reason == "max_tokens"
    text = shown(turn.updates)
    assert text.startswith(start) and len(text) < 4_000
    assert text.endswith("so its answer was stopped.")
    assert calls(turn.updates) == {} and not (project / "notes.txt").exists()
    assert agent.log("answer_looped")[0]["how"] == "the same 4 characters over and over"
    server.script(Reply(text="Sorry, I will write it once."))
    again = await agent.prompt(session, "try again")
    assert again.stop_reason == "end_turn"
    sent = server.requests[-1].body["messages"]
    assert sent[-2]["role"] == "assistant" and sent[-2]["content"].startswith(start)


async def test_an_answer_that_writes_its_calls_again_and_again_is_stopped(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Qwen2.5-Coder 0.5B, its home kept (bench/local_model, write task): after three calls,
    two of them in turn, now and then one twice, for 223 s; stopped at the eighth repeat."""
    listing = '{"name": "list_directory", "arguments": {"path": "."}}\n'
    echo = '{"name": "run_command", "arguments": {"command": "echo hi\\n", "output": "hi\\n"}}\n'
    first = '{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi\\n"}}\n'
    lines = [first, listing, echo, listing, listing, echo] + [listing, echo] * 200
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=lines))

    turn = await agent.prompt(session, "create notes.txt containing hi")

    assert turn.stop_reason == "max_tokens"
    text = shown(turn.updates)
    assert text.endswith("(8 calls it had written already), so its answer was stopped.")
    assert text.count("list_directory") < 10 and calls(turn.updates) == {}
    assert not (project / "notes.txt").exists()


async def test_a_loop_of_calls_in_the_model_s_own_syntax_runs_none_of_them(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A loop is no plan, whatever syntax its calls are in: `<tool_call>` ones stay text too."""
    call = '<tool_call>{"name": "run_command", "arguments": {"command": "echo hi >> log.txt"}}'
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=[f"{call}</tool_call>\n"] * 20))

    turn = await agent.prompt(session, "log hi")

    assert turn.stop_reason == "max_tokens" and len(server.requests) == 1
    assert calls(turn.updates) == {} and not (project / "log.txt").exists()
    assert shown(turn.updates).endswith(
        "\n\nThe model was repeating itself (8 calls it had written already), so its answer "
        "was stopped."
    )


async def test_an_example_in_an_explanation_is_text_and_runs_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(Reply(text=EXAMPLE))

    turn = await agent.prompt(session, "how does a tool call look?")

    assert turn.stop_reason == "end_turn"
    assert shown(turn.updates) == EXAMPLE
    assert calls(turn.updates) == {} and len(server.requests) == 1


async def test_an_answer_with_native_calls_runs_those_alone(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The server parsed the model's calls: they alone run; the call syntax its text held is
    not shown."""
    (project / "a.txt").write_text("a\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    server.script(
        Reply(text=HERMES, calls=(Call("native-1", "read_file", args(path="a.txt")),)),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "read a.txt")

    assert shown(turn.updates) == "Let me read it.\ndone"
    assert list(calls(turn.updates)) == ["native-1"]


async def test_a_cancel_keeps_only_what_was_shown_of_a_call_in_the_making(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Text held back because it may be a call was never shown: the stored answer, which a
    reload replays, holds the text the editor saw and no more."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    making = ("Let me read it.\n", '<tool_call>\n{"name": "read_file", "argu')
    server.script(Reply(text=making, fault=Hang(3)))  # the role, then the two pieces
    pending = await agent.start_prompt(session, "read notes.txt")
    await wait_until(lambda: agent.updates(session, pending.start), "the first line", 20)
    await asyncio.sleep(0.3)  # the held piece comes with it, before the hang

    await agent.cancel(session)
    turn = await pending.result()

    assert turn.stop_reason == "cancelled"
    assert shown(turn.updates) == "Let me read it.\n"
    [answer] = [body for kind, body in stored(launch.home, session) if kind == "assistant"]
    assert answer["parts"] == [{"type": "text", "text": "Let me read it.\n"}]
