"""A session's ledger: the tokens and the cost of its model calls (docs/cost.md).

Every call is counted as it ends (`count`: the turn's, a compaction's summary, a subagent's,
the title's) and stored as a `usage` entry (`pricing.Charge.body`). The ledger is rebuilt from
those entries whenever the session's conversation is (`session/load`, `resume`, `fork`, a
catch-up with another process's writes), so the session's totals (`sessionUsage`,
`sessionCost`) are the whole session's, in this process or any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from acp_fsm import pricing, updates
from acp_fsm.providers.types import Usage

if TYPE_CHECKING:
    from acp_fsm.store import Entry


class Ledger:
    """The totals of one session's model calls: `spent` (tokens) and `cost` (None: unknown);
    `record` stores a charge with the session."""

    def __init__(self, record: Callable[[pricing.Charge], None]) -> None:
        self._record = record
        self.spent = Usage()
        self.cost: pricing.Cost | None = pricing.NOTHING

    def __repr__(self) -> str:
        return f"<Ledger in={self.spent.input_tokens} out={self.spent.output_tokens} {self.cost}>"

    def count(self, charge: pricing.Charge) -> None:
        """Add a model call's tokens and cost, and store them."""
        self.spent = self.spent.plus(charge.usage)
        self.cost = pricing.added(self.cost, charge.cost)
        self._record(charge)

    def reload(self, entries: Iterable[Entry]) -> None:
        """The totals as the session's stored entries have them."""
        entries = list(entries)
        self.spent = spent_of(entries)
        self.cost = pricing.cost_of(entries)


def spent_of(entries: Iterable[Entry]) -> Usage:
    """The tokens of a stored session's calls: the sum of its usage entries'."""
    total = Usage()
    for entry in entries:
        if entry.kind == pricing.USAGE_ENTRY:
            total = total.plus(_usage(entry.body.get("usage")))
    return total


def _usage(stored: Any) -> Usage:
    """A stored entry's tokens (liberal: what an entry lacks counts 0)."""
    if not isinstance(stored, dict):
        return Usage()
    counts = {field: stored.get(name) for field, name in updates.USAGE_NAMES}
    return Usage(**{field: n if isinstance(n, int) else 0 for field, n in counts.items()})
