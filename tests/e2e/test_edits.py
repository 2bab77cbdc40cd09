"""Edits as models really send them, through the real agent: several replacements in one
multi_edit (one prompt, one diff, all or nothing), an edit_file whose text differs from the
file in indentation and line endings, apply_patch for the models trained on it (one prompt, a
diff per file, all or nothing, a cancel in the middle), reloads that show the diffs again, and
new files in editors that answer a missing file with empty text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import EMPTY, EMPTY_ONCE_SHOWN, HOLD
from acp_fsm.devkit.provider import Call, RecordedRequest, Reply, ScriptedProvider
from tests.e2e.support import BARE, EDITOR, Launcher, args, for_call, statuses, tool_results
from tests.e2e.test_sessions import restore
from tests.e2e.test_tools import (
    MODES,
    final,
    no_error,
    one_call,
    pending,
    progress,
    result_of,
    shows,
)

SOURCE = "def total(items):\n    result = 0\n    for item in items:\n        result += item\n"


@pytest.mark.parametrize(("capabilities", "provider"), MODES)
async def test_multi_edit_asks_once_with_one_diff_and_applies_every_edit(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, Any],
    provider: str,
) -> None:
    target = project / "calc.py"
    path = str(target)
    target.write_text(SOURCE)
    agent = await launch.start(provider, capabilities=capabilities)
    agent.editor.buffers[path] = SOURCE
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    edits = [
        {"old_text": "def total(items):", "new_text": "def total(items, start=0):"},
        {"old_text": "result = 0", "new_text": "result = start"},
        {"old_text": "item in items", "new_text": "value in items"},
        {"old_text": "result += item\n", "new_text": "result += value\n    return result\n"},
    ]
    raw = {"path": "calc.py", "edits": edits}

    updates = await one_call(agent, server, session, Call("m1", "multi_edit", args(**raw)))

    after = (
        "def total(items, start=0):\n    result = start\n    for value in items:\n"
        "        result += value\n    return result\n"
    )
    diff = {"type": "diff", "path": path, "oldText": SOURCE, "newText": after}
    assert updates == [
        pending("m1", "multi_edit", "Edit calc.py", "edit", raw, [{"path": path}]),
        shows("m1", [diff]),
        progress("m1"),
        final("m1", "completed", [diff], [{"path": path, "line": 1}]),
    ]
    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["content"] for r in asked] == [[diff]]
    written = agent.editor.buffers[path] if capabilities is not BARE else target.read_text()
    assert written == after
    assert result_of(server, "m1") == (
        "Edited calc.py: replaced 4 edits, 4 occurrences, first change at line 1.",
        no_error(provider),
    )


async def test_a_multi_edit_with_one_bad_edit_writes_nothing_and_asks_nobody(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    target = project / "calc.py"
    target.write_text(SOURCE)
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    edits = [
        {"old_text": "result = 0", "new_text": "result = 1"},
        {"old_text": "return result", "new_text": "return -result"},
    ]

    updates = await one_call(
        agent, server, session, Call("m1", "multi_edit", args(path="calc.py", edits=edits))
    )

    assert statuses(for_call(updates, "m1")) == ["pending", "failed"]
    assert agent.editor.of_method("session/request_permission") == []
    assert target.read_text() == SOURCE
    text, is_error = result_of(server, "m1")
    assert is_error is True
    assert text.startswith("Edit 2 of 2 failed, so no edit was applied and calc.py is unchanged")
    assert "old_text was not found in calc.py" in text


async def test_an_edit_retyped_with_spaces_lands_in_a_tab_indented_crlf_file(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    target = project / "main.go"
    original = b"func main() {\r\n\tif ok {\r\n\t\trun()\r\n\t}\r\n}\r\n"
    target.write_bytes(original)
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    raw = {
        "path": "main.go",
        "old_text": "    if ok {\n        run()\n    }\n",
        "new_text": "    if ok {\n        run()\n        report()\n    }\n",
    }

    updates = await one_call(agent, server, session, Call("e1", "edit_file", args(**raw)))

    assert statuses(for_call(updates, "e1")) == ["pending", "in_progress", "completed"]
    assert target.read_bytes() == (
        b"func main() {\r\n\tif ok {\r\n\t\trun()\r\n\t\treport()\r\n\t}\r\n}\r\n"
    )
    text, is_error = result_of(server, "e1")
    assert is_error is False
    assert text == (
        "Edited main.go: replaced 1 occurrence, first change at line 4. The match was not "
        "exact (matched ignoring indentation and surrounding whitespace, new_text re-indented "
        "to the file's indentation: a line it began with 4 spaces begins with 1 tab): check "
        "the result."
    )


async def test_a_reload_shows_the_multi_edit_diff_again(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "calc.py").write_text(SOURCE)
    first = await launch.start("anthropic")
    first.editor.permissions.append("allow_once")
    session = await first.new_session(project)
    edits = [{"old_text": "result = 0", "new_text": "result = 1"}]
    server.script(
        Reply(calls=(Call("m1", "multi_edit", args(path="calc.py", edits=edits)),)),
        Reply(text="done"),
    )
    live = await first.prompt(session, "start at one")
    assert live.stop_reason == "end_turn"
    await launch.close(first)

    second = await launch.start("anthropic")
    _, replayed = await restore(second, "session/load", session, project)

    shown = [u for u in for_call(replayed, "m1") if u.get("status") == "completed"]
    assert [u["content"] for u in shown] == [
        [
            {
                "type": "diff",
                "path": str(project / "calc.py"),
                "oldText": SOURCE,
                "newText": SOURCE.replace("result = 0", "result = 1"),
            }
        ]
    ]


# -- apply_patch ----------------------------------------------------------------------------


def patch(*lines: str) -> str:
    return "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"


def tool_names(request: RecordedRequest) -> set[str]:
    """The tools a model call listed, in either wire format."""
    return {tool.get("name") or tool["function"]["name"] for tool in request.body["tools"]}


@pytest.mark.parametrize(
    ("provider", "model", "edit_tools", "given", "not_given"),
    [
        ("openai", "gpt-5", None, {"apply_patch"}, {"edit_file", "multi_edit"}),
        ("openai", "qwen2.5-coder", None, {"edit_file", "multi_edit"}, {"apply_patch"}),
        ("anthropic", "claude-sonnet-4-5", None, {"edit_file", "multi_edit"}, {"apply_patch"}),
        ("openai", "gpt-5", "replace", {"edit_file", "multi_edit"}, {"apply_patch"}),
        ("anthropic", "claude-sonnet-4-5", "both", {"edit_file", "apply_patch"}, set()),
    ],
)
async def test_the_model_is_given_the_edit_tools_of_its_family(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    provider: str,
    model: str,
    edit_tools: str | None,
    given: set[str],
    not_given: set[str],
) -> None:
    agent = await launch.start(provider, ACP_FSM_MODEL=model, ACP_FSM_EDIT_TOOLS=edit_tools)
    session = await agent.new_session(project)
    server.script(Reply(text="hi"))
    assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    names = tool_names(server.requests[-1])
    assert given <= names and not names & not_given
    assert {"read_file", "write_file", "run_command"} <= names


@pytest.mark.parametrize(("capabilities", "provider"), MODES)
async def test_a_patch_of_two_files_asks_once_with_a_diff_for_each(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, Any],
    provider: str,
) -> None:
    (project / "calc.py").write_text(SOURCE)
    (project / "old.txt").write_text("obsolete\n")
    agent = await launch.start(provider, capabilities=capabilities, ACP_FSM_EDIT_TOOLS="both")
    agent.editor.buffers[str(project / "calc.py")] = SOURCE
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    text = patch(
        "*** Update File: calc.py",
        "@@ def total(items):",
        "-    result = 0",
        "+    result = 1",
        "*** Add File: notes/readme.md",
        "+# Notes",
        "*** Delete File: old.txt",
    )

    updates = await one_call(agent, server, session, Call("p1", "apply_patch", args(patch=text)))

    after = SOURCE.replace("result = 0", "result = 1")
    diffs = [
        {"type": "diff", "path": str(project / "calc.py"), "oldText": SOURCE, "newText": after},
        {
            "type": "diff",
            "path": str(project / "notes" / "readme.md"),
            "oldText": None,
            "newText": "# Notes\n",
        },
        {"type": "diff", "path": str(project / "old.txt"), "oldText": "obsolete\n", "newText": ""},
    ]
    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["content"] for r in asked] == [diffs]
    assert statuses(for_call(updates, "p1")) == ["pending", "in_progress", "completed"]
    assert for_call(updates, "p1")[-1]["content"] == diffs
    via_editor = capabilities is EDITOR
    calc = agent.editor.buffers[str(project / "calc.py")] if via_editor else None
    assert (calc if via_editor else (project / "calc.py").read_text()) == after
    readme = agent.editor.buffers.get(str(project / "notes" / "readme.md"))
    assert (readme if via_editor else (project / "notes" / "readme.md").read_text()) == (
        "# Notes\n"
    )
    assert not (project / "old.txt").exists()
    assert result_of(server, "p1") == (
        "Applied the patch: updated calc.py (first change at line 2), added notes/readme.md, "
        "deleted old.txt.",
        no_error(provider),
    )


async def test_a_cancel_while_the_patch_is_written_leaves_the_other_files(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("a = 1\n")
    (project / "b.py").write_text("b = 1\n")
    agent = await launch.start("openai", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    agent.editor.overrides["fs/write_text_file"] = HOLD  # the first write never ends
    session = await agent.new_session(project)
    text = patch(
        "*** Update File: a.py", "@@", "-a = 1", "+a = 2",
        "*** Update File: b.py", "@@", "-b = 1", "+b = 2",
    )  # fmt: skip
    server.script(Reply(calls=(Call("p1", "apply_patch", args(patch=text)),)))
    pending = await agent.start_prompt(session, "patch both")
    await agent.wait_request("fs/write_text_file")

    await agent.cancel(session)
    turn = await pending.result()

    assert turn.stop_reason == "cancelled"
    assert statuses(for_call(turn.updates, "p1"))[-1] == "failed"
    assert len(agent.editor.of_method("fs/write_text_file")) == 1  # b.py was never written
    assert (project / "a.py").read_text() == "a = 1\n"
    assert (project / "b.py").read_text() == "b = 1\n"


async def test_a_reload_shows_each_file_of_the_patch_again(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "a.py").write_text("a = 1\n")
    first = await launch.start("openai")
    first.editor.permissions.append("allow_once")
    session = await first.new_session(project)
    text = patch("*** Update File: a.py", "@@", "-a = 1", "+a = 2", "*** Add File: b.py", "+b")
    server.script(Reply(calls=(Call("p1", "apply_patch", args(patch=text)),)), Reply(text="ok"))
    assert (await first.prompt(session, "patch")).stop_reason == "end_turn"
    await launch.close(first)

    second = await launch.start("openai")
    _, replayed = await restore(second, "session/load", session, project)

    done = [u for u in for_call(replayed, "p1") if u.get("status") == "completed"]
    assert [[(d["path"], d["oldText"], d["newText"]) for d in u["content"]] for u in done] == [
        [(str(project / "a.py"), "a = 1\n", "a = 2\n"), (str(project / "b.py"), None, "b\n")]
    ]


async def test_the_model_hears_when_its_edit_breaks_the_file(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "calc.py").write_text(SOURCE)
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    raw = {"path": "calc.py", "old_text": "    result = 0\n", "new_text": "    result = (0\n"}

    await one_call(agent, server, session, Call("e1", "edit_file", args(**raw)))

    text, is_error = result_of(server, "e1")
    assert is_error is False
    assert (project / "calc.py").read_text() == SOURCE.replace("result = 0", "result = (0")
    assert "Warning: calc.py no longer parses as Python after this change (line 2:" in text


# -- a new file in an editor that answers a missing file with empty text --------------------


@pytest.mark.parametrize("missing", [EMPTY, EMPTY_ONCE_SHOWN])
@pytest.mark.parametrize(
    ("tool", "raw", "said"),
    [
        ("write_file", {"path": "new.py", "content": "x = 1\n"}, "Created new.py (1 line)."),
        (
            "apply_patch",
            {"patch": patch("*** Add File: new.py", "+x = 1")},
            "Applied the patch: added new.py.",
        ),
    ],
)
async def test_a_file_the_editor_answers_empty_and_the_disk_lacks_is_a_new_file(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    missing: str,
    tool: str,
    raw: dict[str, Any],
    said: str,
) -> None:
    """CodeCompanion and Toad answer `""` for a file they do not have; avante answers "not
    found" until it has opened the file to show its diff, then `""`."""
    path = str(project / "new.py")
    agent = await launch.start("anthropic", capabilities=EDITOR, ACP_FSM_EDIT_TOOLS="both")
    agent.editor.missing_files = missing
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    updates = await one_call(agent, server, session, Call("c1", tool, args(**raw)))

    diff = {"type": "diff", "path": path, "oldText": None, "newText": "x = 1\n"}
    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["content"] for r in asked] == [[diff]]
    assert statuses(for_call(updates, "c1")) == ["pending", "in_progress", "completed"]
    assert for_call(updates, "c1")[-1]["content"] == [diff]
    assert result_of(server, "c1") == (said, False)
    assert agent.editor.buffers[path] == "x = 1\n"


