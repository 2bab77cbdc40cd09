"""Calls written as text (`providers.text_calls`): each syntax, the rule for JSON alone, the
repaired arguments, and the streaming recognizer fed every cut of an answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fsm.providers.text_call_args import repaired, repaired_value
from acp_fsm.providers.text_calls import (
    SHORT_REMARK_CHARS,
    CallFormat,
    Recognized,
    TextCallStream,
    recognize,
    stray_calls,
)
from acp_fsm.providers.types import ToolSpec
from acp_fsm.tools import tool_specs

SPECS = {spec.name: spec for spec in tool_specs()}
TOOLS = {name: SPECS[name] for name in ("read_file", "write_file", "edit_file", "run_command",
                                         "list_directory", "search_files", "ask_user",
                                         "multi_edit", "update_plan")}  # fmt: skip
READ = '{"name": "read_file", "arguments": {"path": "a.py"}}'
FENCED_READ = f"```json\n{READ}\n```"
# The longest text that may be held back after plain prose: a marker cut in two.
MAX_PREFIX_HELD = len("<|python_tag|>") - 1


def calls(text: str, tools: dict[str, ToolSpec] = TOOLS) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, call.arguments) for call in recognize(text, tools).calls]


def streamed(
    pieces: list[str], tools: dict[str, ToolSpec] = TOOLS, *, cut: bool = False
) -> tuple[str, Recognized]:
    stream = TextCallStream(tools)
    shown = "".join(stream.feed(piece) for piece in pieces)
    return shown, stream.finish(cut=cut)


def cut_out(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the (sorted, disjoint, maybe repeated) spans."""
    kept, at = [], 0
    for start, end in sorted(set(spans)):
        assert start >= at
        kept.append(text[at:start])
        at = end
    return "".join([*kept, text[at:]])


def assert_text(text: str, *, cut: bool = False) -> None:
    """`text` holds no call, whole or cut anywhere (`cut`: the answer was cut short)."""
    assert recognize(text, TOOLS, cut=cut) == Recognized((), text, text)
    assert_same_at_every_cut(text, cut=cut)


def assert_same_at_every_cut(
    text: str, tools: dict[str, ToolSpec] = TOOLS, *, cut: bool = False
) -> None:
    """Fed in two pieces cut anywhere, and a character at a time: what is shown and then
    released is the prose of `recognize`, and the calls are its calls."""
    whole = recognize(text, tools, cut=cut)
    assert whole.released == whole.prose
    cuts = [[text[:at], text[at:]] for at in range(len(text) + 1)]
    for pieces in [*cuts, list(text)]:
        shown, found = streamed(pieces, tools, cut=cut)
        assert shown + found.released == whole.prose, pieces
        assert found.calls == whole.calls, pieces


# ------------------------------------------------------------------------ the syntaxes


@pytest.mark.parametrize(
    ("text", "form"),
    [
        (FENCED_READ, CallFormat.FENCED_JSON),
        (READ, CallFormat.BARE_JSON),
        (f"<tool_call>\n{READ}\n</tool_call>", CallFormat.HERMES),
        ("<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n</parameter>\n</function>\n"
         "</tool_call>", CallFormat.QWEN3_XML),
        ('<function=read_file>{"path": "a.py"}</function>', CallFormat.FUNCTION_TAG),
        (f"[TOOL_CALLS] [{READ}]", CallFormat.MISTRAL),
        ('[TOOL_CALLS]read_file[ARGS]{"path": "a.py"}', CallFormat.MISTRAL_ARGS),
        ('<|python_tag|>{"name": "read_file", "parameters": {"path": "a.py"}}',
         CallFormat.PYTHON_TAG),
    ],
)  # fmt: skip
def test_each_syntax_gives_the_call_its_span_and_no_prose(text: str, form: CallFormat) -> None:
    found = recognize(text, TOOLS)
    assert [(c.name, c.arguments, c.format, c.error) for c in found.calls] == [
        ("read_file", {"path": "a.py"}, form, None)
    ]
    assert found.calls[0].span == (0, len(text))
    assert found.prose == ""
    assert_same_at_every_cut(text)


