"""The user's hooks, in Claude Code's `hooks` settings shape (docs/hooks.md), read from the
same files as the permission rules (`acp_fsm.user_settings`):

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
                               "hooks": [{"type": "command", "command": "…", "timeout": 60}]}]}}

acp-fsm runs four events: `PreToolUse` (before a tool call, after the rules; it may allow,
deny or ask), `PostToolUse` (after a call that succeeded; what it says joins the result),
`UserPromptSubmit` (before a prompt is stored; it may block it or add context) and `Stop`
(when the turn would end; it may have the model go on). A tool event's matcher is compared
with the tool's Claude Code name (`Bash`, `Edit`, `Write`, `Read`, `WebFetch`, ...) and its
acp-fsm name: `*`, empty or absent for every tool, names joined by `|` or `,`, or else a
regular expression searched in the name. What runs them: `acp_fsm.hook_runs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal

Event = Literal["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"]
EVENTS: Final[tuple[Event, ...]] = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop")
TOOL_EVENTS: Final = frozenset({"PreToolUse", "PostToolUse"})
# Claude Code's other events: read, named once as not run here, skipped.
OTHER_EVENTS: Final = frozenset(
    {"SessionStart", "Setup", "UserPromptExpansion", "PermissionRequest", "PermissionDenied",
     "PostToolUseFailure", "PostToolBatch", "Notification", "MessageDisplay", "SubagentStart",
     "SubagentStop", "TaskCreated", "TaskCompleted", "StopFailure", "TeammateIdle",
     "InstructionsLoaded", "ConfigChange", "CwdChanged", "DirectoryAdded", "FileChanged",
     "WorktreeCreate", "WorktreeRemove", "PreCompact", "PostCompact", "PreModelSwitch",
     "PostModelSwitch", "Elicitation", "ElicitationResult", "SessionEnd"}
)  # fmt: skip
DEFAULT_TIMEOUT_S: Final = 600.0  # Claude Code's, for a command hook
PROMPT_TIMEOUT_S: Final = 30.0  # a UserPromptSubmit hook's default: the user waits for it
MAX_HOOKS: Final = 100  # per file: the rest are named as skipped
# acp-fsm's tools by the Claude Code names a hook's matcher takes for them (the first is the
# `tool_name` of its events; `Task` is `Agent`'s name before Claude Code 2.1.63).
CLAUDE_NAMES: Final[dict[str, tuple[str, ...]]] = {
    "run_command": ("Bash",),
    "read_file": ("Read",),
    "write_file": ("Write",),
    "edit_file": ("Edit",),
    "multi_edit": ("MultiEdit",),
    "apply_patch": ("Edit",),
    "list_directory": ("LS",),
    "glob": ("Glob",),
    "search_files": ("Grep",),
    "fetch_url": ("WebFetch",),
    "task": ("Agent", "Task"),
}
_NAMES = re.compile(r"[A-Za-z0-9_ ,|-]*")  # a matcher of plain names: compared exactly


@dataclass(frozen=True, slots=True)
class Hook:
    """One command hook: its event, which tools it is for, what runs, for how long at most,
    and where it was read."""

    event: Event
    matcher: str  # as written; "" for every tool
    command: str
    timeout_s: float
    source: Path

    def matches(self, tool: str) -> bool:
        """Whether the hook is for a call of `tool` (its acp-fsm or Claude Code name)."""
        names = (tool, *CLAUDE_NAMES.get(tool, ()))
        return any(_matches(self.matcher, name) for name in names)


@dataclass
class Hooks:
    """The hooks in force, and what could not be used (each named once to the user)."""

    hooks: list[Hook] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def of(self, event: Event, tool: str | None = None) -> list[Hook]:
        """The hooks to run for `event` (of a call of `tool`): each command once."""
        found: dict[str, Hook] = {}
        for hook in self.hooks:
            if hook.event == event and (tool is None or hook.matches(tool)):
                found.setdefault(hook.command, hook)
        return list(found.values())


def take(document: dict[str, Any], path: Path, shared: bool, found: Hooks) -> None:
    """Add the hooks of one settings file's `document` to `found` (`shared`: the project's
    shared file, whose hooks do not run: a checkout cannot run commands on its own)."""
    events = document.get("hooks")
    if events is None:
        return
    if not isinstance(events, dict):
        found.problems.append(f"{path}: `hooks` is not an object, skipped")
        return
    if shared and events:
        found.problems.append(
            f"{path}: its hooks are not run: a project's shared settings cannot run commands "
            "(put them in settings.local.json or in your own settings)"
        )
        return
    taken = 0
    for event, groups in events.items():
        if event in OTHER_EVENTS:
            found.problems.append(f"{path}: {event} hooks are not run by acp-fsm")
            continue
        if event not in EVENTS:
            found.problems.append(f"{path}: no hook event {event!r}")
            continue
        if not isinstance(groups, list):
            found.problems.append(f"{path}: `hooks.{event}` is not a list, skipped")
            continue
        for group in groups:
            for hook in _group(event, group, path, found):
                if taken == MAX_HOOKS:
                    found.problems.append(f"{path}: hooks past the first {MAX_HOOKS} are skipped")
                    return
                found.hooks.append(hook)
                taken += 1


def _group(event: Event, group: Any, path: Path, found: Hooks) -> list[Hook]:
    """The command hooks of one `{"matcher": …, "hooks": […]}` entry."""
    where = f"{path}: a {event} hook"
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        found.problems.append(f'{where} entry is not {{"matcher", "hooks": [...]}}, skipped')
        return []
    matcher = group.get("matcher") or ""
    if not isinstance(matcher, str):
        found.problems.append(f"{where} matcher is not a string, skipped")
        return []
    if event in TOOL_EVENTS and _pattern(matcher) is None:
        found.problems.append(f"{where} matcher {matcher!r} is not a regular expression, skipped")
        return []
    hooks = []
    default = PROMPT_TIMEOUT_S if event == "UserPromptSubmit" else DEFAULT_TIMEOUT_S
    for handler in group["hooks"]:
        kind = handler.get("type") if isinstance(handler, dict) else None
        if kind != "command":
            found.problems.append(f"{where} of type {kind!r} is skipped: acp-fsm runs commands")
            continue
        command, timeout = handler.get("command"), handler.get("timeout", default)
        if not isinstance(command, str) or not command.strip():
            found.problems.append(f"{where} has no command, skipped")
        elif isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            found.problems.append(f"{where} timeout {timeout!r} is not a number of seconds")
        else:
            # a matcher means nothing for the prompt and stop events (as in Claude Code)
            kept = matcher if event in TOOL_EVENTS else ""
            hooks.append(Hook(event, kept, command, float(timeout), path))
    return hooks


def _matches(matcher: str, name: str) -> bool:
    if matcher in ("", "*"):
        return True
    if _NAMES.fullmatch(matcher):
        return name in {part.strip() for part in re.split(r"[|,]", matcher)}
    pattern = _pattern(matcher)
    return pattern is not None and pattern.search(name) is not None


@lru_cache(maxsize=256)
def _pattern(matcher: str) -> re.Pattern[str] | None:
    """A matcher that is not plain names, as a regular expression; None when it is not one."""
    if matcher in ("", "*") or _NAMES.fullmatch(matcher):
        return re.compile("")
    try:
        return re.compile(matcher)
    except re.error:
        return None
