"""Tests of the schemas package: its validators (jsonschema-rs) and their explanations, checked
against the reference implementation (`jsonschema`), and the startup path's plain check."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as conjecture_utils
from jsonschema import Draft202012Validator

from acp_fsm import schemas
from acp_fsm.schemas import Violation
from acp_fsm.schemas.plain import ANY_STRING, surely_conforms, surely_valid
from tests.harness import ROOT

# hypothesis-jsonschema 0.23 draws objects through a Hypothesis internal (`many.more`) that
# newer Hypothesis releases removed; use it only where it still works.
HJS_WORKS = hasattr(conjecture_utils.many, "more")

_ROOT = str(ROOT)
JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
DIFF_SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def check(schema: dict[str, Any], instance: object) -> Violation | None:
    """Validate instance against an in-memory schema."""
    return _compiled(json.dumps(schema, sort_keys=True))(instance)


@cache
def _compiled(schema_json: str) -> Callable[[object], Violation | None]:
    return schemas.compile_schema(json.loads(schema_json))


def _oracle_valid(schema: dict[str, Any], instance: object) -> bool:
    return Draft202012Validator(schema).is_valid(instance)


# ---- keywords, one by one ---------------------------------------------------------------------

TAGGED = {
    "$defs": {
        "Text": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "Image": {
            "type": "object",
            "properties": {"data": {"type": "string"}},
            "required": ["data"],
        },
    },
    "oneOf": [
        {
            "type": "object",
            "properties": {"type": {"const": "text"}},
            "required": ["type"],
            "allOf": [{"$ref": "#/$defs/Text"}],
        },
        {
            "properties": {"type": {"const": "image"}},
            "required": ["type"],
            "allOf": [{"$ref": "#/$defs/Image"}],
        },
    ],
}
TREE = {
    "$defs": {
        "Tree": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
            },
        }
    },
    "$ref": "#/$defs/Tree",
}
IF_THEN_ELSE = {
    "if": {"properties": {"k": {"const": "a"}}},
    "then": {"required": ["x"]},
    "else": {"required": ["y"]},
}
UNTAGGED_OBJECTS = {  # the "tag" does not require an object: non-objects match every branch
    "oneOf": [
        {"properties": {"k": {"const": "a"}}, "required": ["k"]},
        {"properties": {"k": {"const": "b"}}, "required": ["k"]},
    ]
}
NUMERIC_TAGS = {
    "type": "object",
    "oneOf": [
        {"properties": {"k": {"const": 1}}, "required": ["k"]},
        {"properties": {"k": {"const": True}}, "required": ["k"]},
    ],
}

PARTLY_TAGGED = {  # as ACP's McpServer: http and sse tagged by `type`, stdio untagged
    "anyOf": [
        {
            "type": "object",
            "properties": {"type": {"const": "http"}, "url": {"type": "string"}},
            "required": ["type", "url"],
        },
        {
            "type": "object",
            "properties": {"type": {"const": "sse"}, "url": {"type": "string"}},
            "required": ["type", "url"],
        },
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    ]
}
UNTAGGED_BODIES = {  # as ACP's embedded resource: text or blob, told apart by their members
    "anyOf": [
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        {"type": "object", "properties": {"blob": {"type": "string"}}, "required": ["blob"]},
    ]
}

FORBIDDEN = {"not": {"anyOf": [{"required": ["a"]}, {"required": ["b", "c"]}]}}

OK = None
CASES: list[tuple[dict[str, Any], object, tuple[tuple[str | int, ...], str] | None]] = [
    # type: bool is not a number; 1.0 is an integer
    ({"type": "integer"}, 1, OK),
    ({"type": "integer"}, 1.0, OK),
    ({"type": "integer"}, -(2**70), OK),
    ({"type": "integer"}, True, ((), "expected integer, got boolean")),
    ({"type": "integer"}, 1.5, ((), "expected integer, got number")),
    ({"type": "integer"}, "1", ((), "expected integer, got string")),
    ({"type": "number"}, 1.5, OK),
    ({"type": "number"}, 3, OK),
    ({"type": "number"}, False, ((), "expected number, got boolean")),
    ({"type": "boolean"}, True, OK),
    ({"type": "boolean"}, 0, ((), "expected boolean, got integer")),
    ({"type": "null"}, None, OK),
    ({"type": "null"}, 0, ((), "expected null, got integer")),
    ({"type": "string"}, "", OK),
    ({"type": "array"}, [], OK),
    ({"type": "array"}, {}, ((), "expected array, got object")),
    ({"type": "object"}, {}, OK),
    ({"type": "object"}, [], ((), "expected object, got array")),
    ({"type": ["string", "null"]}, None, OK),
    ({"type": ["string", "null"]}, 1, ((), "expected string or null, got integer")),
    ({"type": ["integer", "number"]}, 1.5, OK),
    # const: JSON equality
    ({"const": 1}, 1.0, OK),
    ({"const": 1}, True, ((), "expected 1, got true")),
    ({"const": 1}, "1", ((), 'expected 1, got "1"')),
    ({"const": 0}, False, ((), "expected 0, got false")),
    ({"const": 0}, 0.0, OK),
    ({"const": False}, 0, ((), "expected false, got 0")),
    ({"const": False}, False, OK),
    ({"const": True}, 1, ((), "expected true, got 1")),
    ({"const": None}, None, OK),
    ({"const": None}, 0, ((), "expected null, got 0")),
    ({"const": "a"}, "a", OK),
    ({"const": "a"}, ["a"], ((), 'expected "a", got ["a"]')),
    ({"const": [1, {"a": 2}]}, [1.0, {"a": 2.0}], OK),
    (
        {"const": [1, {"a": 2}]},
        [True, {"a": 2}],
        ((), 'expected [1, {"a": 2}], got [true, {"a": 2}]'),
    ),
    ({"const": [1, {"a": 2}]}, [1], ((), 'expected [1, {"a": 2}], got [1]')),
    ({"const": {"a": [1]}}, {"a": [1.0]}, OK),
    (
        {"const": {"a": [1]}},
        {"a": [1], "b": 1},
        ((), 'expected {"a": [1]}, got {"a": [1], "b": 1}'),
    ),
    # enum
    ({"enum": ["a", "b"]}, "b", OK),
    ({"enum": ["a", "b"]}, "c", ((), 'expected one of "a", "b", got "c"')),
    ({"enum": ["a", "b"]}, ["a"], ((), 'expected one of "a", "b", got ["a"]')),
    ({"enum": [1, "a", None, [1, 2]]}, 1.0, OK),
    ({"enum": [1, "a", None, [1, 2]]}, [1, 2.0], OK),
    ({"enum": [1, "a", None, [1, 2]]}, None, OK),
    (
        {"enum": [1, "a", None, [1, 2]]},
        True,
        ((), 'expected one of 1, "a", null, [1, 2], got true'),
    ),
    ({"enum": [1, "a"]}, {"a": 1}, ((), 'expected one of 1, "a", got {"a": 1}')),
    ({"enum": [False]}, 0, ((), "expected one of false, got 0")),
    # properties / required
    ({"properties": {"a": {"type": "string"}}}, {"a": "x"}, OK),
    ({"properties": {"a": {"type": "string"}}}, {}, OK),
    ({"properties": {"a": {"type": "string"}}}, "not an object", OK),
    ({"properties": {"a": {"type": "string"}}}, {"a": 1}, (("a",), "expected string, got integer")),
    (
        {"properties": {"a": {"properties": {"b": {"type": "boolean"}}}}},
        {"a": {"b": "x"}},
        (("a", "b"), "expected boolean, got string"),
    ),
    ({"properties": {"a": False}}, {"a": 1}, (("a",), "no value is allowed here")),
    ({"required": ["a", "b"]}, {"a": 1}, ((), 'missing required property "b"')),
    ({"required": ["a"]}, [], OK),
    # a member named like a number is still a member (not an index)
    (
        {"properties": {"0": {"type": ["integer", "string"]}}},
        {"0": None},
        (("0",), "expected integer or string, got null"),
    ),
    (
        {"additionalProperties": {"type": "integer"}},
        {"0": None},
        (("0",), "expected integer, got null"),
    ),
    # additionalProperties
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, OK),
    (
        {"properties": {"a": {}}, "additionalProperties": False},
        {"a": 1, "z": 2},
        ((), 'unexpected property "z"'),
    ),
    ({"additionalProperties": False}, {}, OK),
    ({"additionalProperties": False}, {"q": 1}, ((), 'unexpected property "q"')),
    (
        {"additionalProperties": {"type": "integer"}},
        {"x": 1, "y": "s"},
        (("y",), "expected integer, got string"),
    ),
    (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
        {"a": "s", "b": 2},
        OK,
    ),
    (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
        {"a": "s", "b": "t"},
        (("b",), "expected integer, got string"),
    ),
    # items / minItems / maxItems
    ({"items": {"type": "integer"}}, [1, 2.0], OK),
    ({"items": {"type": "integer"}}, [1, "x"], ((1,), "expected integer, got string")),
    ({"items": {"type": "integer"}}, "x", OK),
    ({"items": False}, [], OK),
    ({"items": False}, [1], ((0,), "no value is allowed here")),
    (
        {"properties": {"a": {"items": {"properties": {"b": {"type": "null"}}}}}},
        {"a": [{}, {"b": 1}]},
        (("a", 1, "b"), "expected null, got integer"),
    ),
    ({"minItems": 2}, [1], ((), "expected at least 2 items, got 1")),
    ({"minItems": 2}, "x", OK),
    ({"maxItems": 1}, [1, 2], ((), "expected at most 1 item, got 2")),
    ({"maxItems": 1}, [1], OK),
    # minLength / maxLength count code points
    ({"minLength": 2}, "é", ((), "expected at least 2 characters, got 1")),
    ({"minLength": 2}, "😀😀", OK),
    ({"maxLength": 2}, "😀😀", OK),
    ({"maxLength": 2}, "abc", ((), "expected at most 2 characters, got 3")),
    ({"maxLength": 2}, 12345, OK),
    # minimum / maximum apply to numbers only (not booleans)
    ({"minimum": 0}, -1, ((), "expected >= 0, got -1")),
    ({"minimum": 0}, 0.0, OK),
    ({"minimum": 2}, True, OK),
    ({"maximum": 1.5}, 2, ((), "expected <= 1.5, got 2")),
    ({"maximum": 1.5}, 1.5, OK),
    # anyOf / oneOf / allOf / not
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.0, OK),
    (
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        True,
        ((), "expected string or integer, got boolean"),
    ),
    (
        {"anyOf": [{"type": "object", "required": ["a"]}, {"type": "null"}]},
        {},
        ((), 'missing required property "a"'),
    ),
    (
        {"properties": {"p": {"anyOf": [{"items": {"type": "string"}}, {"type": "object"}]}}},
        {"p": [1]},
        (("p", 0), "expected string, got integer"),
    ),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, OK),
    (
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        1,
        ((), "matches more than one oneOf alternative (#0 and #1)"),
    ),
    (
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "x",
        ((), "expected integer or number, got string"),
    ),
    (
        {"allOf": [{"type": "object"}, {"required": ["a"]}]},
        {},
        ((), 'missing required property "a"'),
    ),
    ({"allOf": [{"type": "object"}, {"required": ["a"]}]}, {"a": 0}, OK),
    ({"not": {"type": "string"}}, "x", ((), 'must not match the "not" schema')),
    ({"not": {"type": "string"}}, 1, OK),
    ({"not": {"properties": {"a": {"type": "string"}}}}, {"a": 1}, OK),
    (
        {"not": {"properties": {"a": {"type": "string"}}}},
        {"a": "x"},
        ((), 'must not match the "not" schema'),
    ),
    # a `not` that forbids members names them
    ({"not": {"required": ["a"]}}, {"a": 1}, ((), 'property "a" is not allowed here')),
    ({"not": {"required": ["a"]}}, {"b": 1}, OK),
    ({"not": {"required": ["a"]}}, [], ((), 'must not match the "not" schema')),
    (FORBIDDEN, {"x": 1, "b": 2}, OK),
    (FORBIDDEN, {"b": 2, "c": 3}, ((), 'properties "b", "c" are not allowed together here')),
    (FORBIDDEN, {"a": 2, "c": 3}, ((), 'property "a" is not allowed here')),
    # if / then / else
    (IF_THEN_ELSE, {"k": "a"}, ((), 'missing required property "x"')),
    (IF_THEN_ELSE, {"k": "b"}, ((), 'missing required property "y"')),
    (IF_THEN_ELSE, {"k": "a", "x": 1}, OK),
    (IF_THEN_ELSE, {"k": "b", "y": 1}, OK),
    ({"then": {"type": "string"}}, 1, OK),
    ({"if": {"type": "string"}}, 1, OK),
    # $ref: local definitions, siblings, recursion
    (
        {"$defs": {"N": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/N"}}},
        {"n": "x"},
        (("n",), "expected integer, got string"),
    ),
    (
        {"$defs": {"A": {"required": ["a"]}}, "$ref": "#/$defs/A", "required": ["b"]},
        {"a": 1},
        ((), 'missing required property "b"'),
    ),
    (
        {"$defs": {"A": {"required": ["a"]}}, "$ref": "#/$defs/A", "required": ["b"]},
        {"b": 1},
        ((), 'missing required property "a"'),
    ),
    (TREE, {"v": 1, "children": [{"children": []}, {"v": 2}]}, OK),
    (
        TREE,
        {"children": [{"children": [{}, {"v": "x"}]}]},
        (("children", 0, "children", 1, "v"), "expected integer, got string"),
    ),
    # annotations are accepted and ignored
    ({"title": "t", "description": "d", "default": 1, "examples": [1], "format": "email"}, 5, OK),
    ({"$comment": "c", "format": "date-time"}, "not a date", OK),
    # tagged unions: dispatch on the tag, same verdicts as plain oneOf
    (TAGGED, {"type": "text", "text": "x"}, OK),
    (TAGGED, {"type": "image", "data": "x"}, OK),
    (TAGGED, {"type": "text", "text": 1}, (("text",), "expected string, got integer")),
    (TAGGED, {"type": "image", "text": "x"}, ((), 'missing required property "data"')),
    (
        TAGGED,
        {"type": "video"},
        (("type",), 'unknown tag value, expected one of "text", "image", got "video"'),
    ),
    (TAGGED, {"type": 1}, (("type",), 'unknown tag value, expected one of "text", "image", got 1')),
    (TAGGED, {}, ((), 'missing tag property "type"; expected one of "text", "image"')),
    (TAGGED, "x", ((), "expected object, got string")),
    (UNTAGGED_OBJECTS, {"k": "b"}, OK),
    (
        UNTAGGED_OBJECTS,
        {"k": "c"},
        (("k",), 'unknown tag value, expected one of "a", "b", got "c"'),
    ),
    (UNTAGGED_OBJECTS, "x", ((), "matches more than one oneOf alternative (#0 and #1)")),
    ({"anyOf": UNTAGGED_OBJECTS["oneOf"]}, "x", OK),
    (NUMERIC_TAGS, {"k": 1.0}, OK),
    (NUMERIC_TAGS, {"k": True}, OK),
    (NUMERIC_TAGS, {"k": 2}, (("k",), "unknown tag value, expected one of 1, true, got 2")),
    (
        {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
        {},
        (
            (),
            'matches none of the alternatives: missing required property "a"; '
            'missing required property "b"',
        ),
    ),
    # a union tagged in part, or told apart by members: the branch meant names the field
    (PARTLY_TAGGED, {"type": "http", "url": 5}, (("url",), "expected string, got integer")),
    (PARTLY_TAGGED, {"type": "sse"}, ((), 'missing required property "url"')),
    (PARTLY_TAGGED, {"command": ["x"]}, (("command",), "expected string, got array")),
    (PARTLY_TAGGED, {"command": "x"}, OK),
    (UNTAGGED_BODIES, {"text": 5}, (("text",), "expected string, got integer")),
    (UNTAGGED_BODIES, {"blob": 5}, (("blob",), "expected string, got integer")),
    (
        UNTAGGED_BODIES,
        {},
        (
            (),
            'matches none of the alternatives: missing required property "text"; '
            'missing required property "blob"',
        ),
    ),
]


@pytest.mark.parametrize(("schema", "instance", "expected"), CASES)
def test_keyword(
    schema: dict[str, Any], instance: object, expected: tuple[tuple[str | int, ...], str] | None
) -> None:
    assert _oracle_valid(schema, instance) == (expected is None), "bad test case"
    got = check(schema, instance)
    assert got == (None if expected is None else Violation(*expected))


INIT_PARAMS: dict[str, Any] = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
    "clientInfo": {"name": "zed", "version": "0.201.3"},
}
SAMPLES = {  # valid messages of the real schemas
    "acp.InitializeRequest": INIT_PARAMS,
    "acp.SessionNotification": {
        "sessionId": "s1",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hi"},
        },
    },
    "acp.PromptRequest": {
        "sessionId": "s1",
        "prompt": [
            {"type": "text", "text": "why?"},
            {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"},
            {"type": "resource", "resource": {"uri": "file:///b.py", "text": "x = 1"}},
        ],
    },
    "jsonrpc.Message": {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": INIT_PARAMS},
}


def test_valid_samples_and_a_bad_schema() -> None:
    for ref, message in SAMPLES.items():
        assert schemas.validate(ref, message) is None, ref
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        schemas.compile_schema({"type": "float"})


def test_a_violation_under_an_empty_member_name_is_located() -> None:
    """jsonschema-rs leaves a member named "" out of an error's path; the explanation still
    finds the value (a prices file may name a model "")."""
    check = schemas.compile_schema(
        {"additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}}
    )
    violation = check({"": {"a": None}})
    assert violation is not None and violation.path == ("", "a"), violation
    assert "expected string" in violation.message


# ---- runtime API --------------------------------------------------------------------------------


def test_violation_str_and_immutability() -> None:
    v = Violation(
        ("params", "clientCapabilities", "fs", "readTextFile"), "expected boolean, got string"
    )
    assert str(v) == "params.clientCapabilities.fs.readTextFile: expected boolean, got string"
    assert str(Violation(("prompt", 3, "text"), "m")) == "prompt[3].text: m"
    assert str(Violation((2, "a"), "m")) == "[2].a: m"
    assert str(Violation((), "expected object, got array")) == "expected object, got array"
    with pytest.raises(AttributeError):
        v.message = "x"
    with pytest.raises(AttributeError):
        del v.path
    assert v == Violation(list(v.path), v.message)
    assert len({v, Violation(v.path, v.message)}) == 1
    assert "readTextFile" in repr(v)


def test_validate_and_validator() -> None:
    assert schemas.validate("acp.InitializeRequest", INIT_PARAMS) is None
    bad = copy.deepcopy(INIT_PARAMS)
    bad["clientCapabilities"]["fs"]["readTextFile"] = "yes"
    err = schemas.validate("acp.InitializeRequest", bad)
    assert err == Violation(
        ("clientCapabilities", "fs", "readTextFile"), "expected boolean, got string"
    )
    assert type(err.message) is str
    check_request = schemas.validator("jsonrpc.Request")
    assert (
        check_request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS})
        is None
    )
    assert check_request({"jsonrpc": "2.0", "id": True, "method": "x"}) == Violation(
        ("id",), "expected string or number, got boolean"
    )
    with pytest.raises(KeyError):
        schemas.validate("acp.NoSuchThing", {})
    with pytest.raises(KeyError):
        schemas.validator("nope.Request")


def test_tagged_union_errors_on_real_schema() -> None:
    params: dict[str, Any] = {
        "sessionId": "s",
        "prompt": [{"type": "text", "text": "hi"}, {"type": "video", "uri": "x"}],
    }
    err = schemas.validate("acp.PromptRequest", params)
    assert err is not None
    assert err.path == ("prompt", 1, "type")
    assert err.message.startswith('unknown tag value, expected one of "text", "image"')
    del params["prompt"][1]["type"]
    err = schemas.validate("acp.PromptRequest", params)
    assert err is not None
    assert (err.path, err.message.split(";")[0]) == (("prompt", 1), 'missing tag property "type"')


def test_load_json_and_schema_path() -> None:
    methods = schemas.load_json("methods.json")
    assert methods["initialize"]["params"] == "InitializeRequest"
    assert schemas.schema_path("acp.json").is_file()
    assert schemas.schema_path("acp") == schemas.schema_path("acp.json")
    assert schemas.load_json("jsonrpc")["$defs"]
    with pytest.raises(ValueError):
        schemas.load_json("../pyproject.toml")


def _printed(code: str) -> list[str]:
    """What `code` prints, run in a fresh interpreter (this one has imported everything)."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=_ROOT
    )
    return out.stdout.split()