def test_spans_cut_the_calls_out_of_the_prose() -> None:
    other = READ.replace("a.py", "b.py")
    text = f"Reading.\n<tool_call>{READ}</tool_call>\nThen <tool_call>{other}</tool_call> done."
    found = recognize(text, TOOLS)
    assert [text[slice(*c.span)] for c in found.calls] == [
        f"<tool_call>{READ}</tool_call>",
        f"<tool_call>{other}</tool_call>",
    ]
    assert found.prose == "Reading.\n\nThen  done."


def test_a_list_of_calls_shares_its_block() -> None:
    text = f"[{READ}, {READ.replace('a.py', 'b.py')}]"
    found = recognize(text, TOOLS)
    assert [c.arguments["path"] for c in found.calls] == ["a.py", "b.py"]
    assert {c.span for c in found.calls} == {(0, len(text))}


def test_openai_shaped_call_object() -> None:
    arguments = json.dumps(json.dumps({"path": "a"}))
    text = f'{{"type": "function", "function": {{"name": "read_file", "arguments": {arguments}}}}}'
    assert calls(text) == [("read_file", {"path": "a"})]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "read_file", "arguments": {"path": "a"}, "parameters": {"path": "b"}}',
        '{"name": "read_file", "arguments": {"path": "a"}, "reason": "to see it"}',
        '{"name": "read_file", "type": "tool", "arguments": {"path": "a"}}',
        '{"name": ["read_file"], "arguments": {"path": "a"}}',
        '{"name": "read_file", "arguments": {"path": "a"},}',
        '{"type": "function", "function": {"name": "read_file", "parameters": {}, "x": 1}}',
        "[]",
        "[1, 2]",
    ],
)
def test_json_that_is_not_shaped_as_a_call_is_text(text: str) -> None:
    assert_text(text)


# ------------------------------------------------------------------ offered tools only


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "fetch_url", "arguments": {"url": "https://x"}}</tool_call>',
        '{"name": "fetch_url", "arguments": {"url": "https://x"}}',
        "<tool_call><function=fetch_url><parameter=url>https://x</parameter></function></tool_call>",
        '[TOOL_CALLS]fetch_url[ARGS]{"url": "https://x"}',
        '[TOOL_CALLS][{"name": "fetch_url", "arguments": {"url": "https://x"}}]',
        '<|python_tag|>{"name": "fetch_url", "parameters": {"url": "https://x"}}',
    ],
)
def test_a_call_of_a_tool_not_offered_is_text(text: str) -> None:
    assert "fetch_url" in SPECS  # a real tool, only not offered here
    assert recognize(text, TOOLS) == Recognized((), text, text)
    assert calls(text, {**TOOLS, "fetch_url": SPECS["fetch_url"]}) == [
        ("fetch_url", {"url": "https://x"})
    ]


def test_nothing_is_recognized_without_tools() -> None:
    text = f"<tool_call>{READ}</tool_call>\n{FENCED_READ}"
    assert recognize(text, {}) == Recognized((), text, text)


# ------------------------------------------------------------ the rule for JSON alone


@pytest.mark.parametrize(
    "after",
    [
        "",
        "\n",
        "\n\n  \n",
        "\nThis reads the file.",
        "\n\nLet me know if you need anything else!\n\n",
        "\n" + "x" * SHORT_REMARK_CHARS,
        " and then I will fix it",
    ],
)
def test_json_alone_that_ends_the_answer_is_a_call(after: str) -> None:
    for call in (FENCED_READ, READ):
        text = f"To read it, enter:\n{call}{after}"
        found = recognize(text, TOOLS)
        assert [c.name for c in found.calls] == ["read_file"]
        assert found.prose == f"To read it, enter:\n{after}"
        assert_same_at_every_cut(text)


