"""Tool results cut to what the store and the window hold (`acp_fsm.results`), whatever
tool made them: texts keep their start and end, other blocks that do not fit become notes."""

from __future__ import annotations

import orjson

from acp_fsm.compaction import CUT_NOTE
from acp_fsm.results import MAX_MODEL_BYTES, MAX_SHOWN_BYTES, SHOWN_NOTE, bounded, fit_text
from acp_fsm.schemas import acp_types as acp
from acp_fsm.tools.base import ToolOutcome
from acp_fsm.updates import text_block


def size(value: object) -> int:
    return len(orjson.dumps(value))


def text_of(block: acp.ToolCallContent) -> str:
    """The text of a `content` block that holds text."""
    assert block["type"] == "content" and block["content"]["type"] == "text", block
    return block["content"]["text"]


def test_a_result_that_fits_is_kept_as_it_is() -> None:
    outcome = ToolOutcome("ok", content=(text_block("ok"),))
    assert bounded(outcome, 1000) is outcome


def test_the_models_text_is_cut_to_the_window_keeping_its_start_and_end() -> None:
    text = "begin" + "x" * 10_000 + "end"
    cut = bounded(ToolOutcome(text), 1000).output
    assert len(cut) <= 1000 and cut.startswith("begin") and cut.endswith("end")
    assert CUT_NOTE.split("{")[0] in cut


def test_a_text_is_cut_by_its_size_as_json_too() -> None:
    """Control characters take 6 bytes each as JSON: fewer of them fit."""
    text = "\x01" * 1000
    cut = fit_text(text, 1000, 600, CUT_NOTE)
    assert size(cut) <= 600 and cut.startswith("\x01")


def test_the_editors_view_is_cut_to_what_one_result_shows() -> None:
    big = "a" * (MAX_SHOWN_BYTES + 1000)
    outcome = bounded(ToolOutcome("seen", content=(text_block("small"), text_block(big))), 10)
    small, cut = outcome.content
    assert small == text_block("small")
    assert size(outcome.content) <= MAX_SHOWN_BYTES + 200
    assert SHOWN_NOTE.split("{")[0] in text_of(cut)


def test_a_block_that_is_not_text_and_does_not_fit_becomes_a_note() -> None:
    image: acp.ToolCallContentContent = {
        "type": "content",
        "content": {"type": "image", "mimeType": "image/png", "data": "A" * (MAX_SHOWN_BYTES + 1)},
    }
    diff: acp.ToolCallContentDiff = {"type": "diff", "path": "/p", "oldText": "x", "newText": "y"}
    outcome = bounded(ToolOutcome("an image", content=(image, diff), replay=(image,)), 1000)
    [note, kept] = outcome.content
    assert kept == diff  # what fits is kept
    assert text_of(note).startswith("[image not shown: ")
    assert outcome.replay is not None and outcome.replay[0] == note


def test_the_models_text_stays_within_its_share_of_a_stored_entry() -> None:
    text = '"' * MAX_MODEL_BYTES  # 2 bytes each as JSON
    assert size(bounded(ToolOutcome(text), MAX_MODEL_BYTES).output) <= MAX_MODEL_BYTES
