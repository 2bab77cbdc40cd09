"""The registry, the specs the model sees, and how calls look in the editor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from acp_fsm.providers.types import ToolSpec
from acp_fsm.tools import TOOLS, tool_specs
from acp_fsm.tools.base import ToolCallView, ToolOutcome
from tests.tools.conftest import Editor, Env, assert_strict_json

NAMES = [
    "read_file",
    "write_file",
    "edit_file",
    "multi_edit",
    "apply_patch",
    "list_directory",
    "glob",
    "search_files",
    "run_command",
    "command_output",
    "kill_command",
    "fetch_url",
    "task",
    "skill",
    "ask_user",
    "update_plan",
]
KINDS = {
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "multi_edit": "edit",
    "apply_patch": "edit",
    "list_directory": "read",
    "glob": "search",
    "search_files": "search",
    "run_command": "execute",
    "command_output": "read",
    "kill_command": "execute",
    "fetch_url": "fetch",
    "task": "think",
    "skill": "read",
    "ask_user": "think",
    "update_plan": "think",
}
# The kind a call shows in the editor: its tool's, but a question is not drawn as reasoning.
SHOWN_KINDS = {**KINDS, "ask_user": "other", "task": "other"}  # clients draw `think` as reasoning


def test_registry_order_and_kinds() -> None:
    assert list(TOOLS) == NAMES
    assert {name: tool.kind for name, tool in TOOLS.items()} == KINDS


def test_specs_are_strict_json_schemas() -> None:
    specs = tool_specs()
    assert [spec.name for spec in specs] == NAMES
    for spec in specs:
        assert isinstance(spec, ToolSpec)
        assert len(spec.description) > 40
        schema = spec.input_schema
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for prop in schema["properties"].values():
            assert prop.get("description"), spec.name


def test_required_arguments() -> None:
    required = {spec.name: spec.input_schema["required"] for spec in tool_specs()}
    assert required == {
        "read_file": ["path"],
        "write_file": ["path", "content"],
        "edit_file": ["path", "old_text", "new_text"],
        "multi_edit": ["path", "edits"],
        "apply_patch": ["patch"],
        "list_directory": ["path"],
        "glob": ["pattern"],
        "search_files": ["pattern"],
        "run_command": ["command"],
        "command_output": ["id"],
        "kill_command": ["id"],
        "fetch_url": ["url"],
        "task": ["description", "prompt"],
        "skill": ["name"],
        "ask_user": ["question"],
        "update_plan": ["entries"],
    }


@pytest.mark.parametrize(
    ("name", "args", "title", "location"),
    [
        ("read_file", {"path": "src/app.py"}, "Read src/app.py", ("src/app.py", 1)),
        (
            "read_file",
            {"path": "src/app.py", "offset": 10, "limit": 5},
            "Read src/app.py (lines 10-14)",
            ("src/app.py", 10),
        ),
        (
            "read_file",
            {"path": "./src/../app.py", "offset": 7},
            "Read app.py (from line 7)",
            ("app.py", 7),
        ),
        (
            "write_file",
            {"path": "src/app.py", "content": "x"},
            "Write src/app.py",
            ("src/app.py", None),
        ),
        (
            "edit_file",
            {"path": "src/app.py", "old_text": "a", "new_text": "b"},
            "Edit src/app.py",
            ("src/app.py", None),
        ),
        ("list_directory", {"path": "."}, "List .", (".", None)),
        ("search_files", {"pattern": "TODO", "path": "src"}, "Search /TODO/ in src", ("src", None)),
        (
            "search_files",
            {"pattern": "TODO", "glob": "*.py"},
            "Search /TODO/ in . (*.py)",
            (".", None),
        ),
        ("run_command", {"command": "pytest -q"}, "Run `pytest -q`", None),
        ("run_command", {"command": "echo a\necho b"}, "Run `echo a…`", None),
    ],
)
def test_views(
    name: str,
    args: dict[str, Any],
    title: str,
    location: tuple[str, int | None] | None,
    project: Path,
) -> None:
    env = Env(cwd=project, client=Editor())
    view = TOOLS[name].view(args, env)
    assert view.title == title
    assert view.kind == SHOWN_KINDS[name]
    assert view.raw_input == args
    if location is None:
        assert view.locations == ()
    else:
        relative, line = location
        expected: dict[str, Any] = {"path": str((project / relative).resolve())}
        if line is not None:
            expected["line"] = line
        assert view.locations == (expected,)
        assert Path(view.locations[0]["path"]).is_absolute()


def test_paths_outside_cwd_are_absolute_in_titles(project: Path, tmp_path: Path) -> None:
    env = Env(cwd=project, client=Editor())
    view = TOOLS["read_file"].view({"path": "../notes.md"}, env)
    assert view.title == f"Read {tmp_path.resolve() / 'notes.md'}"


def test_long_commands_are_shortened_in_titles(project: Path) -> None:
    env = Env(cwd=project, client=Editor())
    title = TOOLS["run_command"].view({"command": "x" * 500}, env).title
    assert len(title) < 100 and title.endswith("…`")


@pytest.mark.parametrize("name", NAMES)
def test_views_survive_bad_arguments(name: str, project: Path) -> None:
    env = Env(cwd=project, client=Editor())
    view = TOOLS[name].view({}, env)
    assert view.title and view.kind == SHOWN_KINDS[name]


@pytest.mark.parametrize("name", NAMES)
async def test_invalid_arguments_become_error_outcomes(name: str, project: Path) -> None:
    env = Env(cwd=project, client=Editor())
    assert TOOLS[name].validate({"bogus": 1}) is not None
    outcome = await TOOLS[name].run({"bogus": 1}, env)
    assert outcome.is_error and outcome.output.startswith(f"Invalid arguments for {name}")


def test_schema_file_agrees_with_the_tool_constants() -> None:
    """The argument schemas live in schemas/tools.json; the limits they state are the code's."""
    from acp_fsm.tools import read_file, run_command

    command = TOOLS["run_command"].input_schema["properties"]["timeout_ms"]
    assert command["maximum"] == run_command.MAX_TIMEOUT_MS
    assert f"{run_command.DEFAULT_TIMEOUT_MS:,}" in command["description"]
    limit = TOOLS["read_file"].input_schema["properties"]["limit"]["description"]
    assert f"{read_file.MAX_READ_LINES:,}" in limit


