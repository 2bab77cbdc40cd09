"""What a client can make the agent hold, store and echo back: named limits, each refused up
front with -32602 naming the limit, so nothing is answered as if stored that the store would
refuse, and no answer grows with a client's oversized value.

The whole line is already bounded (`protocol.framing.MAX_LINE_BYTES`); these bound the parts
that are kept for the session's life, written to the store, or listed again.
"""

from __future__ import annotations

from typing import Any

from acp_fsm.errors import BadRequest
from acp_fsm.sessions_db import MAX_BODY_BYTES

# A path the agent keeps and lists again (cwd, additionalDirectories): Linux's PATH_MAX.
MAX_PATH_CHARS = 4096
# additionalDirectories of one session.
MAX_DIRECTORIES = 64
# mcpServers of one session (stored as given).
MAX_MCP_SERVERS = 64
# Levels of JSON nesting in what is stored as the client gave it (prompt blocks and their
# `_meta`, mcpServers). Real prompts need a handful; the store accepts several hundred.
MAX_NESTING = 64
# Characters of a client's value quoted in an error message.
MAX_ECHO_CHARS = 120


def echo(value: object) -> str:
    """`value` as an error message quotes it: its repr, cut to `MAX_ECHO_CHARS`."""
    text = repr(value)
    return text if len(text) <= MAX_ECHO_CHARS else text[: MAX_ECHO_CHARS - 1] + "…"


def check_path(name: str, value: str) -> None:
    if len(value) > MAX_PATH_CHARS:
        raise BadRequest(
            name, f"longer than {MAX_PATH_CHARS} characters (MAX_PATH_CHARS), got {len(value):,}"
        )


def check_count(name: str, items: list[Any], limit: int, limit_name: str) -> None:
    if len(items) > limit:
        raise BadRequest(name, f"more than {limit} entries ({limit_name}), got {len(items):,}")


def check_nesting(name: str, value: Any) -> None:
    """Refuse `value` when it nests deeper than `MAX_NESTING` levels (iteratively: the
    deepest value is the one that would exhaust a recursive encoder)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_NESTING:
            raise BadRequest(
                name,
                f"nested deeper than {MAX_NESTING} levels (MAX_NESTING); it could not be stored",
            )
        stack.extend((child, depth + 1) for child in children)


def check_stored(name: str, body: dict[str, Any]) -> None:
    """`body` fits one store entry (`MAX_BODY_BYTES`), as it will be stored."""
    from acp_fsm.store import stored_size  # orjson: not on the startup path

    size = stored_size(body)  # what orjson refuses (a lone surrogate) the store still holds
    if size > MAX_BODY_BYTES:
        raise BadRequest(
            name,
            f"{size:,} bytes as stored (with what the model is sent of it), over the "
            f"{MAX_BODY_BYTES:,}-byte limit of a stored entry (MAX_BODY_BYTES)",
        )
