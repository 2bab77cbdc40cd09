"""The local-model benchmark (bench/local_model.py) without a model: the scripted provider
answers as llama.cpp's server (its /props window, its chunks) what a small model wrote, and
the bench counts the calls meant, run and right, checks the task on disk, and keeps the raw
answers its proxy saw."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import aiohttp

from acp_fsm.devkit.provider import LLAMA_CPP, Call, RecordedRequest, Reply, ScriptedProvider
from bench import local_model
from bench.common import tree_agent
from bench.local_tasks import TASKS, python_version
from bench.model_answer import loose_count
from bench.recording_proxy import recording
from bench.tally import Intended, Ran, Tally, tally
from tests.harness import ROOT

TASK = {task.name: task for task in TASKS}
# What Qwen2.5-Coder 1.5B answered on llama.cpp's server (issue 40), word for word.
FENCED = (
    'To create a file `notes.txt` containing the word "hi", please enter:\n'
    "```json\n"
    '{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi"}}\n'
    "```"
)
UNKNOWN_SYNTAX = 'I will call it:\nwrite_file(path="notes.txt", content="hi")'


def model(first: Reply):  # type: ignore[no-untyped-def]
    """A model that answers a prompt with `first`, and a tool's result (native, or in text
    mode after its calls written) with a word."""

    def answer(request: RecordedRequest) -> Reply:
        if any(m["role"] in ("tool", "assistant") for m in request.body["messages"]):
            return Reply(text="Done.")
        return first

    return answer


def agent() -> tuple[list[str], dict[str, str]]:
    return tree_agent(ROOT)


async def test_a_call_written_as_json_is_counted_run_right_and_the_task_solved(
    tmp_path: Path,
) -> None:
    async with ScriptedProvider(local=LLAMA_CPP, context_window=8192, models=("m",)) as server:
        server.fallback = model(Reply(text=FENCED))
        root = server.openai_base_url.removesuffix("/v1")
        result = await local_model.run_task(TASK["write"], root, agent(), tmp_path, 60)

    assert result.stop_reason == "end_turn" and result.solved
    assert result.tally == Tally(intended=1, run=1, right=1, false=0)
    assert [r.name for r in result.ran] == ["write_file"] and result.loose == 1
    assert result.first_word_s is not None and result.first_word_s <= result.seconds
    first = result.first
    assert first is not None and first.text == FENCED and first.prompt_tokens
    assert local_model.missed(result.answers) == []
    assert result.answer.endswith("Done.") and "```" not in result.answer  # no call syntax

    gguf = tmp_path / "tiny-model.gguf"
    gguf.write_bytes(b"GGUF")
    setup = local_model.Setup(ROOT, gguf, Path(sys.executable), 8192, 60)
    path = local_model.write_results(setup, [result], tmp_path / "out", tmp_path / "raw")
    summary = json.loads(path.read_text())
    assert summary["model"] == "tiny-model.gguf" and summary["totals"]["solved"] == 1
    [task] = summary["tasks"]
    assert task["ran"] == [["write_file", {"path": "notes.txt", "content": "hi"}, "completed"]]
    assert path.stat().st_size < 4096
    [raw] = (tmp_path / "raw").iterdir()
    kept = json.loads(raw.read_text())
    assert kept["answers"][0] == FENCED
    chat = [e for e in kept["exchanges"] if e["path"] == "/v1/chat/completions"]
    assert len(chat) >= 2 and chat[0]["response"].startswith("data:")  # a title call too


async def test_native_calls_are_named_by_the_answer_and_a_search_is_checked(
    tmp_path: Path,
) -> None:
    search = Call("native-1", "search_files", '{"pattern": "def parse_date"}')
    replies = [Reply(calls=(search,)), Reply(text="utils/dates.py defines it.")]
    async with ScriptedProvider(*replies, local=LLAMA_CPP, context_window=8192) as server:
        root = server.openai_base_url.removesuffix("/v1")
        result = await local_model.run_task(TASK["search"], root, agent(), tmp_path, 60)

    assert result.solved
    assert result.ran == [
        Ran("native-1", "search_files", {"pattern": "def parse_date"}, "completed")
    ]
    assert result.tally == Tally(1, 1, 1, 0)


async def test_what_the_recogniser_misses_is_reported_word_for_word(tmp_path: Path) -> None:
    async with ScriptedProvider(local=LLAMA_CPP, context_window=8192) as server:
        server.fallback = model(Reply(text=UNKNOWN_SYNTAX))
        root = server.openai_base_url.removesuffix("/v1")
        result = await local_model.run_task(TASK["write"], root, agent(), tmp_path, 60)

    assert not result.solved and result.tally == Tally(0, 0, 0, 0)
    assert local_model.missed(result.answers) == [UNKNOWN_SYNTAX]


async def test_a_task_over_its_time_is_cancelled(tmp_path: Path) -> None:
    async with ScriptedProvider(local=LLAMA_CPP, context_window=8192) as server:
        server.fallback = Reply(text=["a", "b"], delay_s=30)
        root = server.openai_base_url.removesuffix("/v1")
        result = await local_model.run_task(TASK["read"], root, agent(), tmp_path, 1)

    assert result.stop_reason == "cancelled" and not result.solved
    assert result.exchanges[-1].disconnected


async def test_the_proxy_forwards_the_stream_unchanged_and_keeps_it() -> None:
    body = {"model": "gpt-5", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    async with (
        ScriptedProvider(Reply(text=["one ", "two"])) as server,
        recording(server.openai_base_url.removesuffix("/v1")) as proxy,
        aiohttp.ClientSession() as http,
        http.post(f"{proxy.url}/v1/chat/completions", json=body) as response,
    ):
        assert response.status == 200
        received = await response.read()
    [exchange] = proxy.exchanges
    assert bytes(exchange.response) == received and b"two" in received
    assert json.loads(exchange.body) == body and exchange.status == 200


def test_tasks_are_checked_on_disk(tmp_path: Path) -> None:
    fix, edit = TASK["fix"], TASK["edit"]
    fix.make(tmp_path)
    edit.make(tmp_path)
    assert not fix.check(tmp_path, "", [])
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert fix.check(tmp_path, "", [])
    assert not edit.check(tmp_path, "", [])
    (tmp_path / "greet.py").write_text('def greet(name):\n    return "Howdy, " + name\n')
    assert edit.check(tmp_path, "", [])
    ran = [Ran("c1", "run_command", {"command": "python3 --version"}, "completed")]
    assert TASK["run"].check(tmp_path, f"It is Python {python_version()}.", ran)
    assert not TASK["run"].check(tmp_path, f"It is Python {python_version()}.", [])


def test_a_loose_count_finds_what_names_a_tool() -> None:
    names = {"read_file", "write_file"}
    assert loose_count(FENCED, names) == (1, 0)
    assert loose_count(UNKNOWN_SYNTAX, names) == (1, 0)
    assert loose_count('{"name": "create_file", "arguments": {}}', names) == (0, 1)
    assert loose_count('{"name": "my-app", "version": "1.0"}', names) == (0, 0)
    assert loose_count("<function=read_file>\n<parameter=path>\na\n</parameter>", names) == (1, 0)
    assert loose_count("Nothing to do here.", names) == (0, 0)
    looped = '{"name": "read_file", "arguments": {"path": "a"}}\n' * 3
    assert loose_count(looped + '{"name": "read_file", "arguments": {"path": "b"}}', names) == (
        2,
        0,
    )
    definition = '{"name": "calc", "description": "Add.", "parameters": {"type": "object"}}'
    assert loose_count(definition, names) == (0, 0)


def test_a_call_is_right_once_only_and_extra_runs_are_false() -> None:
    meant = [Intended("read_file", {"path": "a"})]
    twice = [
        Ran("1", "read_file", {"path": "a"}, "completed"),
        Ran("2", "read_file", {"path": "a"}, "completed"),
    ]
    assert tally(meant, twice) == Tally(1, 2, 1, 1)
    assert tally(meant, [twice[0]._replace(status="failed")], done=True) == Tally(1, 1, 0, 0)
    assert tally([], twice[:1]) == Tally(0, 1, 0, 1)
