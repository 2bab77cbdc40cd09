"""Configured secrets never leave the process: not to the editor, not into the store, not to
the model, not into a command's environment.

A secret is the value of a provider key or of any `*_API_KEY`, `*_TOKEN` or `*_SECRET`
variable of at least `env_vars.MIN_SECRET_CHARS` characters (shorter values, such as the dummy
keys local servers accept, would match ordinary text). `Secrets.scrub` replaces each one in an
encoded JSON line, as written raw and as JSON escapes it, by `[redacted]`. It is applied at
the three sinks every piece of content passes through: the protocol output, the store and the
provider request body. Nothing upstream of them needs to care. See docs/redaction.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from acp_fsm import env_vars

REDACTED = "[redacted]"
# Lists of `{name, value}` pairs whose values are secrets whatever their names: an MCP
# server's HTTP headers (an `Authorization`) and its environment (a token), as ACP gives them.
SECRET_PAIRS = ("headers", "env")
# The shortest piece of a secret `Secrets.trim` removes at a cut: shorter ones tell little,
# and would eat ordinary output that happens to match a key's first or last characters.
MIN_FRAGMENT_CHARS = 4


class Secrets:
    """The secrets to scrub, as the byte patterns under which they may appear."""

    def __init__(self, values: Iterable[str]) -> None:
        patterns: set[bytes] = set()
        for value in values:
            if value:
                patterns.add(value.encode("utf-8", "surrogatepass"))
                patterns.add(json.dumps(value)[1:-1].encode())  # \\uXXXX, \\" and the like
                patterns.add(
                    json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
                )
        texts = {v for v in values if v}
        self._count = len(texts)
        self._secrets = sorted(texts, key=len, reverse=True)
        # One alternation, longest first (a secret that contains another is replaced whole):
        # the regex engine scans a line once, ten times faster than one search per secret.
        self._bytes = _alternation(patterns)
        self._text = (
            re.compile("|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True)))
            if texts
            else None
        )
        # What a [redacted] in scrubbed text can stand for: a secret, or the literal text.
        self._tokens = (
            re.compile(f"{self._text.pattern}|{re.escape(REDACTED)}")
            if self._text is not None
            else None
        )

    def __repr__(self) -> str:
        return f"<Secrets {self._count}>"

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[str]:
        return iter(self._secrets)

    def __contains__(self, value: object) -> bool:
        return value in self._secrets

    def scrub(self, data: bytes) -> bytes:
        """`data` (encoded JSON) with every secret replaced by `[redacted]`."""
        if self._bytes is None or self._bytes.search(data) is None:
            return data
        return self._bytes.sub(_REDACTED_BYTES, data)

    def scrub_text(self, text: str) -> str:
        if self._text is None or self._text.search(text) is None:
            return text
        return self._text.sub(REDACTED, text)

    def trim(self, text: str, *, start: bool = False, end: bool = False) -> str:
        """`text` (scrubbed) as a piece cut from a longer text, without the piece of a secret
        a cut may have left at its `start` (a secret's end) or its `end` (a secret's
        beginning), if `MIN_FRAGMENT_CHARS` long or longer: a scrub cannot recognise a secret
        that is not whole. Scrub before cutting where the whole text is at hand; this is for
        what is cut as it streams."""
        for secret in self._secrets:
            longest = min(len(secret) - 1, len(text))
            if end:
                cut = next(
                    (
                        k
                        for k in range(longest, MIN_FRAGMENT_CHARS - 1, -1)
                        if text.endswith(secret[:k])
                    ),
                    0,
                )
                text = text[: len(text) - cut]
            if start:
                cut = next(
                    (
                        k
                        for k in range(longest, MIN_FRAGMENT_CHARS - 1, -1)
                        if text.startswith(secret[-k:])
                    ),
                    0,
                )
                text = text[cut:]
        return text

    def restore(self, written: str, original: str | None) -> str:
        """Text the model wrote from what it was shown of `original` (`[redacted]` where that
        holds a secret), with the secrets put back where the model kept them: rewriting a
        file must not replace the user's key by `[redacted]`.

        Lines are aligned with what the model saw: a line it kept is the original line; a
        line it changed gets back, in order, what each `[redacted]` of the original line
        stood for, when it has as many; any other `[redacted]` stays the literal text the
        model wrote (a new placeholder never receives a key)."""
        if (
            REDACTED not in written
            or not original
            or self._text is None
            or self._text.search(original) is None
        ):
            return written
        import difflib  # not on the startup path, which scrubs

        old_lines = original.splitlines(keepends=True)
        seen = [self.scrub_text(line) for line in old_lines]
        new_lines = written.splitlines(keepends=True)
        out: list[str] = []
        matcher = difflib.SequenceMatcher(None, seen, new_lines, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                out += old_lines[i1:i2]
            elif tag == "replace" and i2 - i1 == j2 - j1:
                out += [
                    self._restore_line(new, old)
                    for new, old in zip(new_lines[j1:j2], old_lines[i1:i2], strict=True)
                ]
            else:
                out += new_lines[j1:j2]
        return "".join(out)

    def _restore_line(self, written: str, original: str) -> str:
        assert self._tokens is not None
        stood_for = self._tokens.findall(original)  # each secret, or a literal [redacted]
        pieces = written.split(REDACTED)
        if len(pieces) - 1 != len(stood_for):
            return written
        return "".join(piece + token for piece, token in zip(pieces, [*stood_for, ""], strict=True))


_REDACTED_BYTES = REDACTED.encode()


def without_pair_values(entry: dict[str, Any]) -> dict[str, Any]:
    """`entry` with the value of each pair of its `SECRET_PAIRS` lists replaced by
    `REDACTED`, the names kept: what is stored and logged of an MCP server (the editor passes
    the servers again with each load or resume, so nothing needs the values back)."""
    out = entry  # most objects have no such list: no copy (logs call this on every event)
    for key in SECRET_PAIRS:
        pairs = entry.get(key)
        if isinstance(pairs, list):
            out = {
                **out,
                key: [
                    {**pair, "value": REDACTED}
                    if isinstance(pair, dict) and "value" in pair
                    else pair
                    for pair in pairs
                ],
            }
    return out


def _alternation(patterns: set[bytes]) -> re.Pattern[bytes] | None:
    ordered = sorted(patterns, key=len, reverse=True)
    return re.compile(b"|".join(re.escape(p) for p in ordered)) if ordered else None


_configured: Secrets | None = None
# Called before secrets are handed out: where secrets learned later come from (the key
# `acp-fsm login` stores, see `acp_fsm.credentials`), each cheap and throttled on its own.
_lookups: list[Callable[[], None]] = []


def on_lookup(refresh: Callable[[], None]) -> None:
    """Call `refresh` whenever the secrets are asked for (it may `also_secret` new ones)."""
    _lookups.append(refresh)


def configured() -> Secrets:
    """The secrets of this process: its environment's (read once: it does not change), and
    those learned since (`also_secret`), the stored key among them."""
    if _configured is None:
        _learn(Secrets(env_vars.secret_values()))
    for refresh in _lookups:
        refresh()
    assert _configured is not None
    return _configured


def _learn(secrets: Secrets) -> None:
    global _configured, _scrub
    _configured = secrets
    _scrub = secrets.scrub if secrets else _as_is


def also_secret(value: str) -> None:
    """Scrub `value` from now on, like the environment's secrets: a key stored by
    `acp-fsm login` while the agent runs."""
    secrets = configured()
    if len(value) >= env_vars.MIN_SECRET_CHARS and value not in secrets:
        _learn(Secrets([*secrets, value]))


def _as_is(data: bytes) -> bytes:
    return data


_scrub = _as_is  # the scrub of the secrets known now (set by `_learn`)


def scrub(data: bytes) -> bytes:
    """`Secrets.scrub` with the secrets known now, for sinks set up before a login (the
    protocol output, the store): on the hot path, so it looks at nothing else. The stored
    key is learned where secrets are asked for (`configured`): before any turn, tool output
    or model request."""
    return _scrub(data)


def command_environment() -> dict[str, str]:
    """The environment for commands the agent starts: its own, without the provider
    credentials and acp-fsm's configuration (`env_vars.is_private`), and without any variable
    whose value holds a provider key (one long enough to be a secret: a dummy key such as "x"
    would match nearly every value)."""
    keys = [
        v
        for name in env_vars.SECRET_VARIABLES
        if len(v := os.environ.get(name, "")) >= env_vars.MIN_SECRET_CHARS
    ]
    return {
        name: value
        for name, value in os.environ.items()
        if not env_vars.is_private(name) and not any(key in value for key in keys)
    }