def test_importing_schemas_loads_no_validator_library() -> None:
    """The startup path imports schemas and schemas.plain; jsonschema-rs comes with the first
    validator, not before."""
    code = (
        "import sys\n"
        "from acp_fsm.schemas.plain import surely_valid\n"
        "assert surely_valid('jsonrpc.Request', {'jsonrpc': '2.0', 'id': 1, 'method': 'm'})\n"
        "print('jsonschema_rs' in sys.modules)\n"
        "from acp_fsm import schemas\n"
        "assert schemas.validate('jsonrpc.Request', {'jsonrpc': '2.0', 'id': 1}) is not None\n"
        "print('jsonschema_rs' in sys.modules)\n"
    )
    assert _printed(code) == ["False", "True"]


def test_a_plain_first_definition_is_checked_without_the_validator_library_until_unsure() -> None:
    """`plain_first`: what the plain check is sure of passes without jsonschema-rs; anything
    else goes to the real validator, which refuses what is invalid; `warm` builds it."""
    code = (
        "import sys\n"
        "from acp_fsm import schemas\n"
        "schemas.plain_first(['jsonrpc.SuccessResponse'])\n"
        "ok = {'jsonrpc': '2.0', 'id': 1, 'result': {}}\n"
        "assert schemas.validate('jsonrpc.SuccessResponse', ok) is None\n"
        "print('jsonschema_rs' in sys.modules)\n"
        "both = dict(ok, error={'code': 1, 'message': 'm'})\n"
        "assert schemas.validate('jsonrpc.SuccessResponse', both) is not None\n"
        "print('jsonschema_rs' in sys.modules)\n"
    )
    assert _printed(code) == ["False", "True"]


