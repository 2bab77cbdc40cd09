"""Context compaction: keeping a long session within the model's context window.

Pure decisions, no IO (docs/compaction.md): how many tokens a request will take, when to
compact, where to cut the conversation, the model call that summarises the older part, and the
conversation that replaces it. The turn makes the call and the session stores the result.

The cut is made before a user or an assistant message, never before a tool results message,
so every tool call keeps its result next to it and both providers' pairing rules still hold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from acp_fsm import transcript
from acp_fsm.providers.types import (
    AssistantMessage,
    ImagePart,
    Message,
    ModelRequest,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultsMessage,
    UserMessage,
)

T = TypeVar("T")

CHARS_PER_TOKEN = 3.5  # on the safe side: English runs near 4, code nearer 3
IMAGE_TOKENS = 1600  # what one image costs, roughly, on both providers
COMPACT_AT = 0.85  # of the usable window (the window less the room for the answer)
KEEP_SHARE = 0.3  # of the usable window, at most, stays as it was (the latest turns)
SUMMARY_MAX_TOKENS = 4096
MIN_CUT_TOKENS = 200  # a text cut to fit keeps at least this much
CUT_NOTE = "\n[… {:,} characters cut here to fit the context window …]\n"
SUMMARY_HEADER = (
    "This session continues an earlier conversation, compacted to fit the "
    "context window. Summary of the earlier part:"
)
SUMMARY_REQUEST = (
    "The conversation above is about to be replaced by a summary, to stay within the context "
    "window; the latest messages are kept as they are. Write that summary for yourself, to "
    "go on with the work without the earlier messages. Keep: the user's goals and requests, "
    "decisions made, the files read or changed (with paths) and what changed, commands run "
    "and their outcomes, errors met and how they were solved, the current plan and what is "
    "left to do. Be concise and factual. Do not call tools: answer with the summary only."
)
OMITTED = "(Earlier messages were dropped to fit the context window.)"
NOTHING_TO_COMPACT = "Nothing to compact yet: the conversation is short enough to be kept as it is."


class Compaction(NamedTuple):
    """A conversation split for compaction: `older` is summarised, `kept` stays."""

    older: list[Message]
    kept: list[Message]


def usable(window: int, reserve: int) -> int:
    """The tokens a request may take: the window less `reserve`, the room kept for the answer
    (its max_tokens, thinking included), at most half the window."""
    return max(1, window - min(reserve, window // 2))


class Size(NamedTuple):
    """How much text and how many images some messages hold."""

    chars: int
    images: int

    def plus(self, other: Size) -> Size:
        return Size(self.chars + other.chars, self.images + other.images)


def size_of(messages: Iterable[Message]) -> Size:
    chars = images = 0
    for message in messages:
        size, pictures = _size(message)
        chars += size
        images += pictures
    return Size(chars, images)


def estimate(request: ModelRequest, messages: Size | None = None) -> int:
    """The tokens `request` takes, estimated from its size (no tokenizer at hand); `messages`
    is the size of its messages when it is known (`Conversation.size`)."""
    chars = len(request.system or "") + sum(
        len(t.name) + len(t.description) + _schema_chars(t.input_schema) for t in request.tools
    )
    found = size_of(request.messages) if messages is None else messages
    return int((chars + found.chars) / CHARS_PER_TOKEN) + found.images * IMAGE_TOKENS


# The JSON length of tool schemas seen, by the schema object (kept, so its id is never
# another's): the same tools are estimated at every model call. At most this many are kept.
_SCHEMA_CHARS: dict[int, tuple[Any, int]] = {}
MAX_SCHEMAS_KEPT = 512


def _schema_chars(schema: Any) -> int:
    known = _SCHEMA_CHARS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    if len(_SCHEMA_CHARS) >= MAX_SCHEMAS_KEPT:
        _SCHEMA_CHARS.clear()
    chars = len(json.dumps(schema))
    _SCHEMA_CHARS[id(schema)] = (schema, chars)
    return chars


def _size(message: Message) -> tuple[int, int]:
    """A message's characters and images."""
    if isinstance(message, ToolResultsMessage):
        return sum(len(r.content) + len(r.call_id) for r in message.results), 0
    chars = images = 0
    for part in message.parts:
        if isinstance(part, TextPart):
            chars += len(part.text)
        elif isinstance(part, ImagePart):
            images += 1
        elif isinstance(part, ThinkingPart):
            # a reasoning item's encrypted reasoning is input the model reads again
            chars += len(part.text) + len(part.signature or "") + len(part.redacted or "")
            chars += len(part.item or "")
        elif isinstance(part, ToolCallPart):
            chars += len(part.name) + len(part.raw_arguments or json.dumps(part.arguments))
    return chars, images


