"""Replacing text the way models write it: exact first, then tolerant, never ambiguous; the
file's own line endings and indentation for what is put in (acp_fsm.tools.replace)."""

from __future__ import annotations

import pytest

from acp_fsm.tools.common import ToolError
from acp_fsm.tools.matching import Level, eol_of, find, reindent
from acp_fsm.tools.replace import Change, Replacement, apply_edits, first_changed_line, summary


def edit(text: str, old: str, new: str, replace_all: bool = False) -> Change:
    return apply_edits(text, [Replacement(old, new, replace_all)], "f.py")


def refused(text: str, *replacements: Replacement) -> str:
    with pytest.raises(ToolError) as caught:
        apply_edits(text, list(replacements), "f.py")
    return str(caught.value)


# -- exact ----------------------------------------------------------------------------------


def test_an_exact_match_replaces_just_that_text() -> None:
    change = edit("a = 1\nb = 2\n", "b = 2", "b = 3")
    assert change.after == "a = 1\nb = 3\n"
    assert [(done.count, done.level) for done in change.applied] == [(1, Level.EXACT)]
    assert summary("f.py", change) == "Edited f.py: replaced 1 occurrence, first change at line 2."


def test_text_inside_a_line_is_replaced_in_place() -> None:
    assert edit("call(x, y)\n", "x, y", "y, x").after == "call(y, x)\n"


def test_several_exact_occurrences_are_refused_with_their_lines() -> None:
    message = refused("x = 1\ny = 2\nx = 1\n", Replacement("x = 1", "x = 9"))
    assert "occurs 2 times in f.py (at lines 1 and 3)" in message
    assert "replace_all" in message


def test_replace_all_replaces_every_occurrence() -> None:
    change = edit("x = 1\ny = 2\nx = 1\n", "x = 1", "x = 9", replace_all=True)
    assert change.after == "x = 9\ny = 2\nx = 9\n"
    assert "replaced 2 occurrences, first change at line 1." in summary("f.py", change)


# -- line endings ---------------------------------------------------------------------------


def test_lines_put_into_a_crlf_file_get_crlf() -> None:
    text = "def f():\r\n    return 1\r\n"
    change = edit(text, "    return 1\n", "    x = 1\n    return x\n")
    assert change.after == "def f():\r\n    x = 1\r\n    return x\r\n"


def test_an_exact_crlf_match_of_a_single_line_keeps_crlf() -> None:
    change = edit("a\r\nb\r\n", "b", "c\nd")
    assert change.after == "a\r\nc\r\nd\r\n"


def test_the_file_ending_is_its_majority() -> None:
    assert eol_of("a\r\nb\r\nc\n") == "\r\n"
    assert eol_of("a\nb\nc\r\n") == "\n"
    assert eol_of("no line break") == "\n"


# -- tolerant -------------------------------------------------------------------------------


def test_trailing_whitespace_is_ignored_when_the_place_is_unique() -> None:
    text = "if x:   \n    y()\t\nz()\n"
    change = edit(text, "if x:\n    y()\n", "if x:\n    w()\n")
    assert change.after == "if x:\n    w()\nz()\n"
    assert change.applied[0].level is Level.TRAILING_WHITESPACE
    assert "The match was not exact (matched ignoring trailing whitespace)" in summary(
        "f.py", change
    )


def test_a_block_given_without_its_indentation_is_reindented() -> None:
    text = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        pass\n"
    change = edit(text, "def f(self):\n    return 1\n", "def f(self):\n    x = 1\n    return x\n")
    assert change.after == (
        "class A:\n    def f(self):\n        x = 1\n        return x\n\n"
        "    def g(self):\n        pass\n"
    )
    assert change.applied[0].level is Level.WHITESPACE
    assert "re-indented" in change.applied[0].note


def test_a_block_given_too_deep_is_dedented() -> None:
    text = "def f():\n    return 1\n"
    change = edit(text, "        return 1", "        if x:\n            return 2\n        return 1")
    assert change.after == "def f():\n    if x:\n        return 2\n    return 1\n"