@pytest.mark.parametrize(
    "after",
    [
        "\n" + "x" * (SHORT_REMARK_CHARS + 1),
        "\nThis object names the tool in its name field and gives the tool its inputs in its"
        " arguments; change the path to read another file.",
        "\nThis reads the file.\nYou can pick another path.",
        "\n\nThe name picks the tool.\n\nThe arguments are its inputs.",
        "\n```python\nprint(1)\n```",
    ],
)
def test_json_alone_followed_by_more_than_a_short_line_is_text(after: str) -> None:
    for call in (FENCED_READ, READ):
        assert_text(f"For example:\n{call}{after}")


def test_calls_separated_by_short_lines_make_one_run() -> None:
    second = FENCED_READ.replace("a.py", "b.py")
    text = f"{FENCED_READ}\nand then:\n{second}\nDone."
    assert calls(text) == [("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"})]
    assert recognize(text, TOOLS).prose == "\nand then:\n\nDone."


def test_an_example_before_a_paragraph_is_text_and_the_call_after_it_counts() -> None:
    second = FENCED_READ.replace("a.py", "b.py")
    text = f"An example:\n{FENCED_READ}\nIt names the tool.\nAnd its arguments.\n\nNow:\n{second}"
    found = recognize(text, TOOLS)
    assert [(c.arguments["path"], c.format) for c in found.calls] == [
        ("b.py", CallFormat.FENCED_JSON)
    ]
    assert (
        found.prose
        == f"An example:\n{FENCED_READ}\nIt names the tool.\nAnd its arguments.\n\nNow:\n"
    )
    assert_same_at_every_cut(text)


def test_an_explicit_call_stands_when_json_alone_before_it_turns_out_an_example() -> None:
    hermes = f"<tool_call>{READ.replace('a.py', 'b.py')}</tool_call>"
    text = f"{FENCED_READ}\n{hermes}\nThe first block shows a call's shape.\nThe second is one."
    found = recognize(text, TOOLS)
    assert [(c.arguments["path"], c.format) for c in found.calls] == [("b.py", CallFormat.HERMES)]
    assert found.prose == text.replace(hermes, "")
    assert_same_at_every_cut(text)


def test_explicit_calls_count_wherever_they_stand() -> None:
    text = f"First <tool_call>{READ}</tool_call> then a long explanation.\n" + "More.\n" * 20
    assert calls(text) == [("read_file", {"path": "a.py"})]


def test_json_alone_counts_only_at_a_line_start() -> None:
    assert_text(f"Enter: {READ}")
    indented = f"Enter:\n    {READ}"
    assert calls(indented) == [("read_file", {"path": "a.py"})]


@pytest.mark.parametrize(
    "text",
    [
        f"```python\ncall = {READ}\n```",
        f"```javascript\n{READ}\n```",
        f"```python\n{READ}\nsend(call)\n```",
        f"```xml\n<tool_call>{READ}</tool_call>\n```",
        f"```\n<tool_call>{READ}</tool_call>\n```",
        f'```json\n{READ}\n{{"other": 1}}\n```',
        f"```json\n{READ}\nprint(1)\n```",
        f"Use `<tool_call>{READ}</tool_call>` to call it.",
        f"Use `[TOOL_CALLS][{READ}]`.",
    ],
)
def test_calls_shown_as_code_are_text(text: str) -> None:
    assert_text(text)


def test_a_code_block_ends_at_its_closing_fence() -> None:
    text = f"```sh\nls\n```\n<tool_call>{READ}</tool_call>"
    assert calls(text) == [("read_file", {"path": "a.py"})]
    assert recognize(text, TOOLS).prose == "```sh\nls\n```\n"


def test_a_fence_left_open_at_the_end_still_holds_its_call() -> None:
    text = f"```json\n{READ}\n"
    assert calls(text) == [("read_file", {"path": "a.py"})]
    assert_same_at_every_cut(text)


# --------------------------------------------------------- ends, errors, truncation