def test_arguments_are_checked_by_the_compiled_schema() -> None:
    problem = TOOLS["run_command"].validate({"command": "ls", "timeout_ms": 10**9})
    assert problem is not None and "timeout_ms" in problem
    assert TOOLS["read_file"].validate({"path": "a", "extra": 1}) is not None
    assert TOOLS["edit_file"].validate({"path": "a", "old_text": "x", "new_text": "y"}) is None


# -------------------------------------------------- any JSON arguments: never an exception

# Strings that file systems, the regex compiler and strict JSON parsers choke on.
ODD_TEXT = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(categories=["Cs", "Cc", "Zs", "Lo"]), max_size=8),
    st.sampled_from(
        [
            "",
            "\0",
            "a\0b",
            "..",
            "/",
            "~",
            "\ud800",
            os.fsdecode(b"caf\xe9"),
            "a{4294967296}",
            "(" * 3000 + ")" * 3000,
            "{" * 3000 + "}",
            "[",
            "*.{py",
        ]
    ),
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | ODD_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ODD_TEXT, inner, max_size=3),
    max_leaves=6,
)
PROPERTY_ENV = Env(cwd=Path("/nonexistent/acp-fsm-project"), client=Editor())


PLAN_ENTRIES = st.lists(
    st.fixed_dictionaries(
        {
            "content": ODD_TEXT,
            "priority": st.sampled_from(["high", "medium", "low"]),
            "status": st.sampled_from(["pending", "in_progress", "completed"]),
        }
    )
    | JSON_VALUES,
    max_size=3,
)
BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "string": ODD_TEXT,
    "integer": st.integers(),
    "boolean": st.booleans(),
    "array": PLAN_ENTRIES,
}


def _arguments(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for tool `name`: shaped like its schema (any values of the right types), and
    any JSON object over its argument names and others."""
    schema = TOOLS[name].input_schema
    types = {key: BY_TYPE[prop["type"]] for key, prop in schema["properties"].items()}
    required = {key: types.pop(key) for key in schema["required"]}
    keys = st.sampled_from(sorted(schema["properties"])) | ODD_TEXT
    return st.fixed_dictionaries(required, optional=types) | st.dictionaries(
        keys, JSON_VALUES | ODD_TEXT, max_size=4
    )


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validate_view_and_permission_never_raise(name: str, data: st.DataObject) -> None:
    tool = TOOLS[name]
    args = data.draw(_arguments(name))
    problem = tool.validate(args)
    assert problem is None or isinstance(problem, str)
    view = tool.view(args, PROPERTY_ENV)
    assert isinstance(tool.needs_permission(args, PROPERTY_ENV), bool)
    assert_strict_json([view.title, view.kind, view.locations, view.raw_input])


def test_views_and_outcomes_hold_only_valid_utf8() -> None:
    """Whatever a tool (or the turn) builds them from, e.g. a file name that is not UTF-8."""
    name = os.fsdecode(b"caf\xe9")
    view = ToolCallView(
        title=f"Read {name}",
        kind="read",
        locations=({"path": f"/p/{name}"},),
        raw_input={"path": name, name: [name, "\ud800"]},
    )
    assert view == ToolCallView(
        title="Read caf\\xe9",
        kind="read",
        locations=({"path": "/p/caf\\xe9"},),
        raw_input={"path": "caf\\xe9", "caf\\xe9": ["caf\\xe9", "\\xed\\xa0\\x80"]},
    )
    outcome = ToolOutcome(
        name,
        content=({"type": "content", "content": {"type": "text", "text": name}},),
        locations=({"path": name, "line": 1},),
    )
    assert outcome.output == "caf\\xe9"
    block = outcome.content[0]
    assert block["type"] == "content" and block["content"]["type"] == "text"
    assert block["content"]["text"] == "caf\\xe9"
    assert outcome.locations == ({"path": "caf\\xe9", "line": 1},)