def test_spaces_for_a_tab_indented_file_become_tabs() -> None:
    text = "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n"
    change = edit(
        text, "    if x {\n        return 1\n    }", "    if y {\n        return 2\n    }"
    )
    assert change.after == "func f() {\n\tif y {\n\t\treturn 2\n\t}\n}\n"


def test_typographic_quotes_and_dashes_are_read_as_plain() -> None:
    text = "msg = \u201cit\u2019s done\u201d \u2013 ok\nother = 1\n"
    change = edit(text, 'msg = "it\'s done" - ok', 'msg = "finished"')
    assert change.after == 'msg = "finished"\nother = 1\n'
    assert change.applied[0].level is Level.TYPOGRAPHY


def test_an_ambiguous_inexact_match_is_never_applied() -> None:
    text = "def a():\n  return 1 \n\ndef b():\n        return 1\t\n"
    message = refused(text, Replacement("return 1\n", "return 2\n"))
    assert "matches 2 places (lines 2 and 5)" in message
    assert "nothing was changed" in message


def test_replace_all_applies_to_every_inexact_place() -> None:
    text = "if a:\n    go()  \nif b:\n        go()\t\n"
    change = edit(text, "go()\n", "stop()\n", replace_all=True)
    assert change.after == "if a:\n    stop()\nif b:\n        stop()\n"


def test_an_inconsistent_indentation_is_refused_showing_the_lines() -> None:
    text = "def f():\n    if x:\n        y()\n"
    message = refused(text, Replacement("def f():\nif x:\n    y()", "def g():\n    pass"))
    assert "differs from theirs by a different amount" in message
    assert "     1\tdef f():" in message


def test_not_found_shows_the_closest_lines_with_their_numbers() -> None:
    text = "import os\n\ndef load(path):\n    with open(path) as f:\n        return f.read()\n"
    message = refused(text, Replacement("def load(name):\n    with open(name) as f:", "x"))
    assert "not found in f.py" in message
    assert "lines most like it are 3-4" in message
    assert "     3\tdef load(path):\n     4\t    with open(path) as f:" in message


def test_not_found_without_anything_close_says_to_read_again() -> None:
    message = refused("alpha\nbeta\n", Replacement("completely different", "x"))
    assert "Read the file again" in message


def test_blank_lines_only_are_matched_exactly_or_not_at_all() -> None:
    assert find(["a", "  ", "b"], ["", ""]) is None
    assert find(["a", "", "b"], [""]) is not None


def test_a_last_line_without_a_line_break_keeps_none() -> None:
    change = edit("a\n  b", "  b ", "  c\n  d")
    assert change.after == "a\n  c\n  d"


def test_deleting_lines_inexactly_removes_them_whole() -> None:
    change = edit("keep\n    drop me  \nkeep too\n", "drop me\n", "")
    assert change.after == "keep\nkeep too\n"


def test_reindent_keeps_the_replacement_when_the_indentation_matched() -> None:
    assert reindent(["  x"], ["  a"], ["  a"]) == ["  x"]
    assert reindent(["x", "  y"], ["a", "b"], ["    a", "  b"]) is None


# -- several edits --------------------------------------------------------------------------


def test_edits_apply_in_order_to_the_result_of_the_one_before() -> None:
    change = apply_edits(
        "a = 1\nb = 2\n",
        [Replacement("a = 1", "a = 10"), Replacement("a = 10\nb = 2", "a = 10\nb = 20")],
        "f.py",
    )
    assert change.after == "a = 10\nb = 20\n"
    assert summary("f.py", change) == (
        "Edited f.py: replaced 2 edits, 2 occurrences, first change at line 1."
    )


def test_one_failing_edit_names_itself_and_applies_nothing() -> None:
    message = refused(
        "a = 1\nb = 2\n",
        Replacement("a = 1", "a = 10"),
        Replacement("c = 3", "c = 30"),
        Replacement("b = 2", "b = 20"),
    )
    assert message.startswith("Edit 2 of 3 failed, so no edit was applied and f.py is unchanged:")
    assert "old_text was not found in f.py" in message


def test_the_first_changed_line_is_found_in_a_long_text() -> None:
    before = "x\n" * 50_000
    after = before[:60_001] + "y" + before[60_002:]
    assert first_changed_line(before, after) == 30_001
    assert first_changed_line("same", "same") == 1
