"""What the scripted session must exercise, and what it did not: every method in each
direction, every update kind the agent is written to emit, every error code it provokes."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Final

import acp_fsm
from acp_fsm import schemas
from acp_fsm.devkit.editor.link import Record
from acp_fsm.devkit.schema_check.checker import own_methods

# JSON-RPC and ACP error codes the scripted session provokes.
PROVOKED_ERRORS: Final = frozenset({-32700, -32600, -32601, -32602, -32603, -32002, -32800})
# The part of the package that drives the agent, not the agent.
CLIENT_SIDE: Final = frozenset({"devkit"})


def update_tags() -> frozenset[str]:
    """The `sessionUpdate` tags ACP defines (from the project's copy of SessionUpdate)."""
    union = schemas.load_json("acp.json")["$defs"]["SessionUpdate"]["oneOf"]
    return frozenset(branch["properties"]["sessionUpdate"]["const"] for branch in union)


@cache
def emitted_update_kinds() -> frozenset[str]:
    """The update kinds the agent is written to emit: those its modules name (`kinds_named_in`;
    the devkit, which drives the agent, aside)."""
    package = Path(acp_fsm.__file__).resolve().parent
    found: set[str] = set()
    for source in package.rglob("*.py"):
        if source.relative_to(package).parts[0] not in CLIENT_SIDE:
            found |= kinds_named_in(source.read_text(encoding="utf-8"))
    return frozenset(found)


def kinds_named_in(source: str) -> set[str]:
    """`sessionUpdate` tags that Python `source` puts under "sessionUpdate" in a dict literal
    or passes to `chunk(...)` (`acp_fsm.updates.chunk` builds the three message-chunk kinds)."""
    tags, found = update_tags(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            values = [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "sessionUpdate"
            ]
        elif isinstance(node, ast.Call) and _called(node) == "chunk":
            values = list(node.args)
        else:
            continue
        found |= {v.value for v in values if isinstance(v, ast.Constant) and v.value in tags}
    return found


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


def expected_rows() -> set[tuple[str, str]]:
    """(method, direction) of every method the agent must have written something for: an
    answer to each client->agent request, each agent->client request and notification."""
    rows = set()
    for method, spec in own_methods().items():
        if method.startswith("_"):
            continue
        if spec.direction in ("agent_to_client", "both"):
            rows.add((method, "agent->client"))
        if spec.direction in ("client_to_agent", "both") and spec.kind == "request":
            rows.add((method, "client->agent"))
    return rows


def update_kinds(records: Iterable[Record]) -> set[str]:
    """The kinds of the `session/update` notifications among `records`."""
    return {
        r.payload["update"]["sessionUpdate"]
        for r in records
        if r.method == "session/update" and r.kind == "notification"
    }


def error_codes(records: Iterable[Record]) -> set[int]:
    """The codes of the error responses among `records`."""
    return {r.payload.get("code") for r in records if r.kind == "error"}


def coverage_gaps(records: list[Record]) -> list[str]:
    """What the scripted session was meant to exercise and did not."""
    seen = {(r.method, r.direction) for r in records}
    gaps = [
        f"no {direction} message of {method}"
        for method, direction in sorted(expected_rows() - seen)
    ]
    gaps += [
        f"no session/update of kind {kind}"
        for kind in sorted(emitted_update_kinds() - update_kinds(records))
    ]
    gaps += [
        f"no error response with code {code}"
        for code in sorted(PROVOKED_ERRORS - error_codes(records))
    ]
    return gaps
