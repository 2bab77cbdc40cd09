"""The task tool on its own (the subagent it starts: tests/test_subagent.py and
tests/e2e/test_subagents.py): its arguments, its view, and what it hands the runtime."""

from __future__ import annotations

from acp_fsm.tools import TOOLS
from tests.tools.conftest import Env, call


async def test_a_task_hands_its_prompt_to_the_runtime(env: Env) -> None:
    outcome = await call(env, "task", description="  find   callers ", prompt="Find callers of f")
    assert outcome.output == "report on find callers"
    assert env.client.calls == [("delegate", ("find callers", "Find callers of f"))]


async def test_a_blank_or_missing_prompt_is_refused_before_anything_runs(env: Env) -> None:
    blank = await call(env, "task", description="x", prompt="  \n")
    missing = await call(env, "task", description="x")
    assert blank.is_error and "prompt is blank" in blank.output
    assert missing.is_error and 'missing required property "prompt"' in missing.output
    assert env.client.calls == []


def test_a_task_is_shown_titled_by_its_description_with_its_prompt_and_asks_nothing(
    env: Env,
) -> None:
    """Of kind `other` in the editor (clients draw `think` as reasoning, and some hide its
    title); of kind `think` for the modes (it changes nothing)."""
    task = TOOLS["task"]
    args = {"description": "map\nthe   modules", "prompt": " Map the modules.\n"}
    view = task.view(args, env)
    assert (view.title, view.kind, task.kind) == ("Task: map the modules", "other", "think")
    assert view.content == (
        {"type": "content", "content": {"type": "text", "text": "Map the modules."}},
    )
    assert not task.needs_permission(args, env) and task.confined(args, env)
    assert task.concurrent and not TOOLS["read_file"].concurrent
