"""What the conformance suite is made of: a `Rule` (a requirement, in the project's words, with
the section it comes from), a `Check` (a rule and the probe that holds the agent to it), and a
`Result` (the outcome, a short reason, and the evidence: the lines sent and received)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acp_fsm.devkit.conformance.verdicts import Outcome

if TYPE_CHECKING:
    from acp_fsm.devkit.conformance.context import Context


@dataclass(frozen=True, slots=True)
class Rule:
    """A requirement: `source` is the document and section (e.g. "JSON-RPC 2.0 §6"), `text`
    the requirement in the project's own words. `required`: ACP or JSON-RPC requires it;
    otherwise it is acp-fsm's own recommendation, and breaking it is a warning."""

    source: str
    text: str
    required: bool = True


@dataclass(frozen=True, slots=True)
class Check:
    """One check: `run` drives agents started from the context and returns the reason of a
    pass; it raises `Violation`, `NotApplicable` or `Blocked` otherwise."""

    id: str  # "group.name"
    rule: Rule
    run: Callable[[Context], Awaitable[str]]

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass(slots=True)
class Result:
    check: Check
    outcome: Outcome
    reason: str
    evidence: list[str] = field(default_factory=list)
    stderr: str = ""
    duration_ms: int = 0
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.check.id,
            "group": self.check.group,
            "rule": {
                "source": self.check.rule.source,
                "text": self.check.rule.text,
                "required": self.check.rule.required,
            },
            "outcome": self.outcome.value,
            "reason": self.reason,
            "evidence": self.evidence,
            "stderr": self.stderr,
            "durationMs": self.duration_ms,
            "data": self.data,
        }
