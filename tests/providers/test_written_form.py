"""A request lowered for a model that writes its calls as text (providers.written_form): the
tools taught in the system prompt, calls and results sent as the family writes them, each
message lowered once, and what is lowered read back by the recogniser."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_fsm.providers.text_calls import recognize
from acp_fsm.providers.types import (
    AssistantMessage,
    ModelRequest,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    ToolSpec,
    UserMessage,
)
from acp_fsm.providers.written_form import WRITE, family_of, lowered, taught

READ = ToolSpec(
    "read_file",
    "Read a text file.",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path."},
            "limit": {"type": "integer"},
        },
        "required": ["path"],
    },
)
MODE = ToolSpec(
    "set_mode",
    "Set the mode.",
    {"type": "object", "properties": {"mode": {"enum": ["a", "b"]}}, "required": ["mode"]},
)
CALL = ToolCallPart("c1", "read_file", {"path": "a.txt", "limit": 2})
TURN = (
    UserMessage((TextPart("read a.txt"),)),
    AssistantMessage((TextPart("Reading."), CALL), StopReason.TOOL_USE),
    ToolResultsMessage((ToolResultPart("c1", "one\ntwo"),)),
)


def request(syntax: str | None, memo: dict[str, Any] | None = None, **fields: Any) -> ModelRequest:
    return ModelRequest(
        "m", TURN, "You help.", (READ, MODE), memo=memo, calls_written=syntax, **fields
    )


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf", "hermes"),
        ("qwen3-coder:30b", "qwen3"),
        ("mistralai/Devstral-Small-2505", "mistral"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3"),
        ("gemma3:4b", None),
    ],
)
def test_a_family_is_known_by_the_model_s_name(model: str, family: str | None) -> None:
    assert family_of(model) == family


def test_a_native_request_is_left_as_it_is() -> None:
    native = request(None)
    assert lowered(native) is native


@pytest.mark.parametrize("syntax", sorted(WRITE))
def test_the_lowered_conversation_holds_the_call_the_recogniser_reads_back(syntax: str) -> None:
    low = lowered(request(syntax))

    assert low.tools == () and low.calls_written is None
    assert low.system is not None and low.system.startswith("You help.\n\n# Tools\n")
    user, answer, result = low.messages
    assert user is TURN[0]
    assert isinstance(answer, AssistantMessage) and answer.tool_calls == ()
    found = recognize(answer.text, {t.name: t for t in (READ, MODE)})
    assert [(c.name, c.arguments) for c in found.calls] == [(CALL.name, CALL.arguments)]
    assert found.prose.strip() == "Reading."
    assert isinstance(result, UserMessage) and "two" in result.parts[0].text  # type: ignore[union-attr]


def test_each_family_is_told_a_result_its_own_way() -> None:
    def result(syntax: str) -> str:
        message = lowered(request(syntax)).messages[2]
        assert isinstance(message, UserMessage) and isinstance(message.parts[0], TextPart)
        return message.parts[0].text

    assert result("hermes") == result("qwen3") == "<tool_response>\none\ntwo\n</tool_response>"
    told = json.dumps({"name": "read_file", "content": "one\ntwo"})
    assert result("mistral") == f"[TOOL_RESULTS]{told}[/TOOL_RESULTS]"
    assert result("json") == result("llama3") == "Result of read_file:\none\ntwo"


def test_an_error_is_said_to_be_one() -> None:
    failed = (*TURN[:2], ToolResultsMessage((ToolResultPart("c1", "no such file", True),)))
    low = lowered(request("hermes")._replace(messages=failed))
    assert "Error: no such file" in low.messages[2].parts[0].text  # type: ignore[union-attr]


def test_each_message_is_lowered_once_while_it_stays() -> None:
    memo: dict[str, Any] = {}
    first = lowered(request("hermes", memo))
    again = lowered(request("hermes", memo))
    assert all(a is b for a, b in zip(first.messages, again.messages, strict=True))
    shorter = lowered(request("hermes", memo)._replace(messages=TURN[:1]))
    assert len(memo["written:hermes"]) == len(shorter.messages) == 1


def test_the_tools_are_taught_with_their_arguments() -> None:
    text = taught((READ, MODE), "hermes")
    assert '<tool_call>\n{"name": "read_file", "arguments": {"path": "..."}}\n</tool_call>' in text
    assert (
        "- read_file: Read a text file. Arguments: path (string, required): File path; "
        "limit (integer).\n" in text
    )
    assert '- set_mode: Set the mode. Arguments: mode ("a" | "b", required).\n' in text
    assert "<tool_response>" not in text  # a small model shown one writes one


def test_a_call_that_may_call_nothing_is_not_taught_the_tools() -> None:
    low = lowered(request("hermes", answer_only=True))
    assert low.system == "You help." and low.tools == ()
