"""The hooks' settings (`acp_fsm.hooks`: shapes, matchers, what is skipped and named) and what
a run says (`acp_fsm.hook_runs.read`: exit statuses and JSON answers, several hooks at once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.hook_runs import HookRun, Said, read
from acp_fsm.hooks import Hook, Hooks, take

SOURCE = Path("/p/.claude/settings.local.json")


def taken(events: Any, *, shared: bool = False) -> Hooks:
    found = Hooks()
    take({"hooks": events}, SOURCE, shared, found)
    return found


def group(matcher: str | None = None, *commands: str, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "hooks": [{"type": "command", "command": c, **extra} for c in commands]
    }
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


@pytest.mark.parametrize(
    ("matcher", "tool", "hit"),
    [
        (None, "run_command", True),
        ("*", "mcp__gh__issue", True),
        ("Bash", "run_command", True),  # Claude Code's name
        ("run_command", "run_command", True),  # acp-fsm's
        ("Edit|Write", "write_file", True),
        ("Edit, Write", "apply_patch", True),  # a patch is an Edit
        ("Edit", "write_file", False),  # names are exact
        ("Bash", "bash", False),
        ("mcp__gh__.*", "mcp__gh__issue", True),  # a regular expression
        ("Edit.*", "multi_edit", True),  # searched, not anchored (as in Claude Code): MultiEdit
        ("^Edit", "multi_edit", False),
        ("edit.*", "write_file", False),  # case counts
        ("^Read$", "read_file", True),
        ("mcp__gh", "mcp__gh__issue", False),  # plain names are compared whole
    ],
)
def test_a_matcher_names_tools_by_either_name(matcher: str | None, tool: str, hit: bool) -> None:
    found = taken({"PreToolUse": [group(matcher, "true")]})
    assert bool(found.of("PreToolUse", tool)) is hit


def test_what_cannot_be_used_is_named_and_the_rest_is_kept() -> None:
    found = taken(
        {
            "PreToolUse": [
                group("Bash", "a", timeout=5),
                group("(", "b"),  # not a regular expression
                {"matcher": "x"},  # no hooks list
                group("Bash", "", timeout=5),  # no command
                group("Bash", "c", timeout="soon"),
                {"hooks": [{"type": "http", "url": "http://x"}]},
            ],
            "Stop": [group("ignored", "d")],  # a matcher means nothing here
            "SessionStart": [group(None, "e")],
            "Teleport": [],
            "PostToolUse": "not a list",
        }
    )
    assert [(h.event, h.matcher, h.command, h.timeout_s) for h in found.hooks] == [
        ("PreToolUse", "Bash", "a", 5.0),
        ("Stop", "", "d", 600.0),
    ]
    named = "\n".join(found.problems)
    for expected in (
        "matcher '(' is not a regular expression",
        'is not {"matcher", "hooks": [...]}',
        "has no command",
        "timeout 'soon' is not a number of seconds",
        "of type 'http' is skipped",
        "SessionStart hooks are not run by acp-fsm",
        "no hook event 'Teleport'",
        "`hooks.PostToolUse` is not a list",
    ):
        assert expected in named
    assert len(found.problems) == 8


def test_a_prompt_hook_waits_30_s_by_default_and_a_command_runs_once() -> None:
    found = taken(
        {"UserPromptSubmit": [group(None, "same"), group(None, "same")], "Stop": [group(None, "s")]}
    )
    assert [h.timeout_s for h in found.of("UserPromptSubmit")] == [30.0]
    assert [h.command for h in found.of("Stop")] == ["s"]


def test_a_shared_files_hooks_are_refused_whole() -> None:
    found = taken({"PreToolUse": [group(None, "rm -rf ~")]}, shared=True)
    assert found.hooks == [] and "cannot run commands" in found.problems[0]


def said(*runs: tuple[int | None, str, str], event: str = "PreToolUse") -> Said:
    hook = Hook("PreToolUse", "", "h", 1.0, SOURCE)
    found = Said()
    for status, out, err in runs:
        read(
            HookRun(hook, status, out, err, None if status is not None else "timed out"),
            event,
            found,
        )
    return found


def test_exit_2_blocks_with_stderr_and_other_statuses_block_nothing() -> None:
    assert (said((2, "", "nope")).decision, said((2, "", "nope")).reason) == ("deny", "nope")
    failed = said((1, "", "boom"))
    assert failed.decision is None and "failed (exit status 1): boom" in failed.shown[0]
    assert said((None, "", "")).shown[0].endswith("timed out; it was ignored.")
    assert said((0, "plain words", "")).context == []  # plain stdout: not for a tool's model
    assert said((0, "plain words", ""), event="UserPromptSubmit").context == ["plain words"]


def test_json_answers_and_the_strongest_decision_of_several_hooks() -> None:
    allow = '{"hookSpecificOutput": {"permissionDecision": "allow"}}'
    ask = '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "r"}}'
    block = '{"decision": "block", "reason": "bad", "systemMessage": "careful"}'
    assert said((0, allow, "")).decision == "allow"
    assert (said((0, allow, ""), (0, ask, "")).decision, said((0, ask, "")).reason) == ("ask", "r")
    both = said((0, ask, ""), (1, block, ""), (0, allow, ""))  # JSON decides whatever the status
    assert (both.decision, both.reason, both.shown) == ("deny", "bad", ["careful"])
    halted = said((0, '{"continue": false, "stopReason": "enough"}', ""))
    assert halted.halt == "enough" and halted.decision is None
    legacy = said((0, '{"decision": "approve"}', ""))
    assert legacy.decision == "allow"
    context = '{"hookSpecificOutput": {"additionalContext": "use tabs"}}'
    assert said((0, context, "")).context == ["use tabs"]
    assert said((0, "{broken", "")).decision is None