async def test_a_file_the_editor_answers_empty_and_the_disk_lacks_is_not_there_to_change(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=EDITOR, ACP_FSM_EDIT_TOOLS="both")
    agent.editor.missing_files = EMPTY
    session = await agent.new_session(project)
    update = patch("*** Update File: new.py", "@@", "-x = 1", "+x = 2")
    server.script(
        Reply(
            calls=(
                Call("read", "read_file", args(path="new.py")),
                Call("edit", "edit_file", args(path="new.py", old_text="x = 1", new_text="x")),
                Call("patch", "apply_patch", args(patch=update)),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "change new.py")).stop_reason == "end_turn"

    assert agent.editor.of_method("session/request_permission") == []
    assert tool_results(server.requests[-1]) == {
        "read": (
            "File not found: new.py (it is not on disk, and the editor has no text for it)",
            True,
        ),
        "edit": ("File not found: new.py (use write_file to create a file)", True),
        "patch": ("Cannot update new.py: there is no such file; nothing was changed.", True),
    }


async def test_an_empty_file_on_disk_is_an_existing_empty_file(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    path = str(project / "empty.py")
    (project / "empty.py").write_text("")
    agent = await launch.start("anthropic", capabilities=EDITOR, ACP_FSM_EDIT_TOOLS="both")
    agent.editor.missing_files = EMPTY
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("add", "apply_patch", args(patch=patch("*** Add File: empty.py", "+x"))),
                Call("write", "write_file", args(path="empty.py", content="x = 1\n")),
            )
        ),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "fill empty.py")

    diff = {"type": "diff", "path": path, "oldText": "", "newText": "x = 1\n"}
    assert for_call(turn.updates, "write")[-1]["content"] == [diff]
    results = tool_results(server.requests[-1])
    assert results["add"] == (
        "Cannot add empty.py: it exists. Use `*** Update File: empty.py` to change it; nothing "
        "was changed.",
        True,
    )
    assert results["write"] == ("Wrote empty.py (1 line, was 0 lines).", False)