def test_an_unclosed_tool_call_ends_with_its_json() -> None:
    text = f"<tool_call>\n{READ}\nI will read it now."
    found = recognize(text, TOOLS)
    assert [c.name for c in found.calls] == ["read_file"]
    assert found.prose == "\nI will read it now."
    assert_same_at_every_cut(text)


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", "content": "x',
        '```json\n{"name": "write_file", "arguments": {"path": "a.py"',
        '{"name": "read_file", "arguments": {"pa',
        "[TOOL_CALLS]read_file[AR",
        "<function=read_fi",
    ],
)
def test_an_answer_cut_inside_a_call_is_text(text: str) -> None:
    assert_text(text, cut=True)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "edit_file", "arguments": {"path": "g.py", "old_text": "a", "new_text": "b"}',
        '```json\n{"name": "edit_file", "arguments": {"path": "g.py", "old_text": "a", '
        '"new_text": "b"}\n',
        '<tool_call>{"name": "edit_file", "arguments": {"path": "g.py", "old_text": "a", '
        '"new_text": "b"}',
    ],
)
def test_a_call_that_stopped_short_of_its_closing_brackets_is_read_with_them(text: str) -> None:
    assert calls(text) == [("edit_file", {"path": "g.py", "old_text": "a", "new_text": "b"})]
    assert recognize(text, TOOLS).prose.strip() == ""
    assert_same_at_every_cut(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "read_file", "arguments": {"path": "a.py',  # inside a string: unknowable
        '{"name": "read_file", "arguments": {"path":',
        '{"name": "read_file", "arguments": {"path": "a.py"}, "limit"',
        '{"name": "read_file", "arguments": {"path": "a.py"',  # the last quote may be inside
    ],
)
def test_a_call_that_stopped_where_brackets_cannot_close_it_is_text(text: str) -> None:
    assert_text(text)


def test_an_answer_cut_short_after_calls_written_as_json_alone_holds_none() -> None:
    """Qwen2.5-Coder 0.5B (bench/local_model, write task) looped through calls until its
    length limit cut the last: what it wrote was no plan, and none of it runs."""
    other = READ.replace("a.py", "b.py")
    assert_text(f"{READ}\n{other}\n" + '{"name": "edit_file", "arguments": {"pa', cut=True)


def test_the_same_call_written_again_runs_once() -> None:
    """Qwen2.5-Coder 0.5B looping (bench/local_model, write task): one call, ten times."""
    other = READ.replace("a.py", "b.py")
    text = "\n".join([READ] * 10 + [other, READ])
    stream = TextCallStream(TOOLS)
    stream.feed(text)
    assert stream.repeated == 9  # those that repeat an earlier one, as they come (not the last,
    stream.finish()  # which the answer's end decides)
    assert stream.repeated == 10
    found = recognize(text, TOOLS)
    assert [c.arguments for c in found.calls] == [{"path": "a.py"}, {"path": "b.py"}]
    assert found.prose.strip() == ""
    assert_same_at_every_cut("\n".join([READ] * 3))


def test_a_fence_of_any_language_holding_only_a_call_holds_it() -> None:
    """Qwen2.5-Coder 1.5B (bench/local_model, fix task) put its call in a ```python fence."""
    text = (
        "After making this change, re-run the test by executing:\n\n```python\n"
        '{"name": "run_command", "arguments": {"command": "pytest test_calc.py"}}\n```\n\n'
        "This should pass without errors."
    )
    assert calls(text) == [("run_command", {"command": "pytest test_calc.py"})]
    assert recognize(text, TOOLS).prose == (
        "After making this change, re-run the test by executing:\n\n\n\n"
        "This should pass without errors."
    )
    assert_same_at_every_cut(text)


@pytest.mark.parametrize(
    "text",
    [
        "<tools>\n{" + READ + "}\n{" + READ.replace("a.py", "b.py") + "}\n</tools>",
        "<tool_call>{" + READ + "}</tool_call>\n<tool_call>{" + READ.replace("a.py", "b.py") + "}",
        "{ " + READ + " }\n" + READ.replace("a.py", "b.py"),
    ],
)
def test_doubled_braces_around_a_call_are_read_as_one_pair(text: str) -> None:
    """Qwen2.5-Coder 1.5B (bench/local_model, edit task) copied a template's `{{`."""
    assert calls(text) == [("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"})]
    assert recognize(text, TOOLS).prose.strip() in ("", "<tools>\n\n\n</tools>")
    assert_same_at_every_cut(text)


