"""The schema check's report: per method, direction and kind, how many messages were checked
and how many failed under each schema; one description per failing message; a table."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from acp_fsm.devkit.editor.link import Record
from acp_fsm.devkit.schema_check.checker import Checker, Verdict


@dataclass(slots=True)
class Row:
    method: str
    direction: str
    kind: str
    checked: int = 0
    official: int = 0
    own: int = 0


@dataclass
class Report:
    """Per-method counts, and one description per failing message."""

    rows: dict[tuple[str, str, str], Row] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def add(self, record: Record, verdict: Verdict) -> None:
        method = record.method or "(unreadable)"
        key = (method, record.direction, record.kind)
        row = self.rows.get(key) or self.rows.setdefault(key, Row(*key))
        row.checked += 1
        row.official += bool(verdict.official)
        row.own += bool(verdict.own)
        if not verdict.ok:
            text = json.dumps(record.message, ensure_ascii=False)
            text = text if len(text) <= 400 else text[:397] + "..."
            reasons = [f"official: {p}" for p in verdict.official[:3]]
            reasons += [f"own: {p}" for p in verdict.own[:3]]
            self.failures.append(f"{record.kind} of {method}: {'; '.join(reasons)}\n    {text}")

    def table(self) -> str:
        head = ("method", "direction", "kind", "checked", "official", "own")
        lines = [
            f"{head[0]:<28} {head[1]:<14} {head[2]:<12} {head[3]:>7} {head[4]:>8} {head[5]:>5}"
        ]
        for row in sorted(self.rows.values(), key=lambda r: (r.method, r.direction, r.kind)):
            lines.append(
                f"{row.method:<28} {row.direction:<14} {row.kind:<12} "
                f"{row.checked:>7} {row.official:>8} {row.own:>5}"
            )
        rows = self.rows.values()
        lines.append(
            f"{'total':<28} {'':<14} {'':<12} {sum(r.checked for r in rows):>7} "
            f"{sum(r.official for r in rows):>8} {sum(r.own for r in rows):>5}"
        )
        return "\n".join(lines)


def check_records(checker: Checker, records: Iterable[Record]) -> Report:
    report = Report()
    for record in records:
        report.add(record, checker.check(record))
    return report
