"""Compaction decisions (acp_fsm.compaction): the estimate, where the conversation is cut (never
between a tool call and its result), the summary call, and the stored form."""

from __future__ import annotations

import json

import pytest

from acp_fsm import compaction, transcript
from acp_fsm.commands import Command, parse
from acp_fsm.context_budget import ContextBudget
from acp_fsm.devkit.provider.anthropic_rules import AnthropicRules
from acp_fsm.devkit.provider.openai_rules import OpenAiRules
from acp_fsm.providers.anthropic import convert_messages as anthropic_messages
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.openai import convert_messages as openai_messages
from acp_fsm.providers.types import (
    AssistantMessage,
    ImagePart,
    Message,
    ModelRequest,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    ToolSpec,
    UserMessage,
)

WINDOW, MAX_TOKENS = 10_000, 1_000  # usable: 9,000 tokens; kept: at most 2,700


def user(text: str) -> UserMessage:
    return UserMessage((TextPart(text),))


def text_of(part: TextPart | ImagePart) -> str:
    assert isinstance(part, TextPart), part
    return part.text


def said(text: str) -> AssistantMessage:
    return AssistantMessage((TextPart(text),), StopReason.END_TURN)


def calling(call_id: str, size: int = 10) -> list[Message]:
    return [
        AssistantMessage(
            (ToolCallPart(call_id, "read_file", {"path": "x"}, '{"path":"x"}'),),
            StopReason.TOOL_USE,
        ),
        ToolResultsMessage((ToolResultPart(call_id, "y" * size),)),
    ]


def turns(count: int, size: int) -> list[Message]:
    """`count` turns of a prompt, a tool call with a result of `size` chars, and an answer."""
    messages: list[Message] = []
    for n in range(count):
        messages += [user(f"prompt {n}"), *calling(f"c{n}", size), said(f"answer {n}")]
    return messages


def valid_for_both(messages: list[Message]) -> None:
    """The scripted providers' rules (the real APIs' pairing rules) accept `messages`."""
    OpenAiRules().validate(
        {}, {"model": "m", "stream": True, "messages": openai_messages(None, tuple(messages))}
    )
    body = {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "tools": [{"name": "read_file"}],
        "messages": anthropic_messages(tuple(messages)),
    }
    AnthropicRules().validate({"anthropic-version": "2023-06-01"}, body)


def test_the_estimate_counts_text_tools_and_images() -> None:
    tool = ToolSpec("t", "d" * 35, {"type": "object"})
    request = ModelRequest(
        "m",
        (user("x" * 350), UserMessage((ImagePart("AAAA", "image/png"),))),
        system="s" * 70,
        tools=(tool,),
    )
    chars = 350 + 70 + 1 + 35 + len(json.dumps({"type": "object"}))
    assert compaction.estimate(request) == int(chars / 3.5) + compaction.IMAGE_TOKENS


def test_the_estimate_counts_a_reasoning_items_encrypted_reasoning() -> None:
    item = json.dumps({"type": "reasoning", "encrypted_content": "e" * 7_000})
    bare = ModelRequest("m", (AssistantMessage((ThinkingPart("t"),)),))
    kept = ModelRequest("m", (AssistantMessage((ThinkingPart("t", item=item),)),))
    assert compaction.estimate(kept) - compaction.estimate(bare) >= 2_000


def test_too_full_is_a_share_of_the_window_less_the_answer() -> None:
    assert compaction.usable(WINDOW, MAX_TOKENS) == 9_000
    assert compaction.usable(1_000, 8_192) == 500  # the answer takes at most half
    assert not compaction.too_full(7_650, WINDOW, MAX_TOKENS)
    assert compaction.too_full(7_651, WINDOW, MAX_TOKENS)