@pytest.mark.parametrize(
    "text", ['{{"other": 1}}', '{{"name": "nope", "arguments": {}}}', "{{}}", '{"a": {{"b": 1}}}']
)
def test_doubled_braces_around_anything_else_are_text(text: str) -> None:
    assert_text(text)


def test_a_quote_left_unescaped_inside_a_string_stays_in_it() -> None:
    """Qwen2.5-Coder 1.5B (bench/local_model, fix task) wrote an f-string's quotes bare: a
    quote ends a string only where what follows may follow a string."""
    text = (
        '{"name": "edit_file", "arguments": {"path": "t.py", "old_text": "x", '
        '"new_text": "assert x, f"got {x}" \n"}}\n'
        '{"name": "run_command", "arguments": {"command" : "pytest" }}'
    )
    assert calls(text) == [
        ("edit_file", {"path": "t.py", "old_text": "x", "new_text": 'assert x, f"got {x}" \n'}),
        ("run_command", {"command": "pytest"}),
    ]
    assert_same_at_every_cut(text)
    assert_text('{"name": "read"_file", "arguments": {}}')  # a quote inside a name
    assert_text('{"name": "read_file", "arguments": {"path": "a.py"\nThen I will read it.')
    assert_text('{"name": "write_file", "arguments": {"path": "a.py", "content": "x = "')


def test_an_object_unescaped_in_a_string_stays_in_it() -> None:
    """A value's quote followed by a colon stands inside it: only a key's ends so."""
    text = (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "conf.py", '
        '"content": "CONFIG = {"debug": True, "level": 2}\n"}}\n</tool_call>'
    )
    content = 'CONFIG = {"debug": True, "level": 2}\n'
    assert calls(text) == [("write_file", {"path": "conf.py", "content": content})]
    assert recognize(text, TOOLS).calls[0].error is None
    assert_same_at_every_cut(text)


def test_python_words_in_the_arguments_are_read_as_json() -> None:
    """Qwen2.5-Coder 1.5B (bench/local_model, read task) wrote Python's True."""
    text = (
        '{"name": "search_files", "arguments": {"pattern": "True", "path": ".", '
        '"case_sensitive": True, "glob": None}}'
    )
    assert calls(text) == [
        ("search_files", {"pattern": "True", "path": ".", "case_sensitive": True, "glob": None})
    ]
    assert_same_at_every_cut(text)
    assert calls("<tool_call>" + text.replace("True,", "Truth,") + "</tool_call>")[0][1] == {}


def test_explicit_syntax_reports_what_it_cannot_read() -> None:
    found = recognize(
        '<tool_call>{"name": "read_file", "arguments": ["a.py"]}</tool_call>'
        '<tool_call>{"name": "read_file", "arguments": "{path: a.py}"}</tool_call>'
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.py",}}</tool_call>'
        '<tool_call>{"name": "list_directory"}</tool_call>'
        "[TOOL_CALLS]read_file[ARGS]{'path': 'a.py'}",
        TOOLS,
    )
    assert [(c.name, c.arguments, c.raw_arguments) for c in found.calls] == [
        ("read_file", {}, '["a.py"]'),
        ("read_file", {}, "{path: a.py}"),
        ("read_file", {}, '{"name": "read_file", "arguments": {"path": "a.py",}}'),
        ("list_directory", {}, ""),
        ("read_file", {}, "{'path': 'a.py'}"),
    ]
    assert [(c.error or "").split(" (")[0] for c in found.calls] == [
        "the arguments must be a JSON object, got list",
        "the arguments are not valid JSON",
        "the call is not valid JSON",
        "",
        "the call is not valid JSON",
    ]
    assert found.prose == ""


def test_json_alone_with_arguments_that_are_no_object_is_text() -> None:
    for arguments in ('"see below"', '["a.py"]', "null"):
        text = f'{{"name": "read_file", "arguments": {arguments}}}'
        assert recognize(text, TOOLS) == Recognized((), text, text)
    assert recognize('{"name": "list_directory"}', TOOLS).calls == ()


# ----------------------------------------------------------------------- arguments


