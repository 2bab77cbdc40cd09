"""A new session's record, and what every way of opening a session checks of the editor's
cwd, directories and MCP servers. Light enough for the startup path (`acp_fsm.early_session`),
which creates a first session before the event loop runs."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from acp_fsm import limits, redact
from acp_fsm.errors import BadRequest
from acp_fsm.sessions_db import SessionRecord


def new_record(
    cwd: str, additional: list[str], mcp_servers: list[dict[str, Any]], title: str | None = None
) -> SessionRecord:
    """A new session's record (its MCP servers stored without their secrets)."""
    now = time.time()
    return SessionRecord(
        id=f"sess_{uuid.uuid4().hex}",
        cwd=cwd,
        additional_directories=tuple(additional),
        mcp_servers=tuple(redact.without_pair_values(entry) for entry in mcp_servers),
        title=title,
        created_at=now,
        updated_at=now,
    )


def check_session(cwd: str, additional: list[str], mcp_servers: list[Any]) -> None:
    """What a session keeps, stores and lists again: absolute paths, within the limits, and
    MCP servers that are servers."""
    limits.check_count(
        "additionalDirectories", additional, limits.MAX_DIRECTORIES, "MAX_DIRECTORIES"
    )
    limits.check_count("mcpServers", mcp_servers, limits.MAX_MCP_SERVERS, "MAX_MCP_SERVERS")
    limits.check_nesting("mcpServers", mcp_servers)
    if mcp_servers:  # what the schema lets through but is no server: -32602
        from acp_fsm.mcp.specs import server_specs  # not on the startup path, which has none

        server_specs(mcp_servers)
    for name, value in [("cwd", cwd)] + [
        (f"additionalDirectories[{i}]", d) for i, d in enumerate(additional)
    ]:
        limits.check_path(name, value)
        if not Path(value).is_absolute():
            raise BadRequest(name, f"must be an absolute path, got {limits.echo(value)}")
