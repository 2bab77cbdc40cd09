"""What the sessions say, as each ACP version says it (`acp_fsm.dialects`), and the client's
view that reads v2 back in v1's words (`acp_fsm.devkit.editor.v1_view`): v1 unchanged but for
v2's own updates; v2's conversions valid under schemas/acp_v2.json; the git patch of a diff
applied by git itself; a v1 update through v2 and back through the view is itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_fsm import schemas
from acp_fsm.devkit.editor.v1_view import V1View
from acp_fsm.dialects import DIALECTS, PATCH_MAX_CHARS, diff_v2, git_patch
from acp_fsm.versions import V1, V2

V1_SAYS, V2_SAYS = DIALECTS[V1], DIALECTS[V2]
CALL = {
    "sessionUpdate": "tool_call",
    "toolCallId": "c1",
    "status": "pending",
    "title": "Edit a.py",
    "kind": "edit",
    "rawInput": {"path": "a.py"},
    "name": "edit_file",
    "content": [{"type": "diff", "path": "/p/a.py", "oldText": "a\n", "newText": "b\n"}],
    "locations": [{"path": "/p/a.py"}],
}
COMMANDS = {
    "sessionUpdate": "available_commands_update",
    "availableCommands": [
        {"name": "compact", "description": "Summarise"},
        {"name": "review", "description": "Review", "input": {"hint": "what"}},
    ],
}
OPTIONS = {
    "sessionUpdate": "config_option_update",
    "configOptions": [
        {
            "id": "mode",
            "name": "Mode",
            "category": "mode",
            "type": "select",
            "currentValue": "ask",
            "options": [{"value": "ask", "name": "Ask"}],
        }
    ],
}
PLAN = {
    "sessionUpdate": "plan",
    "entries": [{"content": "x", "priority": "high", "status": "pending"}],
}
CHUNK = {
    "sessionUpdate": "agent_message_chunk",
    "content": {"type": "text", "text": "hi"},
    "messageId": "m1",
}


def valid_v2(update: dict[str, Any]) -> None:
    violation = schemas.validate("acp_v2.SessionUpdate", update)
    assert violation is None, (update, violation)


def test_v1_says_everything_as_it_is_but_v2s_own() -> None:
    for update in (CALL, COMMANDS, OPTIONS, PLAN, CHUNK):
        assert V1_SAYS.update(update) is update
    assert V1_SAYS.update({"sessionUpdate": "state_update", "state": "running"}) is None
    assert (
        V1_SAYS.update({"sessionUpdate": "user_message", "messageId": "m", "content": []}) is None
    )
    params = {"sessionId": "s", "toolCall": {"toolCallId": "c1"}, "options": []}
    assert V1_SAYS.request("session/request_permission", params) is params
    stopped = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "cancelled"}
    assert V1_SAYS.update(stopped) == {**stopped, "status": "failed"}  # v1 has no `cancelled`
    assert V2_SAYS.update(stopped) == stopped


def test_v2_says_each_update_its_way() -> None:
    call = V2_SAYS.update(CALL)
    assert call is not None and call["sessionUpdate"] == "tool_call_update"
    assert call["content"][0]["changes"] == [{"operation": "modify", "path": "/p/a.py"}]
    plan = V2_SAYS.update(PLAN)
    assert plan == {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": "plan", "entries": PLAN["entries"]},
    }
    emptied = V2_SAYS.update({"sessionUpdate": "plan", "entries": []})
    assert emptied == {"sessionUpdate": "plan_removed", "planId": "plan"}
    commands = V2_SAYS.update(COMMANDS)
    assert commands is not None
    assert [c["type"] for c in commands["availableCommands"]] == ["command", "command"]
    assert commands["availableCommands"][1]["input"] == {"type": "text", "hint": "what"}
    options = V2_SAYS.update(OPTIONS)
    assert options is not None and options["configOptions"][0]["configId"] == "mode"
    assert V2_SAYS.update({"sessionUpdate": "current_mode_update", "currentModeId": "ask"}) is None
    for said in (call, plan, emptied, commands, options, V2_SAYS.update(CHUNK)):
        assert said is not None
        valid_v2(said)


def test_v2_asks_permission_about_a_subject() -> None:
    params = {
        "sessionId": "s",
        "toolCall": {k: v for k, v in CALL.items() if k != "sessionUpdate"},
        "options": [{"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"}],
    }
    said = V2_SAYS.request("session/request_permission", params)
    assert said["title"] == "Edit a.py" and "toolCall" not in said
    assert said["subject"]["type"] == "tool_call"
    assert said["subject"]["toolCall"]["content"][0]["type"] == "diff"
    assert schemas.validate("acp_v2.RequestPermissionRequest", said) is None
    assert V2_SAYS.request("elicitation/create", params) is params


def test_v2_results_have_no_modes() -> None:
    result = {"sessionId": "s", "configOptions": OPTIONS["configOptions"], "modes": {}}
    said = V2_SAYS.result("session/new", result)
    assert set(said) == {"sessionId", "configOptions"}
    assert said["configOptions"][0]["configId"] == "mode"
    assert schemas.validate("acp_v2.NewSessionResponse", said) is None
    assert V2_SAYS.result("session/list", {"sessions": []}) == {"sessions": []}


def test_through_v2_and_the_view_an_update_is_itself() -> None:
    """The view is the dialect's inverse for what v1 and v2 both can say."""
    view = V1View()
    for update in (
        CALL,
        {**CALL, "sessionUpdate": "tool_call_update"},
        COMMANDS,
        OPTIONS,
        PLAN,
        CHUNK,
    ):
        said = V2_SAYS.update(update)
        assert said is not None
        message = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": said},
        }
        (seen,) = view.incoming(message)
        back = seen["params"]["update"]
        if update is CALL or update.get("toolCallId"):
            assert back["content"] == said["content"]  # a v2 diff has no texts to give back
            back = {**back, "content": update["content"]}
        assert back == update


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize(
    ("old", "new"),
    [
        (None, "first\nsecond\n"),
        ("a\nb\nc\n", "a\nB\nc\nd\n"),
        ("no newline", "no newline at the end either"),
        ("line\n", ""),
        ("", "x = 1\n"),
    ],
)
def test_the_patch_is_one_git_applies(tmp_path: Path, old: str | None, new: str) -> None:
    """`git apply` takes the patch and makes the new text from the old (its paths are the
    file's absolute path without the leading slash: applied at the root)."""
    target = tmp_path / "repo" / "dir" / "f.txt"
    target.parent.mkdir(parents=True)
    if old is not None:
        target.write_text(old)
    patch = tmp_path / "change.patch"
    patch.write_text(git_patch(str(target), old, new))
    subprocess.run(
        ["git", "apply", "--unsafe-paths", "--directory=/", str(patch)],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    assert target.read_text() == new


def test_a_huge_change_goes_without_its_patch() -> None:
    big = "x" * (PATCH_MAX_CHARS + 1)
    said = diff_v2({"type": "diff", "path": "/p/big.txt", "oldText": None, "newText": big})
    assert said == {"type": "diff", "changes": [{"operation": "add", "path": "/p/big.txt"}]}
