"""Tool results within what one stored entry and the model's window can hold.

A tool result is committed before the editor is told it is done (docs/sessions.md), and the
store refuses an entry over `store.MAX_BODY_BYTES`; the model can never be sent more than its
window holds. So a result too large for either, whichever tool made it (an MCP server may
answer with megabytes), is cut down before it is stored, never a failure of the turn: the
model's text to what a request could carry, the editor's view to `MAX_SHOWN_BYTES`. A text
keeps its start and its end with a note of what was cut between them (`compaction.cut_text`,
the cut compaction makes of a result too large for the window); a block that is not text (an
image, a resource, a diff) and does not fit is replaced by a note saying what it was.
Secrets are scrubbed before a cut: a key cut in two could not be recognised at the sinks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from acp_fsm import compaction, redact, updates
from acp_fsm.store import MAX_BODY_BYTES
from acp_fsm.tools.base import ToolOutcome

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContent

log = structlog.get_logger("acp.tools")

# What one result keeps, as stored (JSON): the model's text and the editor's view get this much
# each, so a whole result, with the call's other fields, stays well within one stored entry.
MAX_MODEL_BYTES = MAX_BODY_BYTES // 4
MAX_SHOWN_BYTES = MAX_BODY_BYTES // 4
SHOWN_NOTE = (
    "\n[… {:,} characters cut here: a tool result shows at most "
    f"{MAX_SHOWN_BYTES // (1024 * 1024)} MiB …]\n"
)
MAX_ESCAPE_BYTES = 6  # the most one character takes in JSON (a control character: \\u0001)


def bounded(outcome: ToolOutcome, model_chars: int) -> ToolOutcome:
    """`outcome` with its model text within `model_chars` characters (the window's room,
    `compaction.result_chars`) and `MAX_MODEL_BYTES`, its editor view and replay within
    `MAX_SHOWN_BYTES`; `outcome` itself when all of it fits (the usual case)."""
    output = fit_text(outcome.output, model_chars, MAX_MODEL_BYTES, compaction.CUT_NOTE)
    content = _fit_blocks(outcome.content)
    replay = None if outcome.replay is None else _fit_blocks(outcome.replay)
    if output is outcome.output and content is outcome.content and replay is outcome.replay:
        return outcome
    log.info("tool_result_cut", output_chars=(len(outcome.output), len(output)))
    return replace(outcome, output=output, content=content, replay=replay)


def fit_text(text: str, chars: int, max_bytes: int, note: str) -> str:
    """`text` within `chars` characters and `max_bytes` as JSON, cut (`compaction.cut_text`)
    after its secrets are scrubbed; `text` itself when it fits."""
    if len(text) <= chars and len(text) * MAX_ESCAPE_BYTES + 2 <= max_bytes:
        return text  # fits whatever its characters: nothing to measure
    scrubbed = redact.configured().scrub_text(text)
    fitted = compaction.cut_text(scrubbed, chars, note)
    while (size := _json_size(fitted)) > max_bytes:  # escapes take more: keep fewer characters
        shorter = compaction.cut_text(scrubbed, int(len(fitted) * max_bytes / size * 0.99), note)
        if len(shorter) >= len(fitted):
            break  # the note alone: as short as it gets
        fitted = shorter
    return text if fitted == text else fitted


def _fit_blocks(blocks: tuple[ToolCallContent, ...]) -> tuple[ToolCallContent, ...]:
    """ACP ToolCallContent blocks within `MAX_SHOWN_BYTES` as JSON: the largest are cut or
    replaced first, until the rest fits; `blocks` itself when they fit."""
    listed = list(blocks)
    fitted = compaction.largest_first(listed, _json_size, MAX_SHOWN_BYTES, _fit_block)
    return blocks if fitted is listed else tuple(fitted)


def _fit_block(block: ToolCallContent, room: float, size: float) -> ToolCallContent:
    """One block in about `room` bytes of JSON: a text cut down, anything else a note."""
    inner = block.get("content") if block.get("type") == "content" else None
    if isinstance(inner, dict) and inner.get("type") == "text":
        text = inner["text"]
        return updates.text_block(fit_text(text, len(text), max(0, int(room)), SHOWN_NOTE))
    kind = inner.get("type") if isinstance(inner, dict) else block.get("type")
    return updates.text_block(
        f"[{kind} not shown: {int(size):,} bytes, more than a tool result "
        f"shows ({MAX_SHOWN_BYTES:,} bytes)]"
    )


def _json_size(value: Any) -> int:
    return len(orjson.dumps(value))
