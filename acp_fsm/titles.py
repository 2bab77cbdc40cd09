"""The title a model makes of a session: which model makes it (none on a compatible server,
unless the user names one), the request of that one short call, and what is kept of its
answer. Pure: `acp_fsm.session.naming` makes the call, stores and tells the title.

The call sees the start of the conversation only (the first prompt and the beginning of the
first answer, each cut to a named limit), offers no tools and may write a few tokens. Its
answer is taken as a small model may give it: a title wrapped in quotes or markdown, after
"Title:" or an introduction line, or rambling on; what is kept is the first line that holds a
title, cut to a few words. An answer without one keeps the first prompt's words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from acp_fsm import config_options
from acp_fsm.errors import BadRequest
from acp_fsm.front_matter import shortened
from acp_fsm.prompt import TITLE_CHARS
from acp_fsm.providers.config import OPENAI, ProviderConfig
from acp_fsm.providers.types import AssistantMessage, Message, ModelRequest, TextPart, UserMessage

# The answer's room: a title of a few words, and some for a model that says more.
TITLE_MAX_TOKENS = 48
# An OpenAI reasoning model thinks within the same limit (at effort "low" here): that much
# more, or it may spend all of it thinking and answer nothing.
REASONING_ROOM_TOKENS = 1024
REASONING_EFFORT = "low"
PROMPT_CHARS = 2000  # of the first prompt, sent to the title call
ANSWER_CHARS = 1000  # of the first answer, the same
MAX_WORDS = 10  # of a title kept (the instructions ask for 3 to 7)
USER_TITLE_CHARS = 200  # of a title the user sets (`session/set_title`): theirs, kept longer
TITLE_ENTRY = "title"  # the stored entry of a title the user set
INSTRUCTIONS = (
    "You name conversations. Write a title of 3 to 7 words for the conversation the user "
    "shows you, in its language, saying what the user wants. Answer with the title alone: "
    "no quotes, no markdown, no full stop at the end."
)

# Reasoning that some local models write into the answer itself.
_THINKING = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_MARKER = re.compile(r"^(#+|[-*+>•]|\d+[.)])\s+")  # a heading, a list item, a quote
# "Title:", "Title -" (a colon, full-width too; a hyphen, an en or em dash).
_LABEL = re.compile(r"^((session|conversation|chat)\s+)?title\s*[:\uff1a\-\u2013\u2014]\s*", re.I)
# Quotes a title may come in: ASCII, typographic, guillemets, CJK corner brackets.
_QUOTES = "\"'`“”\u2018\u2019«»„「」『』"
# What ends a sentence or a clause, ASCII and full-width (CJK), and an ellipsis.
_END = ".!?;:,。\uff01\uff1f\uff1b\uff1a、…"


def opening(messages: Sequence[Message]) -> tuple[str, str] | None:
    """The start of a conversation: the text of its first user message and of the first
    answer after it (each cut to its limit), or None when that message has no text."""
    for at, message in enumerate(messages):
        if not isinstance(message, UserMessage):
            continue
        prompt = " ".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
        if not prompt:
            return None
        answer = next(
            (m.text.strip() for m in messages[at + 1 :] if isinstance(m, AssistantMessage)), ""
        )
        return shortened(prompt, PROMPT_CHARS), shortened(answer, ANSWER_CHARS)
    return None


def model_of(config: ProviderConfig, chosen: str | None, session_model: str) -> str | None:
    """The model that makes a session's title: the one the user `chosen`
    (ACP_FSM_TITLE_MODEL), else the session's on the providers' own APIs; None on a compatible
    server, whose title is the first prompt's words: a call there would evict a single-slot
    server's prompt cache, and the next turn would read the whole conversation again."""
    if chosen is not None:
        return chosen
    return session_model if config.official else None


def request(model: str, provider: str, prompt: str, answer: str) -> ModelRequest:
    """The title call: no tools, a few tokens, the instructions and the conversation's start;
    an OpenAI model that reasons is asked to reason little (with room for it)."""
    shown = f"The user wrote:\n{prompt}"
    if answer:
        shown += f"\n\nThe assistant answered:\n{answer}"
    reasons = provider == OPENAI and config_options.thinks(provider, model)
    return ModelRequest(
        model=model,
        messages=(UserMessage((TextPart(shown),)),),
        system=INSTRUCTIONS,
        max_tokens=TITLE_MAX_TOKENS + (REASONING_ROOM_TOKENS if reasons else 0),
        reasoning=REASONING_EFFORT if reasons else None,
    )


def cleaned(answer: str, clean: Callable[[str], str] = str) -> str | None:
    """The title in a model's answer (`clean`ed: secrets scrubbed before any cut), at most
    `MAX_WORDS` words and `TITLE_CHARS` characters; None when the answer holds none."""
    text = _THINKING.sub("", clean(answer))
    for line in text.splitlines():
        title = _title_in(line)
        if title:
            words = title.split()
            return shortened(" ".join(words[:MAX_WORDS]), TITLE_CHARS)
    return None


def _title_in(line: str) -> str:
    """A line of the answer as a title: "" when it holds none (an introduction such as
    "Here is a title:" holds none)."""
    line = "".join(c if c.isprintable() else " " for c in line if c != "`").replace("**", "")
    line = _LABEL.sub("", _MARKER.sub("", line.strip()))
    if line.endswith((":", "\uff1a")):
        return ""
    line = line.strip(f"{_QUOTES}* \t").rstrip(_END).strip(f"{_QUOTES}* \t")
    line = " ".join(line.split())
    return line if any(c.isalnum() for c in line) else ""


def user_title(title: str) -> str:
    """A title the user set, as it is stored (ACP lets the agent normalise it): every run of
    whitespace, line breaks included, one space, trimmed, cut at `USER_TITLE_CHARS` (on a
    word boundary where one is near); `BadRequest` when nothing is left."""
    kept = " ".join(title.split())
    if not kept:
        raise BadRequest("title", "empty; a session's title needs a visible character")
    if len(kept) <= USER_TITLE_CHARS:
        return kept
    cut = kept[:USER_TITLE_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > USER_TITLE_CHARS // 2 else cut).rstrip() + "…"


def set_by_user(entries: Sequence[Any]) -> str | None:
    """The last title the user set among stored `entries` (None: they set none)."""
    for entry in reversed(entries):
        if entry.kind == TITLE_ENTRY and isinstance(title := entry.body.get("title"), str):
            return title
    return None