def test_the_first_session_is_answered_by_plain_checks() -> None:
    """The envelopes and the first session's messages take the plain check (`not` included)."""
    response = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "sess_1"}}
    assert surely_valid("jsonrpc.SuccessResponse", response)
    assert not surely_valid("jsonrpc.SuccessResponse", dict(response, method="m"))
    assert surely_valid("acp.NewSessionRequest", {"cwd": "/tmp", "mcpServers": []})


# ---- differential tests against jsonschema ------------------------------------------------------


def _conjuncts(s: Any, defs: dict[str, Any]) -> list[Any]:
    """s and the schemas it requires through $ref and allOf."""
    out, todo = [], [s]
    while todo:
        c = todo.pop(0)
        if c is True:
            continue
        out.append(c)
        if isinstance(c, dict):
            if "$ref" in c:
                todo.append(defs[c["$ref"].rsplit("/", 1)[1]])
            todo.extend(c.get("allOf", ()))
    return out


def _interesting(doc: Any) -> tuple[list[Any], list[str]]:
    """Constants and property names of a schema document (to steer random values)."""
    values: list[Any] = [0, 1, -1, 1.0, 0.5, 2.0, True, False, None, "", "x", "\U0001f600", [], {}]
    names: list[str] = []
    todo = [doc]
    while todo:
        s = todo.pop()
        if isinstance(s, dict):
            # (a `properties` object may itself name fields "enum" or "required")
            values += [s["const"]] if "const" in s else []
            values += s["enum"] if isinstance(s.get("enum"), list) else []
            properties, required = s.get("properties"), s.get("required")
            names += list(properties) if isinstance(properties, dict) else []
            names += (
                [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
            )
            todo += [v for k, v in s.items() if k not in ("const", "enum", "default", "examples")]
        elif isinstance(s, list):
            todo += s
    return values, sorted(set(names)) or ["a"]


def json_values(doc: Any) -> st.SearchStrategy[Any]:
    """Random JSON values, biased towards the constants and names the schema mentions."""
    values, names = _interesting(doc)
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 70000),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=4),
        st.sampled_from(values),
    )
    keys = st.sampled_from(names) | st.text(max_size=3)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=6,
    )


