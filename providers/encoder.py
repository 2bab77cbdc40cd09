"""A conversation's wire messages as JSON, encoded once: each model call of a session
re-encodes only what is new since the one before (docs/architecture.md, "A model call").

A wire format turns each neutral message into zero or more wire messages (`Convert`), and
merges a wire message into the one before it where its API wants one message (`Merge`: two
user messages in a row). A wire message that nothing can be merged into any more is closed:
its JSON (`json.dumps`, as the whole body is encoded) is appended to one buffer, with the
length it had after each neutral message. The next call finds the longest run of the same
neutral messages (the same objects: `acp_fsm.conversation` keeps them) up to a point where no
wire message was open, cuts the buffer back to there, and converts only the rest. The buffer
is byte for byte what encoding the whole list would give: a provider's prompt cache sees the
same prefix, and a call's cost follows what is new, not the session's length.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from acp_fsm.providers.types import Message, ModelRequest

Convert = Callable[[Message], list[dict[str, Any]]]
"""The wire messages one neutral message becomes (none: nothing the API would accept)."""
Merge = Callable[[dict[str, Any], dict[str, Any]], bool]
"""Merge the second wire message into the first, in place; False when they stay apart."""
Scrub = Callable[[bytes], bytes]
"""What hides the secrets in what is sent (`acp_fsm.redact`): applied to each piece of the
body once, a closed message's JSON when it is closed (a secret never spans two pieces: they
meet where the JSON's structure is, between messages or keys)."""


def _as_is(data: bytes) -> bytes:
    return data


SEPARATOR = b", "  # between the items of a JSON array, as `json.dumps` writes them


class Closed(NamedTuple):
    """A wire message nothing more can be merged into: its JSON, and its role and first
    content block's type (what a wire may still look at: Anthropic's thinking rule)."""

    data: bytes
    role: str
    first: str | None


@dataclass(slots=True)
class Encoded:
    """A conversation's wire messages: the closed ones as JSON joined (`joined`, the last
    two of them also apart in `last`), then the last one as a dict when it is still open (it
    may be changed before the body is written)."""

    joined: bytes | bytearray
    last: list[Closed]
    open: dict[str, Any] | None
    scrub: Scrub = _as_is

    def reopened(self) -> dict[str, Any] | None:
        """The last wire message as a dict that may be changed (Anthropic marks a cache
        breakpoint in it): the open one, else the last closed one decoded again."""
        if self.open is None and self.last:
            closed = self.last.pop()
            self.joined = self.joined[: len(self.joined) - len(closed.data)].removesuffix(SEPARATOR)
            self.open = json.loads(closed.data)  # scrubbed already: scrubbed again, the same
        return self.open

    def json(self, head: Sequence[str] = ()) -> list[bytes | bytearray]:
        """The JSON array of the wire messages, after `head` (texts of messages that go
        first: OpenAI's system message), in pieces to join (once: it may be megabytes)."""
        items: list[bytes | bytearray] = [self.scrub(item.encode()) for item in head]
        if self.joined:
            items.append(self.joined)
        if self.open is not None:
            items.append(self.scrub(json.dumps(self.open).encode()))
        pieces: list[bytes | bytearray] = [b"["]
        for i, item in enumerate(items):
            pieces += (SEPARATOR, item) if i else (item,)
        pieces.append(b"]")
        return pieces


