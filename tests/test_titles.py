"""The first prompt's words as a title (`acp_fsm.prompt.title_of`), which model makes a better
one, the title call's request and what is kept of its answer (`acp_fsm.titles`); the call
itself, its storage and its cancellation are tested end to end (tests/e2e/test_titles.py)."""

from __future__ import annotations

from typing import Any

import pytest

from acp_fsm import titles
from acp_fsm.prompt import TITLE_CHARS, title_of
from acp_fsm.providers.config import load_config
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


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("  Fix   the login\ttest  ", "Fix the login test"),
        ("\n\n  Fix the login test\nTraceback (most recent call last):\n...", "Fix the login test"),
        ("/review main..HEAD\nand the tests", "/review main..HEAD"),  # a command, as typed
        # cut after the last whole word that fits
        ("Please " + "refactor " * 12, "Please" + " refactor" * 8 + "…"),
        ("x" * 100, "x" * (TITLE_CHARS - 1) + "…"),  # one long word: cut inside it
        (" \n\t\n", None),
    ],
)
def test_the_first_prompt_s_words_as_a_title(text: str, title: str | None) -> None:
    assert title_of([{"type": "text", "text": text}]) == title
    if title is not None:
        assert len(title) <= TITLE_CHARS


def test_the_title_is_the_first_text_block_s_first_line_scrubbed_before_the_cut() -> None:
    secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
    blocks: list[Any] = [
        {"type": "image", "mimeType": "image/png", "data": "AAAA"},
        {"type": "text", "text": f"Use {secret}" + " and more" * 10},
    ]
    title = title_of(blocks, clean=lambda t: t.replace(secret, "[redacted]"))
    assert title is not None and title.startswith("Use [redacted] and more")
    assert title.endswith("more…") and "sk-" not in title
    assert title_of([{"type": "image", "mimeType": "image/png", "data": "AAAA"}]) is None


@pytest.mark.parametrize(
    ("env", "chosen", "model"),
    [
        ({"ACP_FSM_PROVIDER": "openai"}, None, "session-model"),  # OpenAI's own API
        ({"ACP_FSM_PROVIDER": "anthropic"}, None, "session-model"),  # Anthropic's
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, None, None),  # a local server
        ({"ACP_FSM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": "http://[::1]:8080"}, None, None),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, "small", "small"),  # asked for
        ({"ACP_FSM_PROVIDER": "openai"}, "gpt-5-nano", "gpt-5-nano"),
    ],
)
def test_which_model_makes_the_title(
    env: dict[str, str], chosen: str | None, model: str | None
) -> None:
    """None on a compatible server: a call would evict a single-slot server's prompt cache."""
    assert titles.model_of(load_config(env), chosen, "session-model") == model
