"""An answer caught looping (acp_fsm.turn.repetition): exact repetition of one unit over
MIN_SPAN characters is a loop, caught within a check's distance; text a model means is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_fsm.turn.repetition import MAX_PERIOD, MIN_REPEATS, MIN_SPAN, Repetition, period_of

# Qwen2.5-Coder 0.5B's loops (bench/local_model): `hi\n` inside a call's content, and one
# cycle of calls again and again.
START = '```json\n{"name": "write_file", "arguments": {"path": "notes.txt", "content": "'
CYCLE = (
    '{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hi\\nhello\\n"}}\n'
    '{"name": "list_directory", "arguments": {"path": "."}}\n'
    '{"name": "search_files", "arguments": {"pattern": "hi", "path": "."}}\n'
)


def streamed(text: str, step: int = 4) -> tuple[Repetition, int | None]:
    """`text` fed `step` characters at a time: the watcher, and where it found a loop."""
    watcher = Repetition()
    for at in range(0, len(text), step):
        if watcher.feed(text[at : at + step]):
            return watcher, at + step
    return watcher, None


@pytest.mark.parametrize(
    ("looped", "unit"), [(START + "hi\\n" * 2000, 4), (CYCLE * 40, len(CYCLE))]
)
def test_a_loop_is_caught_soon_after_its_span(looped: str, unit: int) -> None:
    watcher, at = streamed(looped)
    assert at is not None and watcher.period == unit
    assert at <= len(START) + max(MIN_SPAN, MIN_REPEATS * unit) + 2 * unit + 256 + 4


def test_repetition_short_of_the_span_or_the_periods_is_no_loop() -> None:
    assert period_of("hi\n" * (MIN_SPAN // 3 - 2)) == 0
    unit = "x" * 299 + "\n"
    assert period_of(unit * (MIN_REPEATS - 1)) == 0
    assert period_of(unit * (MIN_REPEATS + 1)) == len(unit)
    assert period_of(("y" * (MAX_PERIOD + 1)) * 20) == 1  # its shortest unit
    runs = "x" * 70 + "y" + "x" * 70 + "z"  # the end seen again at 1, 2, ... before 142
    assert period_of(runs * 20) == period_of((runs * 20)[:-30]) == len(runs)
    assert period_of(("a" * 600 + "b") * 10) == 0  # a unit longer than MAX_PERIOD
    assert period_of("") == 0


def test_what_a_model_means_is_no_loop() -> None:
    """The agent's own source and docs, and a table whose rows differ by a number."""
    root = Path(__file__).resolve().parents[2]
    for path in [root / "docs" / "text-calls.md", root / "acp_fsm" / "turn" / "streaming.py"]:
        assert streamed(path.read_text(encoding="utf-8"))[1] is None, path
    rows = "".join(f"| row {i:4} | value | value | value |\n" for i in range(400))
    assert streamed(rows)[1] is None