def test_arguments_are_repaired_by_the_schema() -> None:
    text = (
        '<tool_call>{"name": "run_command", "arguments": {"command": "make", '
        '"timeout_ms": "30000", "background": "False"}}</tool_call>'
        '<tool_call>{"name": "read_file", "arguments": {"path": "a", "offset": 3.0, "limit": "x"}}'
        "</tool_call>"
        '<tool_call>{"name": "ask_user", "arguments": {"question": "Which?", "options": "a"}}'
        "</tool_call>"
    )
    assert calls(text) == [
        ("run_command", {"command": "make", "timeout_ms": 30000, "background": False}),
        ("read_file", {"path": "a", "offset": 3, "limit": "x"}),
        ("ask_user", {"question": "Which?", "options": ["a"]}),
    ]


def test_nested_arguments_are_repaired_and_nothing_is_invented() -> None:
    schema = TOOLS["multi_edit"].input_schema
    edits = [{"old_text": "a", "new_text": "b", "replace_all": "true"}]
    assert repaired({"edits": json.dumps(edits)}, schema) == {
        "edits": [{"old_text": "a", "new_text": "b", "replace_all": True}]
    }
    plan = TOOLS["update_plan"].input_schema
    step = {"content": "test", "priority": "high", "status": "pending"}
    assert repaired({"entries": step}, plan) == {"entries": [step]}
    assert repaired({}, schema) == {}  # `path` and `edits` are required: still missing
    assert repaired({"path": 7, "other": "1"}, schema) == {"path": 7, "other": "1"}


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [
        ("42", {"type": "integer"}, 42),
        (" -7 ", {"type": "integer"}, -7),
        ("4.5", {"type": "integer"}, "4.5"),
        (4.0, {"type": "integer"}, 4),
        (4.5, {"type": "integer"}, 4.5),
        (True, {"type": "integer"}, True),
        ("2.5", {"type": "number"}, 2.5),
        ("3", {"type": "number"}, 3),
        ("nan", {"type": "number"}, "nan"),
        ("inf", {"type": "number"}, "inf"),
        ("TRUE", {"type": "boolean"}, True),
        ("false", {"type": "boolean"}, False),
        ("yes", {"type": "boolean"}, "yes"),
        ('{"a": 1}', {"type": "object"}, {"a": 1}),
        ("[1]", {"type": "object"}, "[1]"),
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ("x", {"type": "array", "items": {"type": "string"}}, ["x"]),
        (1, {"type": "array", "items": {"type": "string"}}, 1),
        (True, {"type": "array", "items": {"type": "integer"}}, True),
        ("[1", {"type": "array"}, "[1"),
        ("x", {"enum": ["x"]}, "x"),
        ("5", {"type": ["integer", "null"]}, "5"),
        ("5", {"type": "string"}, "5"),
    ],
)
def test_a_value_is_repaired_only_where_one_reading_is_possible(
    value: Any, schema: dict[str, Any], expected: Any
) -> None:
    result = repaired_value(value, schema)
    assert result == expected
    assert type(result) is type(expected)


def test_qwen3_parameters_are_typed_by_the_schema() -> None:
    text = (
        "<tool_call>\n<function=run_command>\n<parameter=command>\n  echo 'a\nb'  \n</parameter>\n"
        "<parameter=timeout_ms>\nsoon\n</parameter>\n<parameter=colour>\n12\n</parameter>\n"
        "<parameter=background>\nTrue\n</parameter>\n</function>\n</tool_call>"
    )
    assert calls(text) == [
        ("run_command",
         {"command": "  echo 'a\nb'  ", "timeout_ms": "soon", "colour": "12", "background": True})
    ]  # fmt: skip


def test_qwen3_parameters_without_closing_tags() -> None:
    text = (
        "<tool_call>\n<function=read_file>\n<parameter=path>\na.py\n<parameter=limit>\n5\n"
        "</function>\n</tool_call>"
    )
    assert calls(text) == [("read_file", {"path": "a.py", "limit": 5})]


