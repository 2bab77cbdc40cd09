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
        # Longest first: a secret that contains another is replaced whole.
        self._patterns = sorted(patterns, key=len, reverse=True)
        self._texts = sorted({v for v in values if v}, key=len, reverse=True)

    def __repr__(self) -> str:
        return f"<Secrets {len(self._texts)}>"

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def scrub(self, data: bytes) -> bytes:
        """`data` (encoded JSON) with every secret replaced by `[redacted]`."""
        for pattern in self._patterns:
            if pattern in data:
                data = data.replace(pattern, REDACTED.encode())
        return data

    def scrub_text(self, text: str) -> str:
        for secret in self._texts:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text


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
