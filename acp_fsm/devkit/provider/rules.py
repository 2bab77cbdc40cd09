"""The rules the real APIs enforce before they stream anything: the API key, the request's
shape, how tool calls and their results must pair up, the options (`tool_choice`, reasoning,
thinking) and, when the server has one, the context window. A request that breaks one raises
`Rejection`, carrying the API's own 4xx error to answer with, so a client that would be
rejected in production is rejected here. Each API's rules are a module of their own
(`openai_rules`, `anthropic_rules`); what they share is here."""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from acp_fsm.devkit.provider.script import HttpError
from acp_fsm.devkit.provider.wire import json_text


class Rejection(Exception):
    """A request the real API would refuse; carries the HttpError to answer with."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.message)
        self.error = error


def reject(
    message: str,
    status: int = 400,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> Rejection:
    return Rejection(HttpError(status, message, error_type, code, param=param))


def mask(key: str) -> str:
    """A key as an API's error shows it: its first and last characters only."""
    return f"{key[:3]}***{key[-4:]}" if len(key) > 8 else "***"


def is_int(value: Any) -> TypeGuard[int]:
    """An integer of JSON, not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def estimate_tokens(body: Any, chars_per_token: float = 4.0) -> int:
    """The prompt tokens the scripted provider counts for a request body: ceil(n /
    `chars_per_token`), where n is the number of characters of the compact JSON text
    (`json_text`) of its `system`, `messages` and `tools` (the Responses API's `instructions`
    and `input`), each counted when present (0 for a body that is not an object)."""
    if not isinstance(body, dict):
        return 0
    keys = ("system", "instructions", "messages", "input", "tools")
    parts = (json_text(body[key]) for key in keys if key in body)
    return math.ceil(sum(map(len, parts)) / chars_per_token)