# ------------------------------------------------------------------------ streaming


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        (['{"version"', ": 1"], '{"version": 1'),
        (['{"name": "rea', 'd_filex"', ", "], '{"name": "read_filex", '),
        (["```p", "ython\n", "def"], "```python\ndef"),
        (["```p", "ython\n", "{"], ""),
        (["```jso", "n\n{"], ""),
        (["```json x", "\nimport"], "```json x\nimport"),
        (["```" + "x" * 41], "```" + "x" * 41),
        (["<tool_call>\n", "hello"], "<tool_call>\nhello"),
        (["<tool", "_cal"], ""),
        (["<tool", "s> and"], "<tools> and"),
        (["<tools>", "\n", "Hello"], "<tools>\nHello"),  # a lone tag line: no call follows
        (["[TOOL_CALLS]nope", "[x"], "[TOOL_CALLS]nope[x"),
        (["[TOOL_CALLS]read_file", "[A"], ""),
        (["[", "x] done"], "[x] done"),
        (["[link](u)"], "[link](u)"),
        (["<function=nope>"], "<function=nope>"),
        (["a <", "b> c"], "a <b> c"),
    ],
)
def test_held_text_is_shown_as_soon_as_it_cannot_be_a_call(pieces: list[str], shown: str) -> None:
    stream = TextCallStream(TOOLS)
    assert "".join(stream.feed(piece) for piece in pieces) == shown


def test_plain_prose_is_shown_as_it_streams() -> None:
    text = (
        "Sure! The function `add` in calc.py returns a - b; it should be a + b.\n"
        "  - see [the docs](https://example.com) <b>now</b>\n"
        "1 < 2 and [3] are fine; so is {braces} mid-line.\n\n"
        "Let me know if <tool calls> help.\n"
    )
    for step in (1, 2, 5):
        stream = TextCallStream(TOOLS)
        shown = ""
        for at in range(0, len(text), step):
            shown += stream.feed(text[at : at + step])
            assert text.startswith(shown)
            assert at + step - len(shown) <= MAX_PREFIX_HELD
        assert shown + stream.finish().released == text


def test_a_call_held_to_its_end_shows_the_prose_before_it_at_once() -> None:
    stream = TextCallStream(TOOLS)
    assert stream.feed('I\'ll read it.\n<tool_call>\n{"name": "read_file", ') == ("I'll read it.\n")
    assert stream.feed('"arguments": {"path": "a.py"}}\n</tool') == ""
    assert stream.feed("_call>\nThen") == "\nThen"
    found = stream.finish()
    assert (found.released, [c.name for c in found.calls]) == ("", ["read_file"])


def test_json_alone_is_held_to_the_answers_end_or_until_prose_rules_it_out() -> None:
    stream = TextCallStream(TOOLS)
    assert stream.feed(f"Try:\n{FENCED_READ}\nIt reads") == "Try:\n"
    assert stream.feed(" a.py.\nAnd") == f"{FENCED_READ}\nIt reads a.py.\nAnd"
    assert stream.finish() == Recognized((), f"Try:\n{FENCED_READ}\nIt reads a.py.\nAnd", "")


def test_a_finished_stream_takes_no_more() -> None:
    stream = TextCallStream(TOOLS)
    stream.feed("hi")
    stream.finish()
    with pytest.raises(ValueError, match="finished"):
        stream.feed("more")
    with pytest.raises(ValueError, match="finished"):
        stream.finish()


def test_the_streams_repr_shows_where_it_is() -> None:
    stream = TextCallStream(TOOLS)
    stream.feed("ok\n<tool_call>\n{")
    assert repr(stream) == "<TextCallStream <Scanner JSON at=16 held=13> calls=0 run=0 remark=0>"


MIXED = (
    'Plan:\n```json\n[{"name": "read_file", "arguments": {"path": "a"}}]\n```\n'
    "That list is an example.\nHere is the real work:\n"
    "<tool_call>\n<function=write_file>\n<parameter=path>\nb\n</parameter>\n<parameter=content>\n"
    "x < y and [z]\n</parameter>\n</function>\n</tool_call> and `<tool_call>` quoted.\n"
    '[TOOL_CALLS]run_command[CALL_ID]abc123def[ARGS]{"command": "ls"}\n'
    '<|python_tag|>{"name": "list_directory", "parameters": {"path": "."}};'
    '{"name": "read_file", "parameters": {"path": "c"}}\n'
    '{"name": "search_files", "arguments": {"pattern": "x"}}\nok'
)