_HINTS = {  # the types a keyword constrains, to steer untyped schemas towards them
    "minLength": ("string",),
    "maxLength": ("string",),
    "minimum": ("integer", "number"),
    "maximum": ("integer", "number"),
    "minItems": ("array",),
    "maxItems": ("array",),
    "items": ("array",),
    "properties": ("object",),
    "required": ("object",),
    "additionalProperties": ("object",),
}


@st.composite
def instances(draw: Any, s: Any, defs: dict[str, Any], anything: Any, depth: int = 0) -> Any:
    """Instances meant to be valid under s (best effort: `not`/`if` are not steered)."""
    conj = _conjuncts(s, defs)
    i = 0
    while i < len(conj):
        for key in ("anyOf", "oneOf"):
            if isinstance(conj[i], dict) and key in conj[i]:
                conj += _conjuncts(draw(st.sampled_from(conj[i][key])), defs)
        i += 1
    if False in conj or depth > 8:
        return draw(anything)
    for c in conj:
        if "const" in c:
            return c["const"]
    for c in conj:
        if "enum" in c:
            return draw(st.sampled_from(c["enum"]))
    types = set(JSON_TYPES)
    for c in conj:
        if "type" in c:
            types &= {c["type"]} if isinstance(c["type"], str) else set(c["type"])
    if not types:
        return draw(anything)
    hinted = {t for c in conj for k in c for t in _HINTS.get(k, ())} & types
    if hinted and draw(st.integers(0, 3)):
        types = hinted
    kind = draw(st.sampled_from(sorted(types)))
    return draw(_of_type(kind, conj, defs, anything, depth))


