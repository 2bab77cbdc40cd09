"""What the conformance suite is made of: a `Rule` (a requirement, in the project's words, with
the section it comes from), a `Check` (a rule and the probe that holds the agent to it), and a
`Result` (the outcome, a short reason, and the evidence: the lines sent and received)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_fsm.devkit.conformance.context import Context


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"  # a rule of acp-fsm's own, beyond ACP and JSON-RPC, broken: not a fail
    NOT_APPLICABLE = "n/a"  # the agent does not advertise the capability the check needs
    SKIPPED = "skip"  # a step the check needs failed first (another check names it)


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


class Verdict(Exception):
    """A check ends with an outcome other than pass; `evidence`, when given, replaces the
    transcript's tail as the lines that show it."""

    outcome = Outcome.FAIL

    def __init__(self, reason: str, evidence: list[str] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.evidence = evidence


class Violation(Verdict):
    """The agent broke the check's rule."""


class Misanswered(Verdict):
    """The agent answered a request in a form that cannot be matched to it (its id of another
    JSON type, or null): JSON-RPC's rule, broken whatever the check's rule, so never a
    warning."""


class NotApplicable(Verdict):
    outcome = Outcome.NOT_APPLICABLE


class Blocked(Verdict):
    """A step before the one the rule is about failed (its own check reports it)."""

    outcome = Outcome.SKIPPED


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