def test_a_mixed_answer_at_every_cut() -> None:
    found = recognize(MIXED, TOOLS)
    assert [(c.name, c.format) for c in found.calls] == [
        ("write_file", CallFormat.QWEN3_XML),
        ("run_command", CallFormat.MISTRAL_ARGS),
        ("list_directory", CallFormat.PYTHON_TAG),
        ("read_file", CallFormat.PYTHON_TAG),
        ("search_files", CallFormat.BARE_JSON),
    ]  # the fenced list is followed by more than a line: an example, not a call
    assert_same_at_every_cut(MIXED)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(MIXED)), max_size=40))
def test_a_mixed_answer_cut_anywhere_many_times(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [MIXED[a:b] for a, b in zip([0, *points], [*points, len(MIXED)], strict=True)]
    whole = recognize(MIXED, TOOLS)
    shown, found = streamed(pieces)
    assert (shown + found.released, found.calls) == (whole.prose, whole.calls)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["<tool_call>", "</tool_call>", "```", "json", "\n", "{", "}", "[", "]",
                         '"name"', '"read_file"', '"arguments"', ":", ",", " ", '"', "\\",
                         "[TOOL_CALLS]", "[ARGS]", "<function=", "read_file", ">",
                         "</function>", "<parameter=", "path", "<|python_tag|>", ";", "`",
                         "x", '{"path": "a"}']),
        max_size=40,
    ),
    st.integers(0, 10_000),
)  # fmt: skip
def test_any_text_gives_calls_and_prose_the_same_at_any_cut(tokens: list[str], seed: int) -> None:
    text = "".join(tokens)
    whole = recognize(text, TOOLS)
    assert {call.name for call in whole.calls} <= set(TOOLS)
    assert cut_out(text, [call.span for call in whole.calls]) == whole.prose
    cut = seed % (len(text) + 1)
    shown, found = streamed([text[:cut], text[cut:]])
    assert (shown + found.released, found.calls) == (whole.prose, whole.calls)
    shown, found = streamed(list(text))
    assert (shown + found.released, found.calls) == (whole.prose, whole.calls)


def test_calls_of_tools_never_offered_are_found_apart_under_the_same_rules() -> None:
    wrong = stray_calls('{"name": "greet.py", "arguments": {"greeting": "Howdy"}}', TOOLS)
    assert [(c.name, c.arguments) for c in wrong] == [("greet.py", {"greeting": "Howdy"})]
    assert stray_calls(READ, TOOLS) == []
    explained = '```json\n{"name": "w", "arguments": {}}\n```\n' + "And then, " * 20
    assert stray_calls(explained, TOOLS) == []


@pytest.mark.parametrize("tag", ["tools", "tool", "function_call"])
def test_a_tag_line_a_small_model_wraps_its_calls_in_is_their_syntax(tag: str) -> None:
    """Seen from Qwen2.5-Coder 1.5B on llama.cpp: `<tools>` around JSON alone. Shown and kept
    in the prose, the model read the tags back and answered with them alone; now they are the
    calls' syntax, held with them and never shown."""
    text = f"Let me look.\n<{tag}>\n    {READ}\n</{tag}>\n"
    found = recognize(text, TOOLS)
    assert [c.name for c in found.calls] == ["read_file"]
    assert found.prose == found.released == "Let me look.\n\n"
    assert_same_at_every_cut(text)
    unclosed = recognize(f"<{tag}>\n{READ}", TOOLS)  # its closing tag left out
    assert ([c.name for c in unclosed.calls], unclosed.prose) == (["read_file"], "")
    html = f"<{tag}>\nNot a call.\n</{tag}>\n"  # no call in it: text, as it was
    assert recognize(html, TOOLS) == Recognized((), html, html)
    assert_same_at_every_cut(html)
