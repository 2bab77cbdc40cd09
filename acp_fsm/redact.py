"""Configured secrets never leave the process: not to the editor, not into the store, not to
the model, not into a command's environment.

A secret is the value of a provider key or of any `*_API_KEY`, `*_TOKEN` or `*_SECRET`
variable of at least `config.MIN_SECRET_CHARS` characters (shorter values, such as the dummy
keys local servers accept, would match ordinary text). `Secrets.scrub` replaces each one in an
encoded JSON line, as written raw and as JSON escapes it, by `[redacted]`. It is applied at
the three sinks every piece of content passes through: the protocol output, the store and the
provider request body. Nothing upstream of them needs to care. See docs/redaction.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from functools import cache

from acp_fsm import config

REDACTED = "[redacted]"


class Secrets:
    """The secrets to scrub, as the byte patterns under which they may appear."""

    def __init__(self, values: Iterable[str]) -> None:
        patterns: set[bytes] = set()
        for value in values:
            if value:
                patterns.add(value.encode("utf-8", "surrogatepass"))
                patterns.add(json.dumps(value)[1:-1].encode())  # \\uXXXX, \\" and the like
                patterns.add(json.dumps(value, ensure_ascii=False)[1:-1].encode(
                    "utf-8", "surrogatepass"))
        texts = {v for v in values if v}
        self._count = len(texts)
        # One alternation, longest first (a secret that contains another is replaced whole):
        # the regex engine scans a line once, ten times faster than one search per secret.
        self._bytes = _alternation(patterns)
        self._text = re.compile("|".join(re.escape(t) for t in sorted(
            texts, key=len, reverse=True))) if texts else None

    def __repr__(self) -> str:
        return f"<Secrets {self._count}>"

    def __bool__(self) -> bool:
        return self._count > 0

    def scrub(self, data: bytes) -> bytes:
        """`data` (encoded JSON) with every secret replaced by `[redacted]`."""
        if self._bytes is None or self._bytes.search(data) is None:
            return data
        return self._bytes.sub(_REDACTED_BYTES, data)

    def scrub_text(self, text: str) -> str:
        if self._text is None or self._text.search(text) is None:
            return text
        return self._text.sub(REDACTED, text)


_REDACTED_BYTES = REDACTED.encode()


def _alternation(patterns: set[bytes]) -> re.Pattern[bytes] | None:
    ordered = sorted(patterns, key=len, reverse=True)
    return re.compile(b"|".join(re.escape(p) for p in ordered)) if ordered else None


@cache
def configured() -> Secrets:
    """The secrets of this process's environment (read once: it does not change)."""
    return Secrets(config.secret_values())


def command_environment() -> dict[str, str]:
    """The environment for commands the agent starts: its own, without the provider
    credentials and acp-fsm's configuration (`config.PRIVATE_VARIABLES`), and without any
    variable whose value holds a provider key."""
    keys = [v for name in config.SECRET_VARIABLES if (v := os.environ.get(name))]
    return {name: value for name, value in os.environ.items()
            if not config.is_private(name) and not any(key in value for key in keys)}
