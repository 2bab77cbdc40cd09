"""The wire formats: a `Reply` rendered byte for byte as each API streams it, and each API's
error bodies, a module per API (`openai_wire`, `anthropic_wire`). A render returns the list
of SSE events a reply is streamed as; faults count these events. What they share is here."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from acp_fsm.protocol.codec import is_utf8


def json_text(payload: Any) -> str:
    """Compact JSON in UTF-8, as the APIs send it; a lone surrogate (a model's token that cut a
    character in two) as the `\\udXXX` escape they send then, which UTF-8 cannot carry."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return text if is_utf8(text) else json.dumps(payload, separators=(",", ":"))


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE event: `data` as is when a string, else as compact JSON."""
    head = f"event: {event}\n" if event else ""
    text = data if isinstance(data, str) else json_text(data)
    return f"{head}data: {text}\n\n".encode()


_ids = count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}scripted"
