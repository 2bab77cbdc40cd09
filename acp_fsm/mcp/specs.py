"""The MCP servers of a session as the editor gave them, and the names the model sees.

ACP gives a stdio server as `{name, command, args, env: [{name, value}]}` (no `type`) and an
HTTP or SSE server as `{type: "http" | "sse", name, url, headers: [{name, value}]}`. ACP's
schema lets a stdio entry carry any other `type` (it names only the two tags); here a stdio
entry's `type` may be absent, null or "stdio" (some clients write it), and any other value
is refused with -32602 naming `mcpServers[i].type` and what it may be, as is anything else
malformed (`server_specs` reads any JSON without failing otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from acp_fsm.errors import BadRequest
from acp_fsm.limits import echo

# What provider function names allow (OpenAI: ^[a-zA-Z0-9_-]{1,64}$; Anthropic up to 128).
MAX_TOOL_NAME = 64
_OUTSIDE_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One server: `transport` is "stdio", "http" or "sse"."""

    name: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()


def server_specs(entries: list[Any] | tuple[Any, ...]) -> list[ServerSpec]:
    """The servers of `mcpServers`; `BadRequest` naming the field for an entry that is
    not one (checked when a session is set up, before anything is stored)."""
    return [_spec(entry, f"mcpServers[{i}]") for i, entry in enumerate(entries)]


STDIO_TAGS = (None, "stdio")  # a stdio entry's `type`: none in ACP, "stdio" from some clients
REMOTE_TAGS = ("http", "sse")


def _spec(entry: Any, where: str) -> ServerSpec:
    if not isinstance(entry, dict):
        raise BadRequest(where, f"expected an object, got {echo(entry)}")
    tag = entry.get("type")
    name = _text(entry, "name", where)
    if tag in STDIO_TAGS:
        return ServerSpec(
            name,
            "stdio",
            command=_text(entry, "command", where),
            args=tuple(_texts(entry.get("args"), f"{where}.args")),
            env=_pairs(entry.get("env"), f"{where}.env"),
        )
    if tag in REMOTE_TAGS:
        url = _text(entry, "url", where)
        return ServerSpec(
            name, tag, url=url, headers=_pairs(entry.get("headers"), f"{where}.headers")
        )
    if tag == "acp":  # session/fork's params admit it (the unstable schema)
        raise BadRequest(
            where,
            'MCP over the ACP connection (type "acp") is not supported (mcpCapabilities.acp '
            "is not advertised); give a stdio, http or sse server",
        )
    raise BadRequest(
        f"{where}.type",
        f'expected "http" or "sse" (a server at a url), or no type or "stdio" (a server '
        f"started as a command), got {echo(tag)}",
    )


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if key not in entry:
        raise BadRequest(where, f'missing required property "{key}"')
    if not isinstance(value, str):
        raise BadRequest(f"{where}.{key}", f"expected a string, got {echo(value)}")
    return value


def _texts(value: Any, where: str) -> list[str]:
    """A list of strings (absent or null: none)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(where, f"expected an array of strings, got {echo(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise BadRequest(f"{where}[{i}]", f"expected a string, got {echo(item)}")
    return value


def _pairs(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """`[{name, value}]` (environment variables, headers) as pairs (absent or null: none)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadRequest(where, f"expected an array of {{name, value}} objects, got {echo(value)}")
    pairs = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadRequest(
                f"{where}[{i}]", f"expected a {{name, value}} object, got {echo(item)}"
            )
        pairs.append((_text(item, "name", f"{where}[{i}]"), _text(item, "value", f"{where}[{i}]")))
    return tuple(pairs)


def tool_name(server: str, tool: str, taken: set[str]) -> str:
    """`mcp__<server>__<tool>` with what a provider refuses replaced by `_`, cut to
    `MAX_TOOL_NAME` characters and made unique among `taken` (which it joins)."""
    base = f"mcp__{_OUTSIDE_NAME.sub('_', server)}__{_OUTSIDE_NAME.sub('_', tool)}"
    name = base[:MAX_TOOL_NAME]
    n = 2
    while name in taken:
        suffix = f"_{n}"
        name = base[: MAX_TOOL_NAME - len(suffix)] + suffix
        n += 1
    taken.add(name)
    return name
