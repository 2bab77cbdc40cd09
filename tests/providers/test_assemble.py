"""MessageBuilder: deltas into events and into the assistant message (no IO)."""

from __future__ import annotations

import pytest

from acp_fsm.providers.assemble import MessageBuilder
from acp_fsm.providers.types import (
    AssistantMessage,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallPart,
    ToolCallStarted,
)


def test_consecutive_text_deltas_form_one_part() -> None:
    builder = MessageBuilder()
    assert builder.text("Hel") == TextDelta("Hel")
    assert builder.text("lo") == TextDelta("lo")
    assert builder.message() == AssistantMessage((TextPart("Hello"),))
    assert builder.message(StopReason.END_TURN) == AssistantMessage(
        (TextPart("Hello"),), StopReason.END_TURN
    )


def test_closed_blocks_become_separate_parts_and_empty_text_is_dropped() -> None:
    builder = MessageBuilder()
    builder.text("one")
    builder.close_block()
    builder.text("two")
    builder.close_block()
    builder.text("")
    assert builder.message().parts == (TextPart("one"), TextPart("two"))


def test_thinking_signature_and_redacted_blocks() -> None:
    builder = MessageBuilder()
    assert builder.thinking("Let me ") == ThinkingDelta("Let me ")
    builder.thinking("think.")
    builder.signature("sig-1")
    builder.close_block()
    builder.redacted_thinking("opaque")
    builder.thinking("unsigned")
    builder.text("Answer.")
    assert builder.message().parts == (
        ThinkingPart("Let me think.", "sig-1"),
        ThinkingPart("", None, "opaque"),
        ThinkingPart("unsigned"),
        TextPart("Answer."),
    )


def test_interleaved_tool_calls_accumulate_by_key() -> None:
    builder = MessageBuilder()
    builder.text("Two reads.")
    assert builder.tool_start(0, "call_a", "read") == ToolCallStarted("call_a", "read")
    builder.tool_start(1, "call_b", "grep")
    assert builder.tool_args(0, '{"path": ') == ToolCallArgsDelta("call_a", '{"path": ')
    assert builder.tool_args(1, '{"q": "x"}') == ToolCallArgsDelta("call_b", '{"q": "x"}')
    builder.tool_args(0, '"a"}')
    read = ToolCallPart("call_a", "read", {"path": "a"}, '{"path": "a"}')
    grep = ToolCallPart("call_b", "grep", {"q": "x"}, '{"q": "x"}')
    assert builder.finish_tools() == [ToolCallFinished(read), ToolCallFinished(grep)]
    assert builder.message().parts == (TextPart("Two reads."), read, grep)


def test_a_tool_call_finishes_once() -> None:
    builder = MessageBuilder()
    builder.tool_start("k", "call_1", "read")
    finished = builder.tool_finish("k")
    assert finished == ToolCallFinished(ToolCallPart("call_1", "read", {}, ""))
    assert builder.tool_finish("k") is None
    assert builder.finish_tools() == []
    assert builder.has_tool("k")
    assert not builder.has_tool("other")


def test_partial_message_drops_unfinished_tool_calls() -> None:
    builder = MessageBuilder()
    builder.text("Reading.")
    builder.tool_start(0, "call_1", "read")
    builder.tool_args(0, '{"path": "a"}')
    builder.tool_finish(0)
    builder.tool_start(1, "call_2", "read")
    builder.tool_args(1, '{"pa')
    assert builder.message().parts == (
        TextPart("Reading."),
        ToolCallPart("call_1", "read", {"path": "a"}, '{"path": "a"}'),
    )


def test_text_after_a_tool_call_is_a_new_part() -> None:
    builder = MessageBuilder()
    builder.text("before")
    builder.tool_start(0, "call_1", "read")
    builder.tool_finish(0)
    builder.text("after")
    call = ToolCallPart("call_1", "read", {}, "")
    assert builder.message().parts == (TextPart("before"), call, TextPart("after"))


@pytest.mark.parametrize(
    ("raw", "arguments", "error"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ("", {}, None),
        ("  \n", {}, None),
        (
            "{",
            {},
            "the arguments are not valid JSON (Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1))",
        ),
        ("[1]", {}, "the arguments must be a JSON object, got list"),
        ("null", {}, "the arguments must be a JSON object, got NoneType"),
        ('"text"', {}, "the arguments must be a JSON object, got str"),
    ],
)
def test_tool_arguments_are_parsed_once_at_the_end(
    raw: str, arguments: dict[str, object], error: str | None
) -> None:
    builder = MessageBuilder()
    builder.tool_start(0, "call_1", "read")
    for char in raw:
        builder.tool_args(0, char)
    assert builder.tool_finish(0) == ToolCallFinished(
        ToolCallPart("call_1", "read", arguments, raw, error)
    )
