"""The edit-robustness corpus (bench/edits.py) as a behaviour check: it holds at least 200
attempts of every shape it names, and no attempt is applied wrongly."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import edits

pytestmark = pytest.mark.slow  # every attempt of the corpus


async def test_no_attempt_of_the_corpus_is_applied_wrongly() -> None:
    results = await edits.measure()
    assert len(results) >= 200
    shapes = Counter(attempt.shape for attempt, _ in results)
    assert {"exact", "crlf file", "tabs vs spaces", "stale line", "occurs several times",
            "context line missing", "two files, one stale"} <= set(shapes)  # fmt: skip
    wrong = [(a.tool, a.shape, a.args) for a, outcome in results if outcome == "applied wrongly"]
    assert wrong == []
    sensible = [outcome for attempt, outcome in results if attempt.sensible and attempt.expected]
    assert sum(outcome == "applied" for outcome in sensible) >= 0.95 * len(sensible)