class Encoder:
    """Encodes the successive requests of one conversation (see the module docstring).
    `open_role` is the role whose wire messages may still take the next one in."""

    def __init__(self, convert: Convert, merge: Merge, open_role: str = "user") -> None:
        self._convert = convert
        self._merge = merge
        self._open_role = open_role
        self._seen: tuple[Message, ...] = ()  # the neutral messages of the last call
        self._scrub: Scrub = _as_is  # what the closed messages were scrubbed with
        self._joined = bytearray()  # the JSON of the closed wire messages, joined
        self._last: list[Closed] = []  # the last two of them
        # After the first i messages of `_seen`: the length of `_joined` and the last two
        # closed (None where a wire message was open: no call may resume there).
        self._marks: list[tuple[int, list[Closed]] | None] = [(0, [])]

    def encode(self, messages: Sequence[Message], scrub: Scrub | None = None) -> Encoded:
        """The wire messages of `messages`, reusing what the last call closed, secrets hidden
        by `scrub` (other secrets than last time: nothing is reused)."""
        scrub = scrub or _as_is
        if scrub != self._scrub:
            self._seen, self._scrub = (), scrub
        start = self._resume_point(messages)
        mark = self._marks[start]
        assert mark is not None
        del self._joined[mark[0] :]
        self._last, self._marks = list(mark[1]), self._marks[: start + 1]
        current: dict[str, Any] | None = None
        for message in messages[start:]:
            for wire in self._convert(message):
                if current is not None and self._merge(current, wire):
                    continue
                if current is not None:
                    self._close(current)
                current = wire
                if wire.get("role") != self._open_role:
                    self._close(wire)
                    current = None
            self._marks.append(
                None if current is not None else (len(self._joined), self._last[-2:])
            )
        self._seen = tuple(messages)
        return Encoded(self._joined, self._last[-2:], current, scrub)

    def _close(self, wire: dict[str, Any]) -> None:
        data = self._scrub(json.dumps(wire).encode())
        if self._joined:
            self._joined += SEPARATOR
        self._joined += data
        content = wire.get("content")
        first = content[0].get("type") if isinstance(content, list) and content else None
        self._last = [*self._last[-1:], Closed(data, str(wire.get("role")), first)]

    def _resume_point(self, messages: Sequence[Message]) -> int:
        """The longest run of the last call's messages that `messages` starts with (the same
        messages, equal: they encode the same), back to a point where no wire message was
        open. Usually the whole of the last call's: one comparison, in C, that takes the
        same objects as equal at once."""
        seen, messages = self._seen, tuple(messages)
        point = min(len(seen), len(messages))
        if messages[:point] != seen[:point]:  # replaced, or cut short: find where
            point = next(i for i in range(point) if messages[i] != seen[i])
        while self._marks[point] is None:
            point -= 1
        return point


MESSAGES = "messages"  # the key of the body where `splice` puts the messages' JSON


def encoder_of(request: ModelRequest, wire: str, make: Callable[[], Encoder]) -> Encoder:
    """The encoder of `request`'s conversation for `wire`, kept in its `memo` (a fresh one,
    encoding everything, for a request without one)."""
    memo = request.memo
    if memo is None:
        return make()
    found = memo.get(wire)
    if not isinstance(found, Encoder):
        found = memo[wire] = make()
    return found


def splice(
    body: dict[str, Any],
    messages: list[bytes | bytearray],
    scrub: Scrub | None = None,
    key: str = MESSAGES,
) -> bytes:
    """`json.dumps(body).encode()` with the JSON `messages` (its pieces, scrubbed) as the
    value of its `key` (`MESSAGES`; the Responses API's `input`), byte for byte what encoding
    the body whole gives (the same separators, the same key order), the rest scrubbed by
    `scrub`."""
    scrub = scrub or _as_is
    keys = list(body)
    at = keys.index(key)
    before = json.dumps({k: body[k] for k in keys[:at]})[:-1]
    after = {k: body[k] for k in keys[at + 1 :]}
    rest = f", {json.dumps(after)[1:]}" if after else "}"
    head = f'{before}{", " if at else ""}"{key}": '
    return b"".join((scrub(head.encode()), *messages, scrub(rest.encode())))


def encode_all(messages: Sequence[Message], convert: Convert, merge: Merge) -> list[Any]:
    """The wire messages of `messages` as dicts, without any reuse (the reference: the JSON
    of this list is what `Encoder` gives)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        for wire in convert(message):
            if not (out and out[-1].get("role") == "user" and merge(out[-1], wire)):
                out.append(wire)
    return out
