"""The demo's story: the project the session works on (a sum that skips its last price) and
the model's side of the conversation (`model_script`), as the scripted provider plays it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROJECT_FILES = {
    "app.py": (
        "def total(prices):\n"
        '    """Sum of all prices."""\n'
        "    result = 0\n"
        "    for i in range(len(prices) - 1):\n"
        "        result += prices[i]\n"
        "    return result\n"
    ),
    "test_app.py": (
        "from app import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n"
    ),
}
FIXED_LINE = "    for i in range(len(prices)):\n"
BUGGY_LINE = "    for i in range(len(prices) - 1):\n"
LONG_ANSWER = (
    "An off-by-one error is a loop or an index that is wrong by exactly one step. "
    "The bug we just fixed is the classic case: range(len(prices) - 1) stops before the last "
    "element, so the sum quietly leaves out one price. "
    "The opposite mistake runs one step too far, and in Python that usually ends in an "
    "IndexError instead of a wrong answer. "
    "Most of these bugs come from mixing two conventions: a Python range includes its start "
    "and excludes its end, while people tend to count the last index as part of it. "
    "A half-open range from start to end holds end - start items, so range(len(items)) visits "
    "every index once and never goes past the end. "
    "Fence posts are the same bug in another shape: a ten-metre fence with a post every metre "
    "needs eleven posts, not ten. "
    "Slices follow the same rule, so items[:n] holds the first n items and items[n:] the rest, "
    "with nothing lost or counted twice. "
    "The safest habit is to avoid index arithmetic: loop over the items themselves, call "
    "sum(prices), or use enumerate() when the position matters. "
    "When indices cannot be avoided, test the edges: an empty list, a single item, and the "
    "last item. "
    "A test like total([1, 2, 3]) == 6 catches this bug because it depends on the last price, "
    "which is exactly the one the loop skipped."
)
LONG_ANSWER_DELAY_S = 0.008  # before each streamed word: the whole answer takes over 1.5 s


def model_script(provider: str) -> list[Any]:
    """The model's side of the demo conversation."""
    from acp_fsm.devkit.provider import Call, Hang, Reply

    read = Call("call_read", "read_file", json.dumps({"path": "app.py"}))
    edit = Call(
        "call_edit",
        "edit_file",
        json.dumps({"path": "app.py", "old_text": BUGGY_LINE, "new_text": FIXED_LINE}),
    )
    thinking = (
        "The user reports an off-by-one; total() probably skips an element. "
        "Read the file before changing anything."
    )
    return [
        Reply(
            thinking=words(thinking),
            signature="demo-signature",
            text="Let me read app.py.",
            calls=(read,),
            delay_s=0.01,
        ),
        Reply(
            text=words(
                "The loop stops one element early: range(len(prices) - 1) skips the "
                "last price. I'll fix the bound."
            ),
            calls=(edit,),
            delay_s=0.01,
        ),
        Reply(
            text=words("Fixed: total() now adds every price, so total([1, 2, 3]) == 6."),
            delay_s=0.01,
        ),
        Reply(text=words(LONG_ANSWER), delay_s=LONG_ANSWER_DELAY_S, fault=Hang(120)),
        Reply(
            text=words(
                "You're welcome! The history I was given includes the fix and the "
                "interrupted explanation, so we can pick up from there."
            ),
            delay_s=0.01,
        ),
    ]


def words(text: str) -> list[str]:
    """Split text into token-like deltas (each word with its trailing space)."""
    parts = text.split(" ")
    return [p + " " for p in parts[:-1]] + [parts[-1]]


def write_project(project: Path) -> None:
    """The demo's project, as the session finds it."""
    for name, text in PROJECT_FILES.items():
        (project / name).write_text(text, encoding="utf-8")