def _tokens(message: Message) -> float:
    chars, images = _size(message)
    return chars / CHARS_PER_TOKEN + images * IMAGE_TOKENS


def too_full(tokens: int, window: int, reserve: int) -> bool:
    """Whether a request of `tokens` is to be compacted before it is sent."""
    return tokens > COMPACT_AT * usable(window, reserve)


def split(
    messages: list[Message],
    window: int,
    reserve: int,
    *,
    on_demand: bool = False,
    budget: float | None = None,
) -> Compaction | None:
    """Where to cut: the latest turns that fit `budget` (by default `KEEP_SHARE` of the
    window) stay, starting at a user message where one fits (else at an assistant message: at
    least the last one stays, its results cut down to fit if they are larger than that).
    `on_demand` (/compact) keeps at most the last turn. None when nothing before the cut
    would be left to summarise."""
    if budget is None:
        budget = KEEP_SHARE * usable(window, reserve)
    if on_demand:
        last = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=0)
        budget = min(budget, sum(_tokens(m) for m in messages[last:]))
    fitting: list[int] = []  # cut points whose tail fits, latest first
    tail = 0.0
    for i in range(len(messages) - 1, -1, -1):
        tail += _tokens(messages[i])
        if tail > budget and fitting:
            break
        if not isinstance(messages[i], ToolResultsMessage):
            fitting.append(i)
            if tail > budget:
                break  # the last turn alone is over: it stays, cut down
    turns = [i for i in fitting if isinstance(messages[i], UserMessage)]
    cut = min(turns or fitting or [0])
    if cut == 0:
        return None
    return Compaction(messages[:cut], shrink(messages[cut:], budget))


def shrink(messages: list[Message], budget: float) -> list[Message]:
    """`messages` within `budget` tokens, if cutting tool results and the user's text down
    (the largest first, never below `MIN_CUT_TOKENS` each) can get them there; the middle of
    a text is cut, with a note saying how much."""

    def cut(message: Message, room: float, size: float) -> Message:
        room = max(MIN_CUT_TOKENS, room)
        return _cut(message, room / size) if room < size else message

    return largest_first(messages, _tokens, budget, cut)


def largest_first(
    items: list[T], size: Callable[[T], float], budget: float, cut: Callable[[T, float, float], T]
) -> list[T]:
    """`items` brought within `budget` (as `size` counts) by cutting the largest first:
    `cut(item, room, its size)` gives the item in about `room`, until the rest fits. The
    items themselves when they fit."""
    sizes = [size(item) for item in items]
    excess = sum(sizes) - budget
    if excess <= 0:
        return items
    out = list(items)
    for i in sorted(range(len(out)), key=lambda i: -sizes[i]):
        if excess <= 0:
            break
        out[i] = cut(out[i], sizes[i] - excess, sizes[i])
        excess -= sizes[i] - size(out[i])
    return out


def _cut(message: Message, share: float) -> Message:
    """`message` with each of its texts (results, the user's text) cut to `share` of it."""
    if isinstance(message, ToolResultsMessage):
        return ToolResultsMessage(
            tuple(
                r._replace(content=cut_text(r.content, int(len(r.content) * share)))
                for r in message.results
            )
        )
    if isinstance(message, UserMessage):
        return UserMessage(
            tuple(
                TextPart(cut_text(p.text, int(len(p.text) * share)))
                if isinstance(p, TextPart)
                else p
                for p in message.parts
            )
        )
    return message  # an answer is bounded by max_tokens


def cut_text(text: str, room: int, note: str = CUT_NOTE) -> str:
    """`text` in at most `room` characters: when it is longer, its start (two thirds) and its
    end, with `note` between them saying how many characters were cut (a text's start says
    what it is, its end how it ended: an error, a summary, a note to read on)."""
    if len(text) <= room:
        return text
    keep = max(room - len(note) - 8, 0)  # the note, and its number
    head = keep * 2 // 3
    tail = keep - head
    cut = note.format(len(text) - head - tail)
    return f"{text[:head]}{cut}{text[len(text) - tail :] if tail else ''}"


def result_chars(window: int, reserve: int) -> int:
    """The most characters of one tool result a request could carry (all the room a request
    has before it is compacted): a result is cut to it before it is stored, since more could
    never be sent."""
    return int(COMPACT_AT * usable(window, reserve) * CHARS_PER_TOKEN)