def test_the_provider_s_count_over_the_estimate_scales_the_next_ones() -> None:
    """A tokenizer that counts 1.4 tokens where the estimate says 1 (a local code model's):
    the next estimates, a compacted conversation's too, are taken at 1.4 times; one that
    counts fewer never lowers them below the estimate."""
    budget = ContextBudget()
    assert budget.counted(1_400, 10, 1_000) == 1_410 and budget.tokens(5_500) == 7_700
    assert budget.too_full(5_500, WINDOW, MAX_TOKENS)  # 7,700 of 9,000: over 85 %
    request = ModelRequest("m", ())
    assert compaction.kept_budget(request, WINDOW, MAX_TOKENS, budget.scale) == pytest.approx(
        2_700 / 1.4
    )
    budget.counted(800, 10, 1_000)
    assert budget.tokens(5_500) == 5_500 and not budget.too_full(5_500, WINDOW, MAX_TOKENS)


def test_the_cut_keeps_the_latest_turns_whole() -> None:
    messages = turns(10, 2_100)  # each turn about 620 tokens: four fit in 2,700

    parts = compaction.split(messages, WINDOW, MAX_TOKENS)

    assert parts is not None
    assert parts.older == messages[:24] and parts.kept == messages[24:]
    assert isinstance(parts.kept[0], UserMessage) and text_of(parts.kept[0].parts[0]) == "prompt 6"
    valid_for_both(compaction.replaced("the summary", parts.kept))


def test_a_turn_larger_than_the_share_is_cut_between_its_tool_calls() -> None:
    messages: list[Message] = [user("old"), said("ok"), user("big job")]
    for n in range(8):
        messages += calling(f"c{n}", 2_100)

    parts = compaction.split(messages, WINDOW, MAX_TOKENS)

    assert parts is not None
    first = parts.kept[0]
    assert isinstance(first, AssistantMessage) and first.tool_calls[0].id == "c4"
    assert isinstance(parts.kept[-1], ToolResultsMessage)  # the loop goes on from there
    valid_for_both(compaction.replaced("the summary", parts.kept))
    valid_for_both([*parts.older, user(compaction.SUMMARY_REQUEST)])


def test_the_last_call_alone_over_the_share_is_kept_with_its_result_cut_down() -> None:
    content = "head " + "y" * 20_000 + " tail"
    messages = [
        user("old"),
        said("ok"),
        user("read it"),
        calling("huge")[0],
        ToolResultsMessage((ToolResultPart("huge", content),)),
    ]

    parts = compaction.split(messages, WINDOW, MAX_TOKENS)

    assert parts is not None and parts.kept[0] == messages[3]
    [result] = parts.kept[1].results  # type: ignore[union-attr]
    assert result.call_id == "huge"
    assert result.content.startswith("head y") and result.content.endswith("y tail")
    assert "characters cut here to fit the context window" in result.content
    assert compaction.estimate(ModelRequest("m", tuple(parts.kept))) <= (
        compaction.KEEP_SHARE * compaction.usable(WINDOW, MAX_TOKENS)
    )
    valid_for_both(compaction.replaced("the summary", parts.kept))


def test_shrink_cuts_the_largest_texts_first_and_leaves_answers() -> None:
    small = ToolResultsMessage((ToolResultPart("s", "z" * 700),))  # 200 tokens
    big = ToolResultsMessage((ToolResultPart("b1", "b" * 7_000), ToolResultPart("b2", "c" * 7_000)))
    answer = said("a" * 3_500)
    messages: list[Message] = [user("u" * 3_500), answer, small, big]

    shrunk = compaction.shrink(messages, 3_200)

    assert shrunk[1] is answer and shrunk[2] is small
    assert shrunk[0] is messages[0]  # enough was cut from the largest
    assert sum(compaction.estimate(ModelRequest("m", (m,))) for m in shrunk) <= 3_200
    assert all(len(r.content) < 7_000 for r in shrunk[3].results)  # type: ignore[union-attr]
    assert compaction.shrink(messages, 100_000) is messages


