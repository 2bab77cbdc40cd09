"""JSON-RPC 2.0 classification, message builders and the line codec (pure tier).

`classify` takes one decoded JSON value; every shape that is not a well-formed message must come
back as `Invalid` carrying -32600, with the id to answer (None when none can be recovered).
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import pytest

from acp_fsm.protocol import codec, jsonrpc
from acp_fsm.protocol.errors import InvalidParams, InvalidRequest, ParseError, RpcError
from acp_fsm.protocol.jsonrpc import Invalid, Notification, Request, Response, classify

V = "2.0"

# ------------------------------------------------------------------ requests


@pytest.mark.parametrize("msg_id", ["abc", "", 7, 0, -3, 2**53, 2**64 - 1, -(2**63)])
def test_request_keeps_its_id_exactly(msg_id: Any) -> None:
    message = classify({"jsonrpc": V, "id": msg_id, "method": "m", "params": {"a": 1}})
    assert message == Request(msg_id, "m", {"a": 1})
    assert type(message.id) is type(msg_id)


@pytest.mark.parametrize("msg_id", [1.5, 1.0, 1e-05, 1.8446744073709552e19])
def test_a_request_whose_id_may_not_round_trip_is_refused_with_id_null(msg_id: float) -> None:
    message = classify({"jsonrpc": V, "id": msg_id, "method": "m"})
    assert isinstance(message, Invalid) and message.id is None
    assert "cannot be echoed exactly" in message.error.message


def test_a_response_with_a_float_id_is_still_a_response() -> None:
    """Never answered (JSON-RPC): it answers none of our requests and is dropped."""
    assert classify({"jsonrpc": V, "id": 2.0**70, "result": {}}) == Response(2.0**70, {})


def test_request_id_zero_is_not_mistaken_for_missing() -> None:
    assert classify({"jsonrpc": V, "id": 0, "method": "m"}) == Request(0, "m", None)


@pytest.mark.parametrize(
    ("params", "expected"),
    [({"k": [1]}, {"k": [1]}), ([1, "two"], [1, "two"]), ({}, {}), ([], []), (None, None)],
)
def test_request_params_object_array_or_null(params: Any, expected: Any) -> None:
    assert classify({"jsonrpc": V, "id": 1, "method": "m", "params": params}) == Request(
        1, "m", expected
    )


def test_request_without_params() -> None:
    assert classify({"jsonrpc": V, "id": "r", "method": "session/new"}) == Request(
        "r", "session/new", None
    )


# ------------------------------------------------------------------ notifications


@pytest.mark.parametrize("params", [{"sessionId": "s"}, [1], None])
def test_notification(params: Any) -> None:
    assert classify({"jsonrpc": V, "method": "session/cancel", "params": params}) == Notification(
        "session/cancel", params
    )


def test_notification_without_params() -> None:
    assert classify({"jsonrpc": V, "method": "n"}) == Notification("n", None)


# ------------------------------------------------------------------ invalid shapes


def assert_invalid(
    message: object, msg_id: Any, *needles: str, answers: Any = None
) -> InvalidRequest:
    """`message` is Invalid answering `msg_id` with -32600 whose text holds every needle."""
    assert isinstance(message, Invalid), message
    assert message.id == msg_id
    assert type(message.id) is type(msg_id)
    assert message.answers == answers
    assert isinstance(message.error, InvalidRequest)
    assert message.error.code == -32600
    assert message.error.to_error()["code"] == -32600
    for needle in needles:
        assert needle in message.error.message, (needle, message.error.message)
    return message.error


@pytest.mark.parametrize("value", [1, 2.5, "text", None, [], [1, 2], True, False])
def test_non_object_is_invalid_request_without_id(value: object) -> None:
    assert_invalid(classify(value), None, "object")


def test_missing_jsonrpc() -> None:
    assert_invalid(classify({"id": 4, "method": "m"}), 4, '"jsonrpc"')


@pytest.mark.parametrize("version", ["1.0", 2.0, 2, None, ""])
def test_wrong_jsonrpc_version(version: object) -> None:
    assert_invalid(classify({"jsonrpc": version, "id": "q", "method": "m"}), "q", "jsonrpc")


def test_wrong_jsonrpc_version_on_notification() -> None:
    assert_invalid(classify({"jsonrpc": "1.0", "method": "m"}), None, "jsonrpc")


def test_missing_method() -> None:
    assert_invalid(classify({"jsonrpc": V, "id": 9}), 9, '"method"')
    assert_invalid(classify({"jsonrpc": V}), None, '"method"')
    assert_invalid(classify({}), None, '"method"')


@pytest.mark.parametrize("method", [5, None, ["m"], {"m": 1}, True])
def test_non_string_method(method: object) -> None:
    assert_invalid(classify({"jsonrpc": V, "id": 3, "method": method}), 3, "method")
    assert_invalid(classify({"jsonrpc": V, "method": method}), None, "method")


@pytest.mark.parametrize("bad_id", [True, False, {"a": 1}, [1], None])
def test_request_with_bad_id_is_invalid_and_answered_with_null(bad_id: object) -> None:
    error = assert_invalid(classify({"jsonrpc": V, "id": bad_id, "method": "m"}), None, "id")
    assert error.message.startswith("Invalid Request")


@pytest.mark.parametrize("params", ["text", 5, 1.5, True, False])
def test_params_of_wrong_type(params: object) -> None:
    assert_invalid(classify({"jsonrpc": V, "id": 2, "method": "m", "params": params}), 2, "params")
    assert_invalid(classify({"jsonrpc": V, "method": "m", "params": params}), None, "params")


def test_forbidden_member_is_named() -> None:
    message = classify({"jsonrpc": V, "id": 1, "result": 1, "error": {"code": 1, "message": "m"}})
    assert_invalid(message, None, "result", answers=1)


# ------------------------------------------------------------------ responses


@pytest.mark.parametrize("msg_id", [1, 0, "s", 2.5])
def test_success_response(msg_id: Any) -> None:
    assert classify({"jsonrpc": V, "id": msg_id, "result": {"x": 1}}) == Response(
        msg_id, result={"x": 1}
    )


def test_success_response_with_null_result() -> None:
    message = classify({"jsonrpc": V, "id": 5, "result": None})
    assert message == Response(5, result=None, error=None)


def test_error_response() -> None:
    error = {"code": -32601, "message": "nope", "data": {"why": 1}}
    assert classify({"jsonrpc": V, "id": 8, "error": error}) == Response(8, error=error)


def test_error_response_with_null_id() -> None:
    error = {"code": -32700, "message": "Parse error"}
    assert classify({"jsonrpc": V, "id": None, "error": error}) == Response(None, error=error)


@pytest.mark.parametrize(
    ("obj", "answers", "needle"),
    [
        ({"id": 3, "result": 1}, 3, '"jsonrpc"'),
        ({"jsonrpc": "1.0", "id": 3, "result": 1}, 3, "jsonrpc"),
        ({"jsonrpc": V, "id": 7, "error": {"code": 1}}, 7, '"message"'),
        ({"jsonrpc": V, "id": 7, "error": {"message": "m"}}, 7, '"code"'),
        ({"jsonrpc": V, "id": 7, "error": {"code": "x", "message": "m"}}, 7, "error.code"),
        ({"jsonrpc": V, "id": 7, "error": {"code": 1.5, "message": "m"}}, 7, "error.code"),
        ({"jsonrpc": V, "id": 7, "error": "boom"}, 7, "error"),
        ({"jsonrpc": V, "id": "s", "error": {"code": 1, "message": 2}}, "s", "error.message"),
        ({"jsonrpc": V, "id": None, "result": 1}, None, "id"),
        ({"jsonrpc": V, "id": True, "result": 1}, None, "id"),
        ({"jsonrpc": V, "id": [2], "error": {"code": 1, "message": "m"}}, None, "id"),
    ],
)
def test_malformed_response_answers_with_null_id(obj: Any, answers: Any, needle: str) -> None:
    error = assert_invalid(classify(obj), None, needle, answers=answers)
    assert error.message.startswith("Invalid Response")


def test_response_with_both_result_and_error_is_invalid() -> None:
    message = classify({"jsonrpc": V, "id": 1, "result": 1, "error": {"code": 1, "message": "m"}})
    assert_invalid(message, None, answers=1)


def test_response_without_id_is_missing_method() -> None:
    assert_invalid(classify({"jsonrpc": V, "result": 1}), None, '"method"')


# ------------------------------------------------------------------ builders


def test_success_builder() -> None:
    assert jsonrpc.success(0, None) == {"jsonrpc": "2.0", "id": 0, "result": None}
    assert jsonrpc.success("a", {"x": [1]}) == {"jsonrpc": "2.0", "id": "a", "result": {"x": [1]}}


def test_failure_builder() -> None:
    assert jsonrpc.failure(None, InvalidRequest()) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid Request"},
    }
    assert jsonrpc.failure(4, InvalidParams("bad", data={"path": "a.b"})) == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {"code": -32602, "message": "bad", "data": {"path": "a.b"}},
    }


def test_request_builder_omits_null_params() -> None:
    assert jsonrpc.request(1, "m", None) == {"jsonrpc": "2.0", "id": 1, "method": "m"}
    assert jsonrpc.request(2, "m", {"a": 1}) == {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "m",
        "params": {"a": 1},
    }
    assert jsonrpc.request(3, "m", []) == {"jsonrpc": "2.0", "id": 3, "method": "m", "params": []}


def test_notification_builder_omits_null_params() -> None:
    assert jsonrpc.notification("n", None) == {"jsonrpc": "2.0", "method": "n"}
    assert jsonrpc.notification("n", {"requestId": 4}) == {
        "jsonrpc": "2.0",
        "method": "n",
        "params": {"requestId": 4},
    }


def test_built_messages_classify_back() -> None:
    assert classify(jsonrpc.request(1, "m", {"a": 1})) == Request(1, "m", {"a": 1})
    assert classify(jsonrpc.notification("n", [1])) == Notification("n", [1])
    assert classify(jsonrpc.success("x", 5)) == Response("x", result=5)
    failure = jsonrpc.failure(2, InvalidParams("p"))
    assert classify(failure) == Response(2, error={"code": -32602, "message": "p"})


def test_rpc_error_defaults() -> None:
    assert RpcError().to_error() == {"code": -32603, "message": "Internal error"}
    assert InvalidRequest().message == "Invalid Request"


def test_is_valid_id() -> None:
    values: list[object] = ["a", 0, 1.5, True, None, [], {}]
    assert [jsonrpc.is_valid_id(v) for v in values] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]


# ------------------------------------------------------------------ codec


def test_decode_object() -> None:
    assert codec.decode(b'{"a":[1,2.5,"\xc3\xa9"],"b":null}') == {"a": [1, 2.5, "é"], "b": None}


def test_decode_tolerates_trailing_carriage_return() -> None:
    assert codec.decode(b'{"a":1}\r') == {"a": 1}


@pytest.mark.parametrize("line", [b"\xff", b'{"a":"\xc3"}', b'"\xed\xa0\x80"', b'{"a":1}\x80'])
def test_decode_invalid_utf8_is_parse_error(line: bytes) -> None:
    with pytest.raises(ParseError) as caught:
        codec.decode(line)
    assert caught.value.code == -32700
    assert "UTF-8" in caught.value.message


def test_decode_invalid_utf8_names_the_byte() -> None:
    with pytest.raises(ParseError, match=r"invalid UTF-8 at byte 6"):
        codec.decode(b'{"a":"\xff"}')


@pytest.mark.parametrize("line", [b'{"a":1', b"{a:1}", b"nul", b"[1,]", b"1 2", b"NaN", b"'x'"])
def test_decode_invalid_json_is_parse_error(line: bytes) -> None:
    with pytest.raises(ParseError) as caught:
        codec.decode(line)
    assert caught.value.code == -32700
    assert caught.value.message.startswith("Parse error")
    assert "UTF-8" not in caught.value.message
    assert caught.value.data is None


def test_encode_is_compact_single_line() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {"text": "a\nb", "list": [1, 2]}}
    line = codec.encode(message)
    assert line == b'{"jsonrpc":"2.0","id":1,"result":{"text":"a\\nb","list":[1,2]}}\n'
    assert line.count(b"\n") == 1
    assert codec.decode(line.rstrip(b"\n")) == message


def test_encode_keeps_non_ascii_as_utf8() -> None:
    assert codec.encode({"t": "é"}) == b'{"t":"\xc3\xa9"}\n'


def test_encode_lone_surrogate_gives_one_line_of_valid_utf8() -> None:
    """A lone surrogate (a file name's byte that is not UTF-8, a model's cut character) is
    written as `utf8_text` shows it: strict parsers (serde_json) refuse even its escape."""
    name = os.fsdecode(b"caf\xe9")
    message = {"jsonrpc": "2.0", "id": "\ud800x", "result": {"t": "é\n", name: [name]}}
    line = codec.encode(message)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert b" " not in line  # compact
    text = line.decode("ascii")  # ASCII-escaped output
    assert orjson.loads(text) == {
        "jsonrpc": "2.0",
        "id": "\\xed\\xa0\\x80x",
        "result": {"t": "é\n", "caf\\xe9": ["caf\\xe9"]},
    }


def test_encode_big_integer_falls_back() -> None:
    line = codec.encode({"n": 2**70})
    assert line == b'{"n":1180591620717411303424}\n'
