"""ACP v2's messages judged against v2's definitions (schemas/acp_v2.json, taken from the
v2 pages and the schema crate's v2 types): what `acp-fsm schema-check --protocol 2`, the
conformance suite's v2 group and the v2 run of the end-to-end suite check."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from acp_fsm import schemas
from acp_fsm.devkit.editor import Record
from acp_fsm.devkit.schema_check.checker import Verdict
from acp_fsm.devkit.schema_check.report import Report
from acp_fsm.methods import ACP_V2

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
    """What v2's definitions say of `record` (a message as it was on the wire): error answers
    are JSON-RPC's, and methods v2 does not have are not judged here."""
    spec = ACP_V2.get(record.method or "")
    if spec is None or record.kind == "error":
        return Verdict()
    ref = spec.result_ref if record.kind == "result" else spec.params_ref
    violation = None if ref is None else schemas.validate(ref, record.payload)
    return Verdict() if violation is None else Verdict(own=(str(violation),))


def refused(records: Iterable[Record]) -> list[str]:
    """What of the agent's messages v2's definitions refuse: each as its method, kind and
    the violation."""
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
