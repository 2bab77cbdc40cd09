"""The conformance suite's scripted model: which tool of the agent it calls, and with what,
whatever the wire format lists the tools in; and how the registry matrix reads an answer."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from acp_fsm.devkit.conformance import matrix, script
from acp_fsm.devkit.provider import Reply, Scripted
from acp_fsm.devkit.provider.script import RecordedRequest

WRITE = {
    "type": "object",
    "properties": {"file_path": {"type": "string"}, "contents": {"type": "string"}},
    "required": ["file_path", "contents"],
}
RUN = {
    "type": "object",
    "properties": {"cmd": {"type": "array"}, "description": {"type": "string"}},
    "required": ["cmd", "description"],
}


def reply(body: dict[str, Any]) -> Reply:
    request = RecordedRequest("/v1/x", CIMultiDictProxy(CIMultiDict()), body, b"", 0.0)
    answered: Scripted = script.answer(request)
    assert isinstance(answered, Reply)
    return answered


def asked(prompt: str, tools: list[Any], *, key: str = "messages") -> Reply:
    return reply({key: [{"role": "user", "content": prompt}], "tools": tools})


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "function", "function": {"name": "Write", "parameters": WRITE}},  # Chat
        {"type": "function", "name": "Write", "parameters": WRITE},  # Responses
        {"name": "Write", "input_schema": WRITE},  # Anthropic
    ],
)
def test_the_write_tool_is_called_with_the_path_and_content(tool: dict[str, Any]) -> None:
    (call,) = asked(script.write_prompt("/w/my file.txt"), [tool]).calls
    assert (call.id, call.name) == (script.CALL_ID, "Write")
    assert json.loads(str(call.arguments)) == {
        "file_path": "/w/my file.txt",
        "contents": script.WRITTEN,
    }


def test_a_command_tool_gets_the_command_and_its_other_required_parameters() -> None:
    tools = [
        {"name": "read", "input_schema": {"properties": {"path": {}}}},
        {"name": "kill_command", "input_schema": {"properties": {"id": {}}, "required": ["id"]}},
        {"name": "Bash", "input_schema": RUN},
    ]
    (call,) = asked(script.run_prompt(), tools, key="input").calls
    assert call.name == "Bash"  # kill_command's `id` has no known meaning: it is passed over
    arguments = json.loads(str(call.arguments))
    assert arguments == {"cmd": script.COMMAND.split(), "description": "acp-fsm conformance"}


PATCH = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
SHELL = {"type": "object", "properties": {"command": {"type": "array"}}, "required": ["command"]}


def test_without_a_write_tool_the_file_is_added_by_a_patch() -> None:
    tools = [
        {"name": "shell", "input_schema": SHELL},
        {"name": "apply_patch", "input_schema": PATCH},
    ]
    (call,) = asked(script.write_prompt("/w/a.txt"), tools).calls
    assert call.name == "apply_patch"  # before the shell
    assert json.loads(str(call.arguments)) == {
        "input": (
            "*** Begin Patch\n*** Add File: /w/a.txt\n"
            "+Written by the acp-fsm conformance suite.\n*** End Patch\n"
        )
    }


def test_a_free_form_patch_tool_of_the_responses_api_gets_the_patch_as_its_input() -> None:
    tools = [
        {"type": "function", "name": "exec_command", "parameters": SHELL},
        {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    ]
    (call,) = asked(script.write_prompt("/w/a.txt"), tools, key="input").calls
    assert (call.name, call.custom) == ("apply_patch", True)
    assert call.arguments == script._added("/w/a.txt")
    (run,) = asked(script.run_prompt(), tools, key="input").calls
    assert (run.name, run.custom) == ("exec_command", False)  # a free-form tool runs nothing


@pytest.mark.parametrize(("kind", "argv"), [("string", False), ("array", True)])
def test_without_a_write_or_patch_tool_a_shell_command_writes_the_file(
    tmp_path: Any, kind: str, argv: bool
) -> None:
    target = tmp_path / "it's here.txt"
    schema = {"properties": {"cmd": {"type": kind}}, "required": ["cmd"]}
    (call,) = asked(
        script.write_prompt(str(target)), [{"name": "exec_command", "parameters": schema}]
    ).calls
    command = json.loads(str(call.arguments))["cmd"]
    if argv:
        assert command[:2] == ["sh", "-c"]
        command = command[2]
    subprocess.run(["sh", "-c", command], check=True)
    assert target.read_text(encoding="utf-8") == script.WRITTEN


def test_without_a_usable_tool_the_reply_names_the_tools() -> None:
    unusable = {"name": "write_file", "input_schema": {"required": ["mode"]}}
    answered = asked(script.write_prompt("/w/a.txt"), [unusable])
    assert not answered.calls
    assert answered.text == (f"{script.NO_TOOL} write a file among the agent's tools (write_file).")
    assert script.NO_TOOL in str(asked(script.run_prompt(), []).text)


def test_once_the_call_is_answered_the_model_closes_and_other_prompts_stream() -> None:
    body = {
        "messages": [
            {"role": "user", "content": script.write_prompt("/w/a.txt")},
            {"role": "tool", "tool_call_id": script.CALL_ID, "content": "ok"},
        ]
    }
    assert reply(body).text == script.DONE_TEXT
    assert asked(script.STREAM_PROMPT, []).text == script.CHUNKS


@pytest.mark.parametrize(
    ("response", "status"),
    [
        ({"result": None}, "success"),
        ({"error": {"code": -32601, "message": "Method not found"}}, "method_not_found"),
        ({"error": {"code": -32000, "message": "x"}}, "auth_required"),
        ({"error": {"code": -32603, "message": "Authentication needed"}}, "auth_required"),
        ({"error": {"code": -32602, "message": "bad"}}, "invalid_params"),
        ({"error": {"code": -32002, "message": "gone"}}, "resource_not_found"),
        ({"error": {"code": -32603, "message": "boom"}}, "error"),
        ({"error": "boom"}, "error"),
    ],
)
def test_the_matrix_reads_answers_as_the_registry_does(
    response: dict[str, Any], status: str
) -> None:
    assert matrix.read(response).status == status


@pytest.mark.parametrize(
    ("thinking", "thinks"),
    [("enabled", True), ("adaptive", True), ("disabled", False), (None, False)],
)
def test_a_tool_call_opens_with_thinking_when_the_request_turns_it_on(
    thinking: str | None, thinks: bool
) -> None:
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": script.run_prompt()}],
        "tools": [{"name": "Bash", "input_schema": RUN}],
    }
    if thinking is not None:
        body["thinking"] = {"type": thinking, "budget_tokens": 1024}
    answered = reply(body)
    assert answered.calls
    assert (answered.thinking, answered.signature) == (
        (script.THOUGHT, script.SIGNATURE) if thinks else ("", None)
    )
