"""ACP v2's messages judged against v2's definitions (schemas/acp_v2.json, taken from the
v2 pages and the schema crate's v2 types): what `acp-fsm schema-check --protocol 2`, the
conformance suite's v2 group and the v2 run of the end-to-end suite check."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from acp_fsm.devkit.editor import Record
from acp_fsm.devkit.schema_check.checker import Verdict, own_problems
from acp_fsm.devkit.schema_check.report import Report
from acp_fsm.versions import V2

# What the scripted session must make an agent speaking v2 say (`gaps`): v2's own updates,
# and its answers and requests that differ from v1's.
EXERCISED: Final = (
    ("session/update", "state_update"),
    ("session/update", "user_message"),
    ("session/update", "tool_call_update"),
    ("session/update", "plan_update"),
    ("session/update", "terminal_update"),
    ("session/update", "terminal_output_chunk"),
    ("session/update", "subagent_update"),
    ("session/prompt", "result"),
    ("session/resume", "result"),
    ("session/request_permission", "request"),
    ("initialize", "result"),
)


def verdict(record: Record) -> Verdict:
    """What v2's definitions say of `record` (a message as it was on the wire): its
    envelope, and its method's definition in `methods_v2.json` (`checker.own_problems`)."""
    return Verdict(own=tuple(own_problems(record, V2)))


def refused(records: Iterable[Record]) -> list[str]:
    """What of the agent's messages v2's definitions refuse: each as its method, kind and
    the problem."""
    found = []
    for record in records:
        for problem in verdict(record).own:
            found.append(f"{record.method} {record.kind}: {problem}")
    return found


def report(records: Iterable[Record]) -> Report:
    """The schema check's report of a v2 session (its `own` column: v2's definitions)."""
    checked = Report()
    for record in records:
        checked.add(record, verdict(record))
    return checked


def gaps(records: Iterable[Record]) -> list[str]:
    """What of `EXERCISED` the session never said."""
    said = set()
    for record in records:
        payload = record.payload if isinstance(record.payload, dict) else {}
        update = payload.get("update") if record.method == "session/update" else None
        said.add(
            (
                record.method,
                update.get("sessionUpdate") if isinstance(update, dict) else record.kind,
            )
        )
    return [f"{method} {what}" for method, what in EXERCISED if (method, what) not in said]