@pytest.mark.parametrize(
    ("message", "sizes"),
    [
        (
            "This model's maximum context length is 7000 tokens. However, you requested 13000 "
            "tokens (12000 in the messages, 1000 in the completion).",
            (12_000, 7_000),
        ),
        ("prompt is too long: 210000 tokens > 200000 maximum", (210_000, 200_000)),
        (
            "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease "
            "input length or `max_tokens` and try again",
            (190_000, 200_000),
        ),
        ("the request exceeds the available context size, try increasing it", (None, None)),
    ],
)
def test_a_refusal_says_how_large_the_prompt_and_the_window_are(
    message: str, sizes: tuple[int | None, int | None]
) -> None:
    error = ProviderError("p", message, status=400)
    assert error.context_exceeded and error.context_sizes == sizes
    assert not ProviderError("p", message, status=500).context_exceeded


def test_nothing_to_summarise_is_no_compaction() -> None:
    assert compaction.split([user("hello")], WINDOW, MAX_TOKENS) is None
    assert compaction.split(turns(2, 10), WINDOW, MAX_TOKENS) is None  # all of it fits
    assert compaction.split([], WINDOW, MAX_TOKENS) is None


def test_the_summary_call_names_the_tools_but_calls_none() -> None:
    messages = turns(10, 2_100)
    parts = compaction.split(messages, WINDOW, MAX_TOKENS)
    assert parts is not None
    tool = ToolSpec("read_file", "read", {"type": "object"})
    request = ModelRequest("m", tuple(messages), "system", (tool,), 8_000, reasoning="high")

    ask = compaction.summary_request(request, parts.older, "keep the paths", WINDOW)

    assert ask.answer_only and ask.tools == (tool,) and ask.system == "system"
    assert ask.reasoning is None and ask.max_tokens == compaction.SUMMARY_MAX_TOKENS
    assert ask.messages[:-1] == tuple(parts.older)
    last = ask.messages[-1]
    assert isinstance(last, UserMessage)
    assert text_of(last.parts[0]).endswith("The user asks to focus on: keep the paths")
    valid_for_both(list(ask.messages))


def test_older_messages_that_do_not_fit_the_summary_call_are_dropped_from_the_front() -> None:
    older = turns(30, 2_100)  # far more than the window

    ask = compaction.summary_request(ModelRequest("m", (), max_tokens=500), older, "", WINDOW)

    assert compaction.estimate(ask) <= compaction.COMPACT_AT * compaction.usable(WINDOW, 500)
    assert ask.messages[-2] == older[-1]
    first = ask.messages[0]
    assert isinstance(first, UserMessage)
    valid_for_both(list(ask.messages))


def test_the_stored_form_gives_the_same_conversation_back() -> None:
    kept: list[Message] = [
        user("go"),
        AssistantMessage(
            (
                ThinkingPart("hm", "sig"),
                TextPart("I'll look"),
                ToolCallPart("c1", "read_file", {"path": "a"}, '{"path": "a"}'),
            ),
            StopReason.TOOL_USE,
        ),
        ToolResultsMessage((ToolResultPart("c1", "text", True),)),
        UserMessage((ImagePart("AAAA", "image/png"), TextPart("see"))),
    ]
    body = compaction.to_body("summary", kept, "told", "m1")
    stored = json.loads(json.dumps(body))

    assert compaction.from_body(stored) == compaction.replaced("summary", kept)
    assert stored["notice"] == "told"
    with pytest.raises(ValueError, match="unknown message role"):
        transcript.message_from_json({"role": "system"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/compact", Command("compact", "")),
        ("  /compact keep the paths\nand tests ", Command("compact", "keep the paths\nand tests")),
        ("/compact\nfocus", Command("compact", "focus")),
        ("/compactor", None),
        ("/usr/bin/env is missing", None),
        ("/ compact", None),
        ("/", None),
        ("please /compact", None),
    ],
)
def test_commands_are_the_prompts_that_start_with_one(text: str, expected: Command | None) -> None:
    assert parse([{"type": "text", "text": text}]) == expected


def test_a_prompt_starting_with_something_else_runs_no_command() -> None:
    assert parse([]) is None
    assert (
        parse(
            [
                {"type": "image", "data": "", "mimeType": "image/png"},
                {"type": "text", "text": "/compact"},
            ]
        )
        is None
    )
