"""What the agent says, as the connection's ACP version says it (docs/protocol-v2.md).

The sessions and turns speak one language, v1's with three additions v1 has no words for: the
session's foreground `state_update` (running, waiting for the user, idle with the stop
reason), the `user_message` that echoes a prompt once it is stored, and the `cancelled` status
of a call the user's cancel stopped. `Dialect` (v1) leaves out the first two and says the third
`failed`; `DialectV2` converts the rest where v2 says it differently: a `tool_call` is the first
`tool_call_update` of its id, the plan a `plan_update` keyed by its id, a diff a list of
changes and a git patch, a command's input a tagged object, the options' ids `configId`s,
modes only a config option, a permission request titled and about a subject. One place
converts, so no session or turn knows which version it is heard in.
"""

from __future__ import annotations

import difflib
from typing import Any

from acp_fsm.versions import V1, V2

# Said by sessions for v2 alone: v1 has neither (its prompt's answer carries the stop reason).
V2_ONLY = frozenset({"state_update", "user_message"})
CALLS = frozenset({"tool_call", "tool_call_update"})
# The id of the session's plan: one plan per session (the `update_plan` tool's).
PLAN_ID = "plan"
# A diff's patch is made for texts up to this size together; a larger change is shown as the
# change of its file alone (v2's `patch` is optional): a diff of megabytes would hold the loop.
PATCH_MAX_CHARS = 128 * 1024  # about 10 ms of difflib at most, measured


class Dialect:
    """ACP v1: every update as the sessions say it, but v2's own."""

    version = V1

    def update(self, update: dict[str, Any]) -> dict[str, Any] | None:
        """`update` as this version says it; None when it has no words for it. A call the
        user's cancel stopped is `failed` (v2 has `cancelled` for it)."""
        kind = update["sessionUpdate"]
        if kind in V2_ONLY:
            return None
        if kind in CALLS and update.get("status") == "cancelled":
            return {**update, "status": "failed"}
        return update

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The params of our request `method` as this version says them."""
        return params

    def result(self, method: str, result: Any) -> Any:
        """The result of the client's `method` request as this version says it."""
        return result


class DialectV2(Dialect):
    """ACP v2."""

    version = V2

    def update(self, update: dict[str, Any]) -> dict[str, Any] | None:
        kind = update["sessionUpdate"]
        if kind == "tool_call":
            return _tool_call_fields({**update, "sessionUpdate": "tool_call_update"})
        if kind == "tool_call_update":
            return _tool_call_fields(update)
        if kind == "plan":
            entries = update["entries"]
            if not entries:
                return {"sessionUpdate": "plan_removed", "planId": PLAN_ID}
            plan = {"type": "items", "planId": PLAN_ID, "entries": entries}
            return {"sessionUpdate": "plan_update", "plan": plan}
        if kind == "current_mode_update":
            return None  # the mode is a config option: its `config_option_update` says it
        if kind == "available_commands_update":
            commands = [_command(c) for c in update["availableCommands"]]
            return {**update, "availableCommands": commands}
        if kind == "config_option_update":
            return {**update, "configOptions": config_options(update["configOptions"])}
        return update

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != "session/request_permission":
            return params
        call = _tool_call_fields(params["toolCall"])
        converted = {
            key: value for key, value in params.items() if key not in ("toolCall", "title")
        }
        converted["title"] = params.get("title") or call.get("title") or "Allow this call?"
        converted["subject"] = {"type": "tool_call", "toolCall": call}
        return converted

    def result(self, method: str, result: Any) -> Any:
        if not isinstance(result, dict) or "configOptions" not in result:
            return result
        kept = {k: v for k, v in result.items() if k not in ("modes", "models")}
        kept["configOptions"] = config_options(result["configOptions"])
        return kept


DIALECTS: dict[int, Dialect] = {V1: Dialect(), V2: DialectV2()}


def config_options(options: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Config options as v2 names them: `configId` for `id` (this agent's are flat selects:
    no groups to rename)."""
    return [{("configId" if k == "id" else k): v for k, v in o.items()} for o in options]


def _command(command: dict[str, Any]) -> dict[str, Any]:
    """An available command, tagged (`"type": "command"`), its input too (`"text"`)."""
    given = command.get("input")
    said = {"type": "command", **command}
    if isinstance(given, dict) and "type" not in given:
        said["input"] = {"type": "text", **given}
    return said


def _tool_call_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A tool call's fields with its content as v2 shows it (diffs converted)."""
    content = fields.get("content")
    if not content or not any(block.get("type") == "diff" for block in content):
        return fields
    return {**fields, "content": [diff_v2(b) if b.get("type") == "diff" else b for b in content]}


def diff_v2(block: dict[str, Any]) -> dict[str, Any]:
    """A v1 diff (a file's old and new text) as v2's: the change of the file, and its git
    patch when the texts are small enough to compare here."""
    path, old, new = block["path"], block.get("oldText"), block["newText"]
    change: dict[str, Any] = {"operation": "add" if old is None else "modify", "path": path}
    converted: dict[str, Any] = {"type": "diff", "changes": [change]}
    if "_meta" in block:
        converted["_meta"] = block["_meta"]
    if len(old or "") + len(new) <= PATCH_MAX_CHARS:
        converted["patch"] = {"format": "git_patch", "text": git_patch(path, old, new)}
    return converted


def git_patch(path: str, old: str | None, new: str) -> str:
    """The change of `path` from `old` (None: a new file) to `new`, as `git diff` writes it."""
    name = path.lstrip("/")
    head = [f"diff --git a/{name} b/{name}\n"]
    if old is None:
        head.append("new file mode 100644\n")
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{name}",
        f"b/{name}",
    )
    body = []
    for line in lines:
        body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(head + body)
