"""How a check ends: its `Outcome`, and the verdicts a check raises to end otherwise than
with a pass (`Violation`, `Misanswered`, `NotApplicable`, `Blocked`)."""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"  # a rule of acp-fsm's own, beyond ACP and JSON-RPC, broken: not a fail
    NOT_APPLICABLE = "n/a"  # the agent does not advertise the capability the check needs
    SKIPPED = "skip"  # a step the check needs failed first (another check names it)


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
