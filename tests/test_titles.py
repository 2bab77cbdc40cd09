"""The title call's request and what is kept of its answer (`acp_fsm.titles`); the call itself,
its storage and its cancellation are tested end to end (tests/e2e/test_titles.py)."""

from __future__ import annotations

import pytest

from acp_fsm import titles
from acp_fsm.providers.types import (
    AssistantMessage,
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    UserMessage,
)


@pytest.mark.parametrize(
    ("answer", "title"),
    [
        ("Fix the login test", "Fix the login test"),
        ("  Fix the login test.  \n", "Fix the login test"),
        ('"Fix the login test"', "Fix the login test"),
        ("“Réparer le test de connexion”", "Réparer le test de connexion"),
        ("Title: Fix login", "Fix login"),
        ("session title - Fix login", "Fix login"),
        ("**Title:** `Fix login`!", "Fix login"),
        ("# Fix login", "Fix login"),
        ("- Fix login\n- Other idea", "Fix login"),
        ("Here is a title:\n\nFix login", "Fix login"),
        ("Title:\nFix login", "Fix login"),
        ("<think>\nthe user wants…\n</think>\n\nFix login", "Fix login"),
        (  # ten words at most
            "one two three four five six seven eight nine ten eleven",
            "one two three four five six seven eight nine ten",
        ),
        ("修复登录测试。", "修复登录测试"),
        ("Fix the\x07 login\ttest", "Fix the login test"),
        ("", None),
        ("   \n\n", None),
        ('"" ** ...', None),
        ("<think>never closed", None),
        ("Here is a title:", None),
    ],
)
def test_the_title_in_an_answer(answer: str, title: str | None) -> None:
    assert titles.cleaned(answer) == title


def test_a_title_is_cut_to_its_characters_after_the_secrets_are_scrubbed() -> None:
    long = "Refactoring " + "x" * 100
    assert titles.cleaned(long) == ("Refactoring " + "x" * 100)[:79] + "…"
    secret = "sk-0123456789abcdef"
    assert titles.cleaned(f"Key {secret} leak", lambda t: t.replace(secret, "[redacted]")) == (
        "Key [redacted] leak"
    )


def test_the_opening_is_the_first_prompt_and_the_first_answer() -> None:
    messages: list[Message] = [
        UserMessage((TextPart("Fix"), ImagePart("data", "image/png"), TextPart("the test"))),
        AssistantMessage((ToolCallPart("c1", "read_file", {}),)),
        AssistantMessage((TextPart("Done: it passes"),)),
        UserMessage((TextPart("thanks"),)),
    ]
    assert titles.opening(messages) == ("Fix the test", "")  # the first answer said nothing
    messages[1] = AssistantMessage((TextPart("Reading it."),))
    assert titles.opening(messages) == ("Fix the test", "Reading it.")
    assert titles.opening([UserMessage((ImagePart("data", "image/png"),))]) is None
    assert titles.opening([]) is None
    long = titles.opening([UserMessage((TextPart("y" * 5000),))])
    assert long is not None and len(long[0]) == titles.PROMPT_CHARS


@pytest.mark.parametrize(
    ("provider", "model", "room", "reasoning"),
    [
        ("openai", "gpt-5-mini", titles.TITLE_MAX_TOKENS + titles.REASONING_ROOM_TOKENS, "low"),
        ("openai", "o3", titles.TITLE_MAX_TOKENS + titles.REASONING_ROOM_TOKENS, "low"),
        ("openai", "gpt-4.1-mini", titles.TITLE_MAX_TOKENS, None),
        ("openai", "gemma-3-270m", titles.TITLE_MAX_TOKENS, None),
        ("anthropic", "claude-sonnet-4-5", titles.TITLE_MAX_TOKENS, None),
    ],
)
def test_the_title_request(provider: str, model: str, room: int, reasoning: str | None) -> None:
    request = titles.request(model, provider, "Fix it", "On it")
    assert (request.model, request.tools, request.max_tokens) == (model, (), room)
    assert request.reasoning == reasoning
    assert request.system == titles.INSTRUCTIONS and request.memo is None
    [message] = request.messages
    assert message == UserMessage(
        (TextPart("The user wrote:\nFix it\n\nThe assistant answered:\nOn it"),)
    )
    assert "answered" not in str(titles.request(model, provider, "Fix it", "").messages)
