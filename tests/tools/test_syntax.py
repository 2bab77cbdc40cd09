"""The parse after each change: a change that breaks a file that parsed is reported with its
line, one to a file that was broken already is only noted, nothing is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_fsm.tools.syntax import GRAMMARS, checker, report
from tests.tools.conftest import Env, call


@pytest.mark.parametrize(
    ("name", "good", "bad", "line"),
    [
        ("a.py", "def f():\n    return 1\n", "def f():\nreturn 1\n", "line 2"),
        ("a.json", '{"a": 1}\n', '{"a": 1,\n}\n', "line 2"),
        ("a.toml", 'a = 1\n[b]\nc = "x"\n', "a = 1\n[b\n", "line 2"),
        ("a.yaml", "a: 1\nb:\n  - x\n", "a: 1\nb: [x\n", "line"),
        (
            "a.js",
            "function f() { return 1; }\n",
            "function f() {\n  return 1;\n\nconst x = ;\n",
            "line 4",
        ),
        ("a.ts", "let x: number = 1;\n", "let x: number = ;\n", "line 1"),
        ("a.go", "package main\n\nfunc main() {}\n", "package main\n\nfunc main() {\n", "line"),
        ("a.rs", "fn main() {}\n", "fn main() {\n    let x = ;\n}\n", "line 2"),
    ],
)
def test_each_language_is_checked(name: str, good: str, bad: str, line: str) -> None:
    found = checker(Path(name))
    assert found is not None
    _, check = found
    assert check(good) is None
    problem = check(bad)
    assert problem is not None and line in problem


def test_every_grammar_wheel_is_installed_and_loads() -> None:
    for suffix in GRAMMARS:
        found = checker(Path(f"x{suffix}"))
        assert found is not None
        assert found[1]("") is None  # an empty file parses in every language here


def test_a_file_without_a_checker_is_not_looked_at() -> None:
    assert checker(Path("notes.txt")) is None
    assert report(Path("notes.txt"), "notes.txt", "a", "{{{") == ""


def test_a_change_that_breaks_a_file_is_a_warning_and_an_old_break_a_note() -> None:
    warning = report(Path("a.py"), "a.py", "x = 1\n", "x = (\n")
    assert warning.startswith(" Warning: a.py no longer parses as Python after this change")
    note = report(Path("a.py"), "a.py", "x = (\n", "x = ((\n")
    assert note.startswith(" Note: a.py does not parse as Python")
    assert "it did not before either" in note


async def test_an_edit_that_breaks_python_says_so_and_still_writes(env: Env, project: Path) -> None:
    (project / "m.py").write_text("def f():\n    return 1\n")
    outcome = await call(env, "edit_file", path="m.py", old_text="return 1", new_text="return (1")
    assert not outcome.is_error
    assert (project / "m.py").read_text() == "def f():\n    return (1\n"
    assert "Warning: m.py no longer parses as Python after this change (line 2:" in outcome.output


async def test_a_patch_and_a_write_are_checked_too(env: Env, project: Path) -> None:
    written = await call(env, "write_file", path="c.json", content='{"a": }\n')
    assert "Warning: c.json does not parse as JSON after this change" in written.output
    patched = await call(
        env,
        "apply_patch",
        patch="*** Begin Patch\n*** Add File: d.go\n+package main\n+func main() {\n*** End Patch\n",
    )
    assert not patched.is_error
    assert "Warning: d.go does not parse as Go" in patched.output