def _of_type(kind: str, conj: list[Any], defs: dict[str, Any], anything: Any, depth: int) -> Any:
    """Strategy for an instance of one JSON type satisfying the flat keywords of conj."""

    def most(key: str, pick: Callable[..., Any], default: Any) -> Any:
        found = [c[key] for c in conj if key in c]
        return pick(found) if found else default

    if kind in ("integer", "number"):
        lo, hi = most("minimum", max, None), most("maximum", min, None)
        ints = st.integers(
            None if lo is None else int(-(-lo // 1)), None if hi is None else int(hi // 1)
        )
        floats = st.floats(lo, hi, allow_nan=False, allow_infinity=False)
        return ints if kind == "integer" else ints | floats
    if kind == "string":
        lo = most("minLength", max, 0)
        return st.text(min_size=lo, max_size=max(lo, most("maxLength", min, lo + 5)))
    if kind == "array":
        lo = most("minItems", max, 0)
        items = {"allOf": [c["items"] for c in conj if "items" in c]}
        return st.lists(
            instances(items, defs, anything, depth + 1),
            min_size=lo,
            max_size=max(lo, most("maxItems", min, lo + 3)),
        )
    if kind == "object":
        return _objects(conj, defs, anything, depth)
    return st.just(None) if kind == "null" else st.booleans()


@st.composite
def _objects(draw: Any, conj: list[Any], defs: dict[str, Any], anything: Any, depth: int) -> Any:
    props: dict[str, list[Any]] = {}
    required: set[str] = set()
    for c in conj:
        for key, sub in c.get("properties", {}).items():
            props.setdefault(key, []).append(sub)
        required.update(c.get("required", ()))
    closed = any(c.get("additionalProperties", True) is False for c in conj)
    optional = sorted(set(props) - required)
    keys = sorted(required) + draw(
        st.lists(st.sampled_from(optional), unique=True) if optional else st.just([])
    )
    out = {}
    for key in keys:
        sub = {"allOf": props.get(key, [])}
        out[key] = draw(instances(sub, defs, anything, depth + 1))
    if not closed and draw(st.booleans()):
        out.setdefault(draw(st.text(max_size=3)), draw(anything))
    return out


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _confused(node: Any) -> Any:
    """A value Python confuses with node: True/1, False/0, 1/1.0; astral characters."""
    if isinstance(node, str):
        return "\U0001f600" * len(node)
    if isinstance(node, bool):
        return int(node)
    if isinstance(node, int):
        return bool(node) if node in (0, 1) else float(node)
    if isinstance(node, float) and node.is_integer():
        return int(node)
    return [node]


def _confused_deep(value: Any) -> Any:
    """value with every scalar confused (see _confused); containers kept."""
    if isinstance(value, dict):
        return {k: _confused_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_confused_deep(v) for v in value]
    return _confused(value) if isinstance(value, int | float | str) else value


@st.composite
def mutations(draw: Any, value: Any, anything: Any) -> Any:
    """value with one node replaced, deleted or extended (likely invalid)."""
    value = copy.deepcopy(value)
    path = draw(st.sampled_from(_paths(value)))
    op = draw(st.sampled_from(["replace", "delete", "extend", "confuse"]))
    if not path:
        if op == "confuse":
            return _confused(value)
        return draw(anything) if op != "extend" else [value]
    parent = value
    for seg in path[:-1]:
        parent = parent[seg]
    node = parent[path[-1]]
    if op == "confuse":
        parent[path[-1]] = _confused(node)
    elif op == "replace":
        parent[path[-1]] = draw(anything)
    elif op == "delete":
        del parent[path[-1]]
    elif isinstance(node, dict):
        node[draw(st.sampled_from(sorted(node) or ["k"]) | st.text(max_size=3))] = draw(anything)
    elif isinstance(node, list):
        node.append(draw(anything))
    else:
        parent[path[-1]] = [node]
    return value


# (name, schema, its $defs, compiled validator, random JSON values for it)
Target = tuple[str, Any, dict[str, Any], Callable[[object], Violation | None], Any]


def _differential(targets: list[Target], examples: int) -> Counter[str]:
    """Property test per target: the compiled verdicts equal jsonschema's."""
    stats: Counter[str] = Counter()
    for name, schema, defs, compiled, anything in targets:

        def variants(c: Any, anything: Any = anything) -> st.SearchStrategy[tuple[Any, ...]]:
            return st.tuples(
                st.just(c), mutations(c, anything), anything, st.just(_confused_deep(c))
            )

        strategies = [instances(schema, defs, anything).flatmap(variants)]
        if HJS_WORKS:
            from hypothesis_jsonschema import from_schema

            strategies.append(st.tuples(from_schema(schema)))
        oracle = Draft202012Validator(schema)
        _agreement(name, oracle.is_valid, compiled, st.one_of(strategies), examples, stats)()
    return stats


def _agreement(
    name: str,
    expect: Callable[[object], bool],
    compiled: Callable[[object], Violation | None],
    values: st.SearchStrategy[tuple[Any, ...]],
    examples: int,
    stats: Counter[str],
) -> Callable[[], None]:
    """A Hypothesis test: compiled accepts exactly the values that expect accepts."""

    @settings(DIFF_SETTINGS, max_examples=examples)
    @given(values)
    def run(drawn: tuple[Any, ...]) -> None:
        for value in drawn:
            expected = expect(value)
            got = compiled(value)
            assert (got is None) == expected, (name, value, got)
            stats["valid" if expected else "invalid"] += 1

    return run


def _documents() -> list[tuple[str, dict[str, Any]]]:
    folder = schemas.schema_path("acp").parent
    docs = [
        (path.stem, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(folder.glob("*.json"))
    ]
    return [(stem, doc) for stem, doc in docs if "$defs" in doc]


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for seg in path:
        value = value[seg]
    return value


def _explained(ref: str) -> Callable[[object], Violation | None]:
    """schemas.validate, asserting on the way that an explanation points into the instance and
    that the startup path's check never accepts what the validator refuses."""

    def run(value: object) -> Violation | None:
        got = schemas.validate(ref, value)
        if got is not None:
            _at(value, got.path)  # raises if the path is not in the instance
            assert got.message, (ref, value)
        assert not (surely_valid(ref, value) and got is not None), (ref, value, got)
        return got

    return run


def _real_targets() -> list[Target]:
    out = []
    for stem, doc in _documents():
        anything = json_values(doc)
        merged = schemas.definitions(stem)  # a file's own and those it extends (acp_v2.json)
        whole = {k: v for k, v in doc.items() if k not in ("$id", "$extends", "$removed")}
        for name in sorted(doc["$defs"]):
            ref = f"{stem}.{name}"
            schema = whole | {"$defs": merged, "$ref": f"#/$defs/{name}"}
            out.append((ref, schema, merged, _explained(ref), anything))
    return out


def _small_targets() -> list[Target]:
    unique = {json.dumps(schema, sort_keys=True): schema for schema, _, _ in CASES}
    return [
        (key, schema, schema.get("$defs", {}), _compiled(key), json_values(schema))
        for key, schema in unique.items()
    ]


@pytest.mark.slow  # every definition, by both validators
def test_differential_real_schemas() -> None:
    """The validators agree with jsonschema on every definition of the real files."""
    targets = _real_targets()
    assert {"acp.InitializeRequest", "acp.SessionNotification", "jsonrpc.Request"} <= {
        t[0] for t in targets
    }
    stats = _differential(targets, examples=4)
    assert stats["valid"] > 50 and stats["invalid"] > 50, stats


@pytest.mark.slow  # every definition, by both validators
def test_differential_small_schemas() -> None:
    stats = _differential(_small_targets(), examples=10)
    assert stats["valid"] > 30 and stats["invalid"] > 30, stats


def test_every_real_definition_on_fixed_values() -> None:
    """Every definition sees the JSON type edge cases, whatever Hypothesis picks."""
    edge = [None, True, False, 0, 1, 1.0, 1.5, -1, "", "x", [], [1], {}, {"type": "text"}]
    for name, schema, _, validator, _ in _real_targets():
        oracle = Draft202012Validator(schema)
        for value in edge:
            assert (validator(value) is None) == oracle.is_valid(value), (name, value)


# ---- the startup path's plain check ------------------------------------------------------------

PLAIN_KEYWORDS = {
    "type",
    "properties",
    "required",
    "items",
    "$ref",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "const",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "$defs",
    "title",
    "description",
    "default",
    "examples",
    "$comment",
}


def _keywords(schema: Any) -> set[str]:
    found: set[str] = set()
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            found |= set(node)
            for key, sub in node.items():
                if key in ("properties", "$defs"):
                    todo += list(sub.values())
                elif key not in ("const", "enum", "default", "examples", "required"):
                    todo.append(sub)
        elif isinstance(node, list):
            todo += node
    return found


@pytest.mark.parametrize(("schema", "instance", "expected"), CASES)
def test_plain_check_is_sound_and_complete_on_its_keywords(
    schema: dict[str, Any], instance: object, expected: object
) -> None:
    """Never accepts an invalid instance; accepts every valid one where it knows each keyword
    (const and enum of containers excepted: it does not compare those)."""
    verdict = surely_conforms(schema, instance)
    if expected is not None:
        assert not verdict
    elif _keywords(schema) <= PLAIN_KEYWORDS and not isinstance(
        schema.get("const", schema.get("enum", [None])[-1]), list | dict
    ):
        assert verdict


def test_plain_check_takes_what_editors_send() -> None:
    """The `initialize` messages real clients send take the startup path."""
    zed = {
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": {"readTextFile": True, "writeTextFile": True},
            "terminal": True,
            "_meta": {"terminal_output": True, "terminal-auth": True},
        },
        "clientInfo": {"name": "zed", "title": "Zed", "version": "0.201.3"},
    }
    sdk = {
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": {"readTextFile": False, "writeTextFile": False},
            "terminal": False,
            "auth": {"terminal": False},
        },
        "clientInfo": None,
        "_meta": None,
    }
    minimal = {"protocolVersion": 1}
    for params in (zed, sdk, minimal, INIT_PARAMS):
        assert surely_valid("acp.InitializeRequest", params), params
        request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        assert surely_valid("jsonrpc.Request", request)
    assert not surely_valid("acp.InitializeRequest", {"protocolVersion": "1.0"})
    assert not surely_valid("acp.InitializeRequest", {"protocolVersion": True})
    assert not surely_valid("acp.InitializeRequest", None)
    assert not surely_valid("jsonrpc.Request", {"jsonrpc": "2.0", "id": True, "method": "x"})


STRINGS = ["", "a", "text", "image", "agent_message_chunk", "1", "é 😀", "x" * 300]


def _put(template: Any, text: str) -> Any:
    """`template` with `text` wherever it holds ANY_STRING."""
    if template is ANY_STRING:
        return text
    if isinstance(template, dict):
        return {key: _put(value, text) for key, value in template.items()}
    if isinstance(template, list):
        return [_put(value, text) for value in template]
    return template


@pytest.mark.parametrize(
    "schema", list({json.dumps(schema, sort_keys=True): schema for schema, _, _ in CASES}.values())
)
def test_a_template_is_surely_valid_only_when_every_string_in_it_is(schema: dict[str, Any]) -> None:
    """ANY_STRING in place of a value, alone or in an object or a list: a template the plain
    check accepts is valid by the reference implementation with any string in its place."""
    reference = Draft202012Validator(schema)
    for template in (ANY_STRING, {"a": ANY_STRING, "b": 1}, [ANY_STRING, "x"]):
        if surely_conforms(schema, template):
            for text in STRINGS:
                assert reference.is_valid(_put(template, text)), (schema, template, text)


def test_a_streamed_update_is_a_template_and_its_tags_are_not() -> None:
    def chunk(kind: object, block: object, text: object) -> dict[str, Any]:
        return {
            "sessionId": "s",
            "update": {"sessionUpdate": kind, "content": {"type": block, "text": text}},
        }

    ref = "acp.SessionNotification"
    assert surely_valid(ref, chunk("agent_message_chunk", "text", ANY_STRING))
    assert surely_valid(ref, chunk("agent_thought_chunk", "text", ANY_STRING))
    assert not surely_valid(ref, chunk(ANY_STRING, "text", "t"))  # a tag decides the branch
    assert not surely_valid(ref, chunk("agent_message_chunk", ANY_STRING, "t"))
    assert not surely_valid(ref, chunk("agent_message_chunk", "text", 1))
    assert not surely_conforms({"type": "string", "minLength": 1}, ANY_STRING)
    assert not surely_conforms({"enum": ["a", "b"]}, ANY_STRING)
    assert not surely_conforms({"type": "integer"}, ANY_STRING)


def test_an_instance_too_deep_to_explain_is_still_refused_with_a_reason() -> None:
    deep: list[Any] = []
    for _ in range(900):
        deep = [deep]
    assert schemas.validate("acp.InitializeRequest", deep) == Violation(
        (), "expected object, got array"
    )
    refused = schemas.validate("acp.PromptRequest", {"sessionId": "s", "prompt": deep})
    assert refused is not None and "too deeply" in refused.message


def test_a_property_name_that_is_not_unicode_is_refused_where_it_is() -> None:
    """A lone surrogate (a file name decoded with surrogateescape, say) in a property name; in a
    value it is still a string to JSON Schema (the encoder refuses it later)."""
    prompt: dict[str, Any] = {"sessionId": "s", "prompt": [{"type": "text", "text": "caf\udce9"}]}
    assert schemas.validate("acp.PromptRequest", prompt) is None
    prompt["prompt"][0] = {"type": "text", "text": "x", "\ud800": 1}
    assert schemas.validator("acp.PromptRequest")(prompt) == Violation(
        ("prompt", 0), "not valid Unicode (a lone surrogate)"
    )
