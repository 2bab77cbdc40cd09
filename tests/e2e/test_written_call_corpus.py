"""The recorded corpus of calls open models write as text (tests/recorded/text_calls), through
the real agent (bench/text_calls.py): each answer, as a local server's model answers a
prompt, runs every call it holds with the tool and the arguments the corpus expects, and an
answer without a call runs none."""

from __future__ import annotations

from pathlib import Path

from bench import text_calls
from bench.tally import Tally


async def test_every_answer_of_the_corpus_runs_its_calls_and_no_other(tmp_path: Path) -> None:
    answers = text_calls.load()
    outcomes = await text_calls.replay(answers, tmp_path)

    assert [o.answer for o in outcomes] == answers
    for outcome in outcomes:  # each answer was offered the tools it was written for
        assert outcome.answer.tools <= outcome.offered, outcome.answer.name
        if outcome.answer.default_tools:
            assert outcome.offered == outcome.answer.tools, outcome.answer.name
    assert text_calls.failures(outcomes) == []
    calls = sum(len(a.calls) for a in answers)
    assert calls >= 59 and sum(not a.calls for a in answers) >= 24
    assert sum((o.tally for o in outcomes), Tally()) == Tally(calls, calls, calls, 0)
