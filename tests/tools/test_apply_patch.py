"""apply_patch: Codex's patch format, parsed strictly, matched leniently, applied whole or not
at all (acp_fsm.tools.patch_format, hunks, apply_patch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_fsm.tools import ESSENTIAL, SMALL_WINDOW_TOKENS, TOOLS, edit_style, listed
from acp_fsm.tools.common import ToolError
from acp_fsm.tools.hunks import apply_hunks
from acp_fsm.tools.patch_format import parse_patch
from tests.tools.conftest import Env, call, diff_block


def patch(*lines: str) -> str:
    return "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"


def update(text: str, *lines: str) -> str:
    ops = parse_patch(patch("*** Update File: f.py", *lines))
    after, _ = apply_hunks(text, ops[0].hunks, "f.py")
    return after


def refused(text: str, *lines: str) -> str:
    with pytest.raises(ToolError) as caught:
        update(text, *lines)
    return str(caught.value)


# -- the format -----------------------------------------------------------------------------


def test_every_operation_parses() -> None:
    ops = parse_patch(
        patch(
            "*** Add File: new.txt",
            "+hello",
            "+world",
            "*** Delete File: old.txt",
            "*** Update File: a.py",
            "*** Move to: b.py",
            "@@ def f():",
            " x = 1",
            "-y = 2",
            "+y = 3",
            "*** End of File",
        )
    )
    assert [(op.kind, op.path, op.move_to) for op in ops] == [
        ("add", "new.txt", None),
        ("delete", "old.txt", None),
        ("update", "a.py", "b.py"),
    ]
    assert ops[0].content == "hello\nworld\n"
    hunk = ops[2].hunks[0]
    assert (hunk.context, hunk.at_end, hunk.old, hunk.added) == (
        "def f():",
        True,
        ["x = 1", "y = 2"],
        ["y = 3"],
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("*** Update File: a.py\n-x\n", "must start with the line `*** Begin Patch`"),
        ("*** Begin Patch\n*** Update File: a.py\n-x\n", "does not end with `*** End Patch`"),
        ("*** Begin Patch\n*** End Patch\n", "changes no file"),
        (patch("*** Update File: a.py", "@@", "?x"), "line 4: a hunk line must start with"),
        (patch("*** Frobnicate File: a.py"), "line 2: expected `*** Add File: `"),
        (patch("*** Update File: a.py"), "has no hunk"),
        (patch("*** Update File: a.py", "-x") + "trailing\n", "text after `*** End Patch`"),
    ],
)
def test_a_malformed_patch_is_refused_saying_where(text: str, said: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_patch(text)
    assert said in str(caught.value)


# -- hunks ----------------------------------------------------------------------------------


def test_a_hunk_replaces_its_lines_and_keeps_the_rest() -> None:
    text = "a\nb\nc\nd\n"
    assert update(text, "@@", " b", "-c", "+C", " d") == "a\nb\nC\nd\n"


def test_hunks_apply_in_order_and_an_at_line_narrows_the_place() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 1\n"
    after = update(text, "@@ def g():", "-    return 1", "+    return 2")
    assert after == "def f():\n    return 1\n\ndef g():\n    return 2\n"


def test_a_hunk_matching_two_places_is_refused_with_both_lines() -> None:
    text = "def f():\n    return 1\n\ndef g():\n    return 1\n"
    message = refused(text, "@@", "-    return 1", "+    return 2")
    assert "occur at 2 places (lines 2 and 5)" in message


def test_end_of_file_holds_the_hunk_to_the_end() -> None:
    text = "x = 1\ny = 2\nx = 1\n"
    assert update(text, "@@", "-x = 1", "+x = 3", "*** End of File") == "x = 1\ny = 2\nx = 3\n"


def test_a_hunk_with_lost_indentation_is_reindented() -> None:
    text = "class A:\n    def f(self):\n        return 1\n"
    after = update(text, "@@", " def f(self):", "-    return 1", "+    return 2")
    assert after == "class A:\n    def f(self):\n        return 2\n"


def test_a_hunk_keeps_crlf_and_the_files_own_kept_lines() -> None:
    text = "a  \r\nb\r\nc\r\n"
    assert update(text, "@@", " a", "-b", "+B") == "a  \r\nB\r\nc\r\n"


def test_a_trailing_blank_context_line_the_file_lacks_is_forgiven() -> None:
    assert update("a\nb", "@@", "-b", "+c", " ") == "a\nc"


def test_a_missing_context_shows_the_closest_lines() -> None:
    text = "def load(path):\n    with open(path) as f:\n        return f.read()\n"
    message = refused(text, "@@", " def load(name):", "-    with open(name) as f:", "+    x")
    assert "hunk 1: its lines were not found" in message
    assert "     1\tdef load(path):" in message


def test_added_lines_only_go_after_the_at_line() -> None:
    assert update("import os\n\nx = 1\n", "@@ import os", "+import re") == (
        "import os\nimport re\n\nx = 1\n"
    )


# -- the tool -------------------------------------------------------------------------------


async def test_a_patch_adds_updates_moves_and_deletes(env: Env, project: Path) -> None:
    (project / "a.py").write_text("x = 1\ny = 2\n")
    (project / "old.txt").write_text("bye\n")
    (project / "m.py").write_text("m = 1\n")
    outcome = await call(
        env,
        "apply_patch",
        patch=patch(
            "*** Add File: pkg/new.py",
            "+n = 1",
            "*** Update File: a.py",
            "@@",
            " x = 1",
            "-y = 2",
            "+y = 3",
            "*** Delete File: old.txt",
            "*** Update File: m.py",
            "*** Move to: moved.py",
            "@@",
            "-m = 1",
            "+m = 2",
        ),
    )
    assert not outcome.is_error, outcome.output
    assert outcome.output == (
        "Applied the patch: added pkg/new.py, updated a.py (first change at line 2), "
        "deleted old.txt, moved m.py to moved.py."
    )
    assert (project / "pkg" / "new.py").read_text() == "n = 1\n"
    assert (project / "a.py").read_text() == "x = 1\ny = 3\n"
    assert not (project / "old.txt").exists()
    assert not (project / "m.py").exists()
    assert (project / "moved.py").read_text() == "m = 2\n"
    blocks = [diff_block(block) for block in outcome.content]
    diffs = {block["path"]: (block["oldText"], block["newText"]) for block in blocks}
    assert diffs[str(project / "old.txt")] == ("bye\n", "")
    assert diffs[str(project / "pkg" / "new.py")] == (None, "n = 1\n")


async def test_one_file_that_cannot_apply_writes_no_file(env: Env, project: Path) -> None:
    (project / "a.py").write_text("x = 1\n")
    (project / "b.py").write_text("y = 1\n")
    outcome = await call(
        env,
        "apply_patch",
        patch=patch(
            "*** Update File: a.py",
            "@@",
            "-x = 1",
            "+x = 2",
            "*** Update File: b.py",
            "@@",
            "-z = 1",
            "+z = 2",
        ),
    )
    assert outcome.is_error
    assert "b.py, hunk 1: its lines were not found" in outcome.output
    assert (project / "a.py").read_text() == "x = 1\n"


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (("*** Add File: a.py", "+x"), "Cannot add a.py: it exists"),
        (("*** Delete File: gone.py",), "Cannot delete gone.py: there is no such file"),
        (("*** Update File: gone.py", "@@", "-x", "+y"), "Cannot update gone.py"),
        (("*** Update File: a.py", "*** Move to: b.py", "@@", "-x", "+y"), "b.py: it exists"),
        (("*** Delete File: a.py", "*** Update File: a.py", "@@", "-x"), "more than once"),
        (("*** Delete File: a.py", "*** Update File: ./a.py", "@@", "-x"), "a.py more than once"),
    ],
)
async def test_changes_that_do_not_fit_the_files_are_refused(
    env: Env, project: Path, lines: tuple[str, ...], said: str
) -> None:
    (project / "a.py").write_text("x\n")
    (project / "b.py").write_text("b\n")
    outcome = await call(env, "apply_patch", patch=patch(*lines))
    assert outcome.is_error
    assert said in outcome.output
    assert (project / "a.py").read_text() == "x\n"


async def test_a_failed_disk_write_puts_back_what_was_written(env: Env, project: Path) -> None:
    (project / "a.py").write_text("x = 1\n")
    (project / "m.py").write_text("m = 1\n")
    (project / "plain.txt").write_text("a file, not a folder\n")
    outcome = await call(
        env,
        "apply_patch",
        patch=patch(
            "*** Update File: a.py",
            "@@",
            "-x = 1",
            "+x = 2",
            "*** Update File: m.py",
            "*** Move to: plain.txt/m.py",  # cannot be created: its folder is a file
            "@@",
            "-m = 1",
            "+m = 2",
        ),
    )
    assert outcome.is_error
    assert outcome.output == (
        "Could not write plain.txt/m.py: Not a folder, or a symbolic link: "
        f"{project / 'plain.txt'}. Nothing was changed."
    )
    assert (project / "a.py").read_text() == "x = 1\n"
    assert (project / "m.py").read_text() == "m = 1\n"


# -- which edit tools a model gets ------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model", "style"),
    [
        ("openai", "gpt-5", "patch"),
        ("openai", "gpt-4.1-mini", "patch"),
        ("openai", "o3", "patch"),
        ("openai", "o4-mini", "patch"),
        ("openai", "gpt-5-codex", "patch"),
        ("openai", "codex-mini-latest", "patch"),
        ("openai", "openai/gpt-5", "patch"),
        ("openai", "qwen2.5-coder-7b", "replace"),
        ("openai", "llama-3.1-8b", "replace"),
        ("openai", "gemma-3-270m-it", "replace"),
        ("anthropic", "claude-sonnet-4-5", "replace"),
        ("anthropic", "gpt-5", "replace"),  # a proxy's name; the wire format is Anthropic's
    ],
)
def test_the_edit_tools_follow_the_model(provider: str, model: str, style: str) -> None:
    assert edit_style(provider, model) == style


def shown(style: str) -> set[str]:
    return {name for name in TOOLS if listed(name, style)}


def test_each_style_lists_its_edit_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    assert shown("both") == set(TOOLS)
    assert "apply_patch" in shown("patch") and not shown("patch") & {"edit_file", "multi_edit"}
    assert "apply_patch" not in shown("replace") and {"edit_file", "multi_edit"} <= shown("replace")
    monkeypatch.setenv("ACP_FSM_EDIT_TOOLS", "both")
    assert edit_style("openai", "gpt-5") == "both"
    monkeypatch.setenv("ACP_FSM_EDIT_TOOLS", "Patch")
    assert edit_style("anthropic", "claude") == "patch"
    monkeypatch.setenv("ACP_FSM_EDIT_TOOLS", "sometimes")  # unknown: the model decides
    assert edit_style("openai", "gpt-5") == "patch"


def test_a_small_window_lists_only_the_essential_tools() -> None:
    small = {name for name in TOOLS if listed(name, "replace", SMALL_WINDOW_TOKENS - 1)}
    assert small == ESSENTIAL - {"apply_patch"}
    roomy = {name for name in TOOLS if listed(name, "replace", SMALL_WINDOW_TOKENS)}
    assert roomy == set(TOOLS) - {"apply_patch"}
    assert listed("mcp__files__read", "replace", 100)  # the editor's servers are the user's choice