def summary_request(
    request: ModelRequest, older: list[Message], focus: str, window: int, scale: float = 1.0
) -> ModelRequest:
    """The model call that summarises `older`: the same system prompt and tools (the
    transcript names them; the model may call none), the older messages (the oldest dropped,
    then the largest cut down, if even they do not fit) and the request for a summary, with
    the user's `focus`; the window in estimated tokens is the provider's over `scale`."""
    ask = SUMMARY_REQUEST + (f"\n\nThe user asks to focus on: {focus}" if focus else "")
    max_tokens = min(request.max_tokens, SUMMARY_MAX_TOKENS)
    room = COMPACT_AT * usable(window, max_tokens) / scale - estimate(
        request._replace(messages=(UserMessage((TextPart(ask),)),))
    )
    total = sum(_tokens(m) for m in older)
    start = 0
    while total > room and (later := _next_cut(older, start)) is not None:
        total -= sum(_tokens(m) for m in older[start:later])
        start = later
    older = shrink(older[start:], room)
    if not isinstance(older[0], UserMessage):
        older = [UserMessage((TextPart(OMITTED),)), *older]
    return request._replace(
        messages=(*older, UserMessage((TextPart(ask),))),
        max_tokens=max_tokens,
        reasoning=None,
        answer_only=True,
        memo=None,
    )  # its own messages: nothing to reuse


def _next_cut(messages: list[Message], after: int) -> int | None:
    """The first cut point after index `after`."""
    return next(
        (
            i
            for i in range(after + 1, len(messages))
            if not isinstance(messages[i], ToolResultsMessage)
        ),
        None,
    )


def summary_of(message: AssistantMessage) -> str:
    """The summary the model wrote (its text; any thinking aside)."""
    return message.text.strip()


def replaced(summary: str | None, kept: list[Message]) -> list[Message]:
    """The conversation after compaction: the summary, as the user's (or, when there is none,
    a note that earlier messages were dropped), then what was kept."""
    head = f"{SUMMARY_HEADER}\n\n{summary}" if summary else OMITTED
    return [UserMessage((TextPart(head),)), *kept]


def to_body(
    summary: str | None, kept: list[Message], notice: str, message_id: str
) -> dict[str, Any]:
    """The stored compaction: the whole new conversation (its summary, None when the older
    messages were dropped, and the kept messages) and what the user was told (message
    `message_id`)."""
    return {
        "summary": summary,
        "kept": [transcript.message_to_json(m) for m in kept],
        "notice": notice,
        "messageId": message_id,
    }


def from_body(body: dict[str, Any]) -> list[Message]:
    """The conversation a stored compaction left (see `to_body`)."""
    return replaced(body["summary"], [transcript.message_from_json(m) for m in body["kept"]])


def kept_budget(request: ModelRequest, window: int, reserve: int, scale: float) -> float:
    """The tokens (as estimated) the kept part of a compacted conversation may take:
    `KEEP_SHARE` of the usable window, less where the system prompt and the tools leave less
    room than that below the threshold (a small window; at least `MIN_CUT_TOKENS`, for the
    last message cut down); the window in estimated tokens, the provider's over `scale`."""
    space = usable(window, reserve) / scale
    room = COMPACT_AT * space - fixed_part(request)
    return max(float(MIN_CUT_TOKENS), min(KEEP_SHARE * space, room))


def fixed_part(request: ModelRequest) -> int:
    """The tokens of what every request carries whatever the conversation: the system prompt
    and the tools."""
    return estimate(request._replace(messages=()))


def notice(before: int, after: int, summarised: int, dropped: str | None = None) -> str:
    """What the user is told of a compaction; `dropped` says why the older messages were
    dropped instead of summarised."""
    sizes = f"(about {before:,} → {after:,} tokens)"
    if dropped is None:
        return (
            f"Context compacted: {summarised} earlier messages were summarised to stay "
            f"within the model's context window {sizes}."
        )
    return (
        f"Context compacted: {summarised} earlier messages were dropped to stay within the "
        f"model's context window {sizes}, without a summary: {dropped}."
    )


def too_small(fixed: int, window: int) -> str:
    """Why no summary is asked for when the system prompt and tools alone fill the window."""
    return (
        f"the system prompt and the tools alone take about {fixed:,} tokens, more than a "
        f"context window of {window:,} tokens leaves room for, so a summary would not "
        "make the conversation fit. Give the model a larger context (the server's own "
        "setting, such as llama-cpp-python's --n_ctx) and set ACP_FSM_CONTEXT_WINDOW to it"
    )
