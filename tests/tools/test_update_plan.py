"""update_plan: the plan is shown whole, and read back to the model."""

from __future__ import annotations

from pathlib import Path

from acp_fsm.tools import TOOLS
from tests.tools.conftest import Editor, Env, call

PLAN = [
    {"content": "Read the code", "priority": "high", "status": "completed"},
    {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
    {"content": "Write a test", "priority": "low", "status": "pending"},
]


async def test_the_whole_plan_is_shown_and_read_back(tmp_path: Path) -> None:
    env = Env(cwd=tmp_path, client=Editor())
    outcome = await call(env, "update_plan", entries=PLAN)
    assert not outcome.is_error
    assert env.client.calls == [("plan", PLAN)]
    assert outcome.output == (
        "Plan updated:\n[x] Read the code (high)\n[~] Fix the bug (medium)\n[ ] Write a test (low)"
    )


async def test_an_empty_plan_clears_it(tmp_path: Path) -> None:
    env = Env(cwd=tmp_path, client=Editor())
    outcome = await call(env, "update_plan", entries=[])
    assert env.client.calls == [("plan", [])] and outcome.output == "The plan is now empty."


def test_bad_entries_are_refused_before_anything_is_shown() -> None:
    tool = TOOLS["update_plan"]
    assert (
        tool.validate({"entries": [{"content": "x", "priority": "urgent", "status": "pending"}]})
        is not None
    )
    assert tool.validate({"entries": [{"content": "x", "priority": "low"}]}) is not None
    assert tool.validate({"entries": [dict(PLAN[0], extra=1)]}) is not None
    assert tool.validate({"entries": PLAN}) is None


def test_it_never_asks_and_looks_like_thinking(tmp_path: Path) -> None:
    tool, env = TOOLS["update_plan"], Env(cwd=tmp_path, client=Editor())
    assert not tool.needs_permission({"entries": PLAN}, env)
    view = tool.view({"entries": PLAN}, env)
    assert (view.title, view.kind, view.locations) == ("Update the plan", "think", ())
