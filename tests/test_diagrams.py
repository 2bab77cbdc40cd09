"""The committed diagrams are exactly what the machine tables generate."""

from __future__ import annotations

from fsm.diagram import machines, stale_files, to_mermaid


def test_committed_diagrams_are_current() -> None:
    assert stale_files() == [], "run: python -m fsm.diagram"


def test_every_state_and_row_is_drawn() -> None:
    for spec in machines():
        text = to_mermaid(spec)
        assert f"[*] --> {spec.initial.value}" in text
        for state in spec.states:
            assert f"    {state.value}\n" in text
        for row in spec.rows:
            for source in row.sources:
                assert f"{source.value} --> {row.dest.value}: {row.trigger.value}" in text
        for state in spec.final:
            assert f"{state.value} --> [*]" in text
