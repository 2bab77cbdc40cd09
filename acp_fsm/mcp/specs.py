"""The MCP servers of a session as the editor gave them, and the names the model sees.

ACP gives a stdio server as `{name, command, args, env: [{name, value}]}` (no `type`) and an
HTTP or SSE server as `{type: "http" | "sse", name, url, headers: [{name, value}]}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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


def server_specs(entries: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> list[ServerSpec]:
    """The servers of `mcpServers` (already checked against the schema)."""
    specs = []
    for entry in entries:
        pairs = {
            key: tuple((p["name"], p["value"]) for p in entry.get(key) or ())
            for key in ("env", "headers")
        }
        transport = entry.get("type") or "stdio"
        if transport == "stdio":
            specs.append(
                ServerSpec(
                    entry["name"],
                    "stdio",
                    command=entry["command"],
                    args=tuple(entry.get("args") or ()),
                    env=pairs["env"],
                )
            )
        else:
            specs.append(
                ServerSpec(entry["name"], transport, url=entry["url"], headers=pairs["headers"])
            )
    return specs


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
