"""The JSON-RPC connection in memory: bytes in through `feed`, bytes out through `write`.

In-memory tier (STYLE §11): a real `Connection` with a small dispatcher written here (no mock
library), so every test drives the same code paths the agent uses and asserts the exact JSON
the peer would read.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import orjson
import pytest

from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.codec import encode
from acp_fsm.protocol.connection import Connection
from acp_fsm.protocol.dispatcher import OutboundKind
from acp_fsm.protocol.errors import (
    ConnectionClosed,
    InternalError,
    InvalidResult,
    MethodNotFound,
    OutboundCancelled,
    OutboundTimeout,
    RemoteError,
)
from acp_fsm.protocol.jsonrpc import CANCEL_REQUEST, Notification, Request
from acp_fsm.schemas.plain import ANY_STRING

V = "2.0"


class FakeDispatcher:
    """Serves `echo`, `slow` (waits for `gate`), `boom` (raises) and the `note` notification."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started: list[tuple[str, Any]] = []
        self.cancelled: list[Any] = []
        self.notes: list[Any] = []
        self.coroutines: list[Coroutine[Any, Any, Any]] = []
        self.refuse_outbound: dict[tuple[str, str], str] = {}
        self.refuse_response: dict[str, str] = {}
        self.outbound_checked: list[tuple[str, str, Any]] = []
        self.templates_checked: list[tuple[str, str, Any]] = []
        self.refuse_templates = False
        self.closed_for: list[str] = []
        self.on_closing: Any = None  # called with the reason, inside `closing`

    def dispatch(self, message: Request | Notification) -> Coroutine[Any, Any, Any] | None:
        if isinstance(message, Notification):
            if message.method != "note":
                raise MethodNotFound(f"Method not found: {message.method}")
            self.notes.append(message.params)
            return None
        handlers = {"echo": self.echo, "slow": self.slow, "boom": self.boom}
        handler = handlers.get(message.method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {message.method}")
        coro = handler(message.params)
        self.coroutines.append(coro)
        return coro

    async def echo(self, params: Any) -> Any:
        self.started.append(("echo", params))
        return {"echo": params}

    async def slow(self, params: Any) -> Any:
        self.started.append(("slow", params))
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled.append(params)
            raise
        return {"slow": params}

    async def boom(self, params: Any) -> Any:
        self.started.append(("boom", params))
        raise ValueError("secret detail from /home/user/.config/key")

    def check_outbound(self, method: str, kind: OutboundKind, payload: Any) -> str | None:
        self.outbound_checked.append((method, kind, payload))
        return self.refuse_outbound.get((method, kind))

    def check_template(self, method: str, kind: OutboundKind, payload: Any) -> bool:
        self.templates_checked.append((method, kind, payload))
        return not self.refuse_templates

    def accept_response(self, method: str, result: Any) -> Any:
        refusal = self.refuse_response.get(method)
        if refusal is not None:
            raise InvalidResult(refusal)
        return result

    def cancel_request(self, request: Request) -> bool:
        return False  # every request here is stopped by cancelling its task

    def closing(self, reason: str) -> None:
        self.closed_for.append(reason)
        if self.on_closing is not None:
            self.on_closing(reason)

    def close_unstarted(self) -> None:
        """Close handler coroutines the connection never ran (so no 'never awaited' warning)."""
        for coro in self.coroutines:
            if inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                coro.close()


class Peer:
    """The client's view: what it sends and what it has read back."""

    def __init__(self, *, max_line: int | None = None, strict_outbound: bool = False) -> None:
        self.written: list[bytes] = []
        self.dispatcher = FakeDispatcher()
        kwargs: dict[str, Any] = {"strict_outbound": strict_outbound}
        if max_line is not None:
            kwargs["max_line"] = max_line
        self.conn = Connection(self.dispatcher, self.written.append, **kwargs)

    def send(self, message: Any) -> None:
        self.conn.feed(encode(message))

    def raw_lines(self) -> list[bytes]:
        lines, self.written[:] = list(self.written), []
        for line in lines:
            assert line.endswith(b"\n")
            assert line.count(b"\n") == 1
        return lines

    def read(self) -> list[Any]:
        """Everything written since the last read, decoded, one item per line."""
        return [json.loads(line) for line in self.raw_lines()]

    async def close(self) -> None:
        await self.conn.drain_tasks(0)
        self.dispatcher.close_unstarted()


async def settle(rounds: int = 10) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


def req(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": V, "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": V, "method": method}
    if params is not None:
        message["params"] = params
    return message


def ok(msg_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": V, "id": msg_id, "result": result}


def err(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": V, "id": msg_id, "error": {"code": code, "message": message}}


def cancel_request(request_id: Any) -> dict[str, Any]:
    return note(CANCEL_REQUEST, {"requestId": request_id})


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    client = Peer()
    yield client
    await client.close()


# ------------------------------------------------------------------ inbound requests


@pytest.mark.parametrize("msg_id", ["req-1", 17, 0, -1, 2**63, ""])
async def test_request_answered_with_same_id(peer: Peer, msg_id: Any) -> None:
    peer.send(req(msg_id, "echo", {"x": [1, 2]}))
    await settle()
    [line] = peer.raw_lines()
    response = json.loads(line)
    assert response == ok(msg_id, {"echo": {"x": [1, 2]}})
    assert type(response["id"]) is type(msg_id)


async def test_request_fed_byte_by_byte(peer: Peer) -> None:
    data = encode(req(3, "echo", {"t": "é"}))
    for i in range(len(data)):
        peer.conn.feed(data[i : i + 1])
    await settle()
    assert peer.read() == [ok(3, {"echo": {"t": "é"}})]


async def test_two_requests_in_one_chunk(peer: Peer) -> None:
    peer.conn.feed(encode(req(1, "echo", [1])) + encode(req(2, "echo", [2])))
    await settle()
    assert sorted(peer.read(), key=lambda r: r["id"]) == [
        ok(1, {"echo": [1]}),
        ok(2, {"echo": [2]}),
    ]


async def test_output_is_compact_single_lines(peer: Peer) -> None:
    peer.send(req(1, "echo", {"a": "b c"}))
    await settle()
    assert peer.raw_lines() == [b'{"jsonrpc":"2.0","id":1,"result":{"echo":{"a":"b c"}}}\n']


async def test_notification_gets_no_answer(peer: Peer) -> None:
    peer.send(note("note", {"n": 1}))
    peer.send(note("unknown/notification", {"n": 2}))  # refused, but never answered
    await settle()
    assert peer.read() == []
    assert peer.dispatcher.notes == [{"n": 1}]


async def test_unknown_method_is_method_not_found(peer: Peer) -> None:
    peer.send(req(9, "nope"))
    await settle()
    assert peer.read() == [err(9, -32601, "Method not found: nope")]


async def test_slow_request_does_not_block_a_later_fast_one(peer: Peer) -> None:
    peer.send(req(1, "slow", {"n": 1}))
    peer.send(req(2, "echo", {"n": 2}))
    await settle()
    assert peer.read() == [ok(2, {"echo": {"n": 2}})]
    assert repr(peer.conn) == "<Connection open inflight=1 pending=0>"
    peer.dispatcher.gate.set()
    await settle()
    assert peer.read() == [ok(1, {"slow": {"n": 1}})]
    assert repr(peer.conn) == "<Connection open inflight=0 pending=0>"


async def test_invalid_request_with_readable_id_is_answered_with_that_id(peer: Peer) -> None:
    peer.send({"jsonrpc": "1.0", "id": 3, "method": "echo"})
    await settle()
    [response] = peer.read()
    assert response["id"] == 3
    assert response["error"]["code"] == -32600
    assert "jsonrpc" in response["error"]["message"]
    assert peer.dispatcher.started == []


@pytest.mark.parametrize("value", [1, "text", None, True])
async def test_non_object_is_invalid_request_with_null_id(peer: Peer, value: Any) -> None:
    peer.send(value)
    await settle()
    [response] = peer.read()
    assert response["id"] is None
    assert response["error"]["code"] == -32600


# ------------------------------------------------------------------ batches


async def test_mixed_batch_is_answered_with_one_array(peer: Peer) -> None:
    batch = [
        req(1, "echo", {"a": 1}),
        note("note", {"b": 2}),
        req("two", "echo", [3]),
        5,
        req(4, "nope"),
    ]
    peer.send(batch)
    await settle()
    [line] = peer.raw_lines()
    answer = json.loads(line)
    assert isinstance(answer, list)
    assert len(answer) == 4  # the notification is not answered
    assert answer[0] == ok(1, {"echo": {"a": 1}})
    assert answer[1] == ok("two", {"echo": [3]})
    assert answer[2]["id"] is None and answer[2]["error"]["code"] == -32600
    assert answer[3] == err(4, -32601, "Method not found: nope")
    assert peer.dispatcher.notes == [{"b": 2}]


async def test_batch_waits_for_its_slowest_member(peer: Peer) -> None:
    peer.send([req(1, "slow"), req(2, "echo")])
    await settle()
    assert peer.read() == []
    peer.dispatcher.gate.set()
    await settle()
    assert peer.read() == [[ok(1, {"slow": None}), ok(2, {"echo": None})]]


async def test_all_notification_batch_gets_nothing(peer: Peer) -> None:
    peer.send([note("note", {"i": 1}), note("note", {"i": 2})])
    await settle()
    assert peer.read() == []
    assert peer.dispatcher.notes == [{"i": 1}, {"i": 2}]


async def test_empty_batch_is_one_invalid_request_object(peer: Peer) -> None:
    peer.conn.feed(b"[]\n")
    await settle()
    [response] = peer.read()
    assert isinstance(response, dict)
    assert response["jsonrpc"] == V
    assert response["id"] is None
    assert response["error"]["code"] == -32600


# ------------------------------------------------------------------ broken input


@pytest.mark.parametrize("line", [b'{"jsonrpc":"2.0",', b"{]", b"hello", b"[1,2"])
async def test_parse_error(peer: Peer, line: bytes) -> None:
    peer.conn.feed(line + b"\n")
    await settle()
    [response] = peer.read()
    assert response["id"] is None
    assert response["error"]["code"] == -32700
    assert response["error"]["message"].startswith("Parse error")


async def test_invalid_utf8_is_parse_error(peer: Peer) -> None:
    peer.conn.feed(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":["\xff"]}\n')
    await settle()
    [response] = peer.read()
    assert response["id"] is None
    assert response["error"]["code"] == -32700
    assert "UTF-8" in response["error"]["message"]
    assert peer.dispatcher.started == []


async def test_blank_lines_are_ignored(peer: Peer) -> None:
    peer.conn.feed(b"\n   \r\n\n")
    await settle()
    assert peer.read() == []


async def test_overlong_line_is_refused_and_the_next_line_served() -> None:
    client = Peer(max_line=64)
    try:
        short = encode(req(1, "echo"))
        assert len(short) - 1 <= 64
        client.conn.feed(b'{"jsonrpc":"2.0","id":99,"method":"echo","params":"' + b"x" * 80)
        client.conn.feed(b"x" * 500)
        client.conn.feed(b'"}\n' + short)
        await settle()
        first, second = client.read()
        assert first["id"] is None
        assert first["error"]["code"] == -32600
        assert "64" in first["error"]["message"]
        assert second == ok(1, {"echo": None})
        assert client.dispatcher.started == [("echo", None)]
    finally:
        await client.close()


async def test_overlong_line_in_one_chunk() -> None:
    client = Peer(max_line=64)
    try:
        client.conn.feed(b"y" * 65 + b"\n" + encode(req(2, "echo")))
        await settle()
        first, second = client.read()
        assert (first["id"], first["error"]["code"]) == (None, -32600)
        assert second == ok(2, {"echo": None})
    finally:
        await client.close()


async def test_line_at_the_limit_is_served() -> None:
    client = Peer(max_line=64)
    try:
        line = encode(req(1, "echo", ["p" * 5])).rstrip(b"\n")
        line = line + b" " * (64 - len(line))
        assert len(line) == 64
        client.conn.feed(line + b"\n")
        await settle()
        assert client.read() == [ok(1, {"echo": ["p" * 5]})]
    finally:
        await client.close()


# ------------------------------------------------------------------ handler failures


async def test_handler_exception_is_internal_error_without_details(peer: Peer) -> None:
    peer.send(req(5, "boom"))
    await settle()
    [line] = peer.raw_lines()
    response = json.loads(line)
    assert response["id"] == 5
    assert response["error"]["code"] == -32603
    assert "data" not in response["error"]
    text = line.decode()
    for leak in ("Traceback", "ValueError", "secret detail", "/home/user", 'File "'):
        assert leak not in text
    # The connection keeps serving.
    peer.send(req(6, "echo"))
    await settle()
    assert peer.read() == [ok(6, {"echo": None})]


# ------------------------------------------------------------------ $/cancel_request


async def test_cancel_request_of_running_request(peer: Peer) -> None:
    peer.send(req(1, "slow", ["a"]))
    peer.send(req(2, "slow", ["b"]))
    await settle()
    assert peer.dispatcher.started == [("slow", ["a"]), ("slow", ["b"])]
    peer.send(cancel_request(1))
    await settle()
    [response] = peer.read()
    assert response["id"] == 1
    assert response["error"]["code"] == -32800
    assert peer.dispatcher.cancelled == [["a"]]
    peer.dispatcher.gate.set()
    await settle()
    assert peer.read() == [ok(2, {"slow": ["b"]})]
    assert repr(peer.conn) == "<Connection open inflight=0 pending=0>"


@pytest.mark.parametrize("request_id", ["s", 0])
async def test_cancel_request_with_string_and_zero_ids(peer: Peer, request_id: Any) -> None:
    peer.send(req(request_id, "slow"))
    await settle()
    peer.send(cancel_request(request_id))
    await settle()
    [response] = peer.read()
    assert response["id"] == request_id
    assert response["error"]["code"] == -32800


@pytest.mark.parametrize(
    "params", [{"requestId": 42}, {"requestId": None}, {"requestId": True}, {}, [1], None]
)
async def test_cancel_request_for_unknown_or_malformed_id_is_ignored(
    peer: Peer, params: Any
) -> None:
    peer.send(req(1, "slow"))
    await settle()
    peer.send(note(CANCEL_REQUEST, params))
    await settle()
    assert peer.read() == []
    assert peer.dispatcher.cancelled == []
    peer.dispatcher.gate.set()
    await settle()
    assert peer.read() == [ok(1, {"slow": None})]


async def test_cancel_request_after_completion_is_ignored(peer: Peer) -> None:
    peer.send(req(1, "echo"))
    await settle()
    assert peer.read() == [ok(1, {"echo": None})]
    peer.send(cancel_request(1))
    await settle()
    assert peer.read() == []


async def test_cancel_request_in_the_same_chunk_still_answers(peer: Peer) -> None:
    # The cancel is processed before the request's task has run at all.
    peer.conn.feed(encode(req(1, "slow")) + encode(cancel_request(1)))
    await settle()
    assert peer.read() == [err(1, -32800, "Request cancelled")]
    assert repr(peer.conn) == "<Connection open inflight=0 pending=0>"
    assert peer.dispatcher.started == []
    # The handler coroutine was closed, not left to warn "never awaited".
    [coro] = peer.dispatcher.coroutines
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


async def test_cancel_request_in_same_chunk_as_batch_keeps_the_batch(peer: Peer) -> None:
    peer.conn.feed(encode([req(1, "slow"), req(2, "echo")]) + encode(cancel_request(1)))
    await settle()
    assert peer.read() == [[err(1, -32800, "Request cancelled"), ok(2, {"echo": None})]]


# ------------------------------------------------------------------ outbound requests

READ = "fs/read_text_file"
READ_PARAMS = {"sessionId": "s", "path": "/tmp/a.txt"}


async def start_request(peer: Peer, **kwargs: Any) -> asyncio.Task[Any]:
    """A task awaiting a request, as a handler would."""

    async def awaiting(request: asyncio.Future[Any]) -> Any:
        return await request

    task = asyncio.create_task(awaiting(peer.conn.request(READ, READ_PARAMS, **kwargs)))
    await settle()
    return task


async def test_outbound_request_answered(peer: Peer) -> None:
    task = await start_request(peer)
    assert peer.read() == [req(1, READ, READ_PARAMS)]
    assert repr(peer.conn) == "<Connection open inflight=0 pending=1>"
    peer.send(ok(1, {"content": "hello"}))
    assert await task == {"content": "hello"}
    assert peer.read() == []
    assert repr(peer.conn) == "<Connection open inflight=0 pending=0>"
    assert peer.dispatcher.outbound_checked == [(READ, "request", READ_PARAMS)]


async def test_outbound_ids_increase(peer: Peer) -> None:
    first = await start_request(peer)
    second = await start_request(peer)
    assert [m["id"] for m in peer.read()] == [1, 2]
    peer.send(ok(2, "two"))
    peer.send(ok(1, "one"))
    assert (await first, await second) == ("one", "two")


async def test_outbound_request_peer_error(peer: Peer) -> None:
    task = await start_request(peer)
    peer.read()
    peer.send(
        {"jsonrpc": V, "id": 1, "error": {"code": -32002, "message": "no file", "data": {"p": 1}}}
    )
    with pytest.raises(RemoteError) as caught:
        await task
    assert (caught.value.code, caught.value.message) == (-32002, "no file")
    assert caught.value.data == {"p": 1}
    assert peer.read() == []  # an answered request is not cancelled


@pytest.mark.parametrize(
    ("data", "quoted"),
    [
        (None, "fs/read_text_file failed with error -32603: Internal error"),
        ("disk full", "fs/read_text_file failed with error -32603: Internal error (disk full)"),
        (
            {"details": "Permission denied"},
            "fs/read_text_file failed with error -32603: Internal error (Permission denied)",
        ),
        ({"path": "/a", "errno": 13}, 'error -32603: Internal error ({"path":"/a","errno":13})'),
        ("x" * 600, "(" + "x" * 500 + "…)"),
    ],
)
def test_a_peer_error_quotes_its_message_and_data(data: Any, quoted: str) -> None:
    error = RemoteError(-32603, "Internal error", data, method=READ)
    assert quoted in str(error)
    assert "peer error" not in str(error)


async def test_outbound_invalid_result_is_our_finding_not_a_peer_error(peer: Peer) -> None:
    peer.dispatcher.refuse_response[READ] = "content: missing"
    task = await start_request(peer)
    peer.read()
    peer.send(ok(1, {"wrong": True}))
    with pytest.raises(InvalidResult) as caught:
        await task
    assert not isinstance(caught.value, RemoteError)
    assert "content: missing" in str(caught.value)
    assert peer.read() == []


async def test_outbound_malformed_response_fails_the_request(peer: Peer) -> None:
    task = await start_request(peer)
    peer.read()
    peer.send({"jsonrpc": V, "id": 1, "error": {"code": "bad"}})
    with pytest.raises(InvalidResult, match="not a valid JSON-RPC response"):
        await task
    await settle()
    [complaint] = peer.read()
    assert complaint["id"] is None
    assert complaint["error"]["code"] == -32600


async def test_outbound_timeout_sends_cancel_request(peer: Peer) -> None:
    task = await start_request(peer, timeout_ms=20)
    assert peer.read() == [req(1, READ, READ_PARAMS)]
    with pytest.raises(OutboundTimeout, match="20 ms"):
        await task
    assert peer.read() == [cancel_request(1)]
    assert repr(peer.conn) == "<Connection open inflight=0 pending=0>"


async def test_late_response_after_timeout_is_dropped(peer: Peer) -> None:
    task = await start_request(peer, timeout_ms=10)
    with pytest.raises(OutboundTimeout):
        await task
    peer.read()
    peer.send(ok(1, {"content": "too late"}))
    peer.send({"jsonrpc": V, "id": 1, "error": {"code": 1, "message": "also late"}})
    await settle()
    assert peer.read() == []
    peer.send(req(7, "echo"))
    await settle()
    assert peer.read() == [ok(7, {"echo": None})]
    second = await start_request(peer)
    assert peer.read() == [req(2, READ, READ_PARAMS)]
    peer.send(ok(2, "fine"))
    assert await second == "fine"


async def test_outbound_token_cancel_sends_cancel_request(peer: Peer) -> None:
    token = CancellationToken("turn")
    task = await start_request(peer, token=token)
    assert peer.read() == [req(1, READ, READ_PARAMS)]
    token.cancel("user")
    with pytest.raises(OutboundCancelled):
        await task
    assert peer.read() == [cancel_request(1)]


async def test_outbound_answer_before_token_cancel(peer: Peer) -> None:
    token = CancellationToken()
    task = await start_request(peer, token=token)
    peer.send(ok(1, "r"))
    assert await task == "r"
    token.cancel()  # the request's callback was removed
    await settle()
    assert peer.read() == [req(1, READ, READ_PARAMS)]


async def test_outbound_with_fired_token_is_outbound_cancelled(peer: Peer) -> None:
    token = CancellationToken()
    token.cancel()
    with pytest.raises(OutboundCancelled):
        await peer.conn.request(READ, READ_PARAMS, token=token)
    assert peer.read() == []  # nothing is sent for a call that was already cancelled
    assert repr(peer.conn) == "<Connection open inflight=0 pending=0>"


async def test_caller_task_cancelled_sends_cancel_request(peer: Peer) -> None:
    task = await start_request(peer)
    peer.read()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert peer.read() == [cancel_request(1)]


async def test_outbound_request_with_zero_timeout_waits(peer: Peer) -> None:
    task = await start_request(peer, timeout_ms=0)
    await asyncio.sleep(0.03)
    assert not task.done()
    peer.send(ok(1, "eventually"))
    assert await task == "eventually"


async def test_response_to_unknown_id_is_dropped(peer: Peer) -> None:
    peer.send(ok(12345, "who?"))
    peer.send(ok("str-id", "who?"))
    peer.send({"jsonrpc": V, "id": None, "error": {"code": -32700, "message": "Parse error"}})
    await settle()
    assert peer.read() == []


# ------------------------------------------------------------------ outbound checks


async def test_refused_outbound_request_writes_nothing(peer: Peer) -> None:
    peer.dispatcher.refuse_outbound[(READ, "request")] = "path: expected string"
    with pytest.raises(InternalError):
        await peer.conn.request(READ, READ_PARAMS)
    assert peer.read() == []
    assert peer.conn.exit_code == 0
    assert not peer.conn.closed.done()


async def test_refused_notification_writes_nothing(peer: Peer) -> None:
    peer.dispatcher.refuse_outbound[("session/update", "notification")] = "bad update"
    assert peer.conn.notify("session/update", {"x": 1}) is False
    assert peer.read() == []
    assert peer.conn.notify("session/other", {"x": 1}) is True
    assert peer.read() == [note("session/other", {"x": 1})]


async def test_refused_result_is_internal_error(peer: Peer) -> None:
    peer.dispatcher.refuse_outbound[("echo", "result")] = "echo: unexpected"
    peer.send(req(1, "echo"))
    await settle()
    [response] = peer.read()
    assert response["id"] == 1
    assert response["error"]["code"] == -32603
    assert "unexpected" not in response["error"]["message"]


async def test_strict_outbound_violation_closes_with_exit_code_70() -> None:
    client = Peer(strict_outbound=True)
    try:
        client.dispatcher.refuse_outbound[("session/update", "notification")] = "bad"
        assert client.conn.notify("session/update", {}) is False
        assert client.read() == []
        assert client.conn.exit_code == 70
        assert client.conn.closed.done()
        assert "strict" in client.conn.closed.result()
        assert repr(client.conn) == "<Connection closed inflight=0 pending=0>"
    finally:
        await client.close()


async def test_strict_outbound_request_violation() -> None:
    client = Peer(strict_outbound=True)
    try:
        pending = client.conn.request("terminal/create", {"c": 1})
        await settle()
        client.read()
        client.dispatcher.refuse_outbound[(READ, "request")] = "bad"
        with pytest.raises(InternalError):
            await client.conn.request(READ, READ_PARAMS)
        assert client.read() == []
        assert client.conn.exit_code == 70
        assert client.conn.closed.done()
        with pytest.raises(ConnectionClosed):
            await pending
    finally:
        await client.close()


# ------------------------------------------------------------------ notifiers

TEXTS = [
    "tok ",
    "",
    'a "quote" and a \\ backslash',
    "a line\nbreak\tand\x00",
    "é, 😀, \u2028",
    "x" * 5000,
]


def chunk_params(text: str) -> dict[str, Any]:
    return {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
        },
    }


async def test_a_notifier_writes_what_notify_writes(peer: Peer) -> None:
    """The template is checked once; each text costs no check and gives the same bytes."""
    send = peer.conn.notifier("session/update", chunk_params)
    assert [send(text) for text in TEXTS] == [True] * len(TEXTS)
    sent = peer.raw_lines()
    assert peer.dispatcher.outbound_checked == []
    [(method, kind, template)] = peer.dispatcher.templates_checked
    assert (method, kind) == ("session/update", "notification")
    assert template["update"]["content"]["text"] is ANY_STRING
    for text in TEXTS:
        peer.conn.notify("session/update", chunk_params(text))
    assert sent == peer.raw_lines()


async def test_a_notifier_sends_what_orjson_refuses_by_notify(peer: Peer) -> None:
    send = peer.conn.notifier("session/update", chunk_params)
    assert send("a lone \ud800 surrogate")
    [line] = peer.raw_lines()
    shown = chunk_params("a lone \\xed\\xa0\\x80 surrogate")  # valid UTF-8 (`utf8_text`)
    assert orjson.loads(line) == note("session/update", shown)
    assert peer.dispatcher.outbound_checked == [
        ("session/update", "notification", chunk_params("a lone \ud800 surrogate"))
    ]


async def test_a_notifier_whose_template_is_not_sure_checks_each(peer: Peer) -> None:
    peer.dispatcher.refuse_templates = True
    send = peer.conn.notifier("session/update", chunk_params)
    assert send("one")
    peer.dispatcher.refuse_outbound[("session/update", "notification")] = "bad update"
    assert not send("two")
    assert peer.read() == [note("session/update", chunk_params("one"))]
    assert [payload for _, _, payload in peer.dispatcher.outbound_checked] == [
        chunk_params("one"),
        chunk_params("two"),
    ]


async def test_a_notifier_scrubs_each_line() -> None:
    written: list[bytes] = []
    dispatcher = FakeDispatcher()
    conn = Connection(
        dispatcher, written.append, scrub=lambda line: line.replace(b"sk-secret", b"[redacted]")
    )
    send = conn.notifier("session/update", chunk_params)
    assert send("the key is sk-secret")
    assert [json.loads(line) for line in written] == [
        note("session/update", chunk_params("the key is [redacted]"))
    ]


# ------------------------------------------------------------------ end of input


async def test_feed_eof_closes_and_fails_pending_requests(peer: Peer) -> None:
    first = await start_request(peer)
    second = await start_request(peer, timeout_ms=10_000)
    peer.read()
    peer.conn.feed_eof()
    assert await asyncio.wait_for(peer.conn.closed, 1) == "input closed"
    for task in (first, second):
        with pytest.raises(ConnectionClosed, match=READ):
            await task
    await settle()
    assert peer.read() == []  # nothing to cancel on a closed connection
    assert repr(peer.conn) == "<Connection closed inflight=0 pending=0>"


async def test_the_dispatcher_hears_of_the_close_before_pending_requests_fail(peer: Peer) -> None:
    """Work waiting on the peer must see its cancellation (fired in `closing`) before the
    request it waits on fails for the closed connection."""
    task = await start_request(peer)
    seen: list[bool] = []
    peer.dispatcher.on_closing = lambda _reason: seen.append(task.done())
    peer.conn.terminate("SIGTERM")
    assert peer.dispatcher.closed_for == ["terminated (SIGTERM)"]
    assert seen == [False]
    with pytest.raises(ConnectionClosed):
        await task
    peer.conn.feed_eof()  # a second close changes nothing
    assert peer.dispatcher.closed_for == ["terminated (SIGTERM)"]


async def test_request_after_close_is_refused(peer: Peer) -> None:
    peer.conn.feed_eof()
    with pytest.raises(ConnectionClosed):
        await peer.conn.request(READ, READ_PARAMS)
    assert peer.read() == []


async def test_final_unterminated_line_is_processed_at_eof(peer: Peer) -> None:
    peer.conn.feed(encode(req(1, "echo", ["a"])) + encode(req(2, "echo", ["b"])).rstrip(b"\n"))
    await settle()
    assert peer.read() == [ok(1, {"echo": ["a"]})]
    peer.conn.feed_eof()
    await settle()
    assert peer.read() == [ok(2, {"echo": ["b"]})]
    assert peer.conn.closed.done()


async def test_running_request_still_answered_after_eof(peer: Peer) -> None:
    peer.send(req(1, "slow"))
    await settle()
    peer.conn.feed_eof()
    peer.dispatcher.gate.set()
    await settle()
    assert peer.read() == [ok(1, {"slow": None})]


async def test_feed_eof_is_idempotent(peer: Peer) -> None:
    peer.conn.feed(encode(req(1, "echo")).rstrip(b"\n"))
    peer.conn.feed_eof()
    peer.conn.feed_eof()
    await settle()
    assert peer.read() == [ok(1, {"echo": None})]


async def test_output_lost_closes(peer: Peer) -> None:
    task = await start_request(peer)
    peer.conn.output_lost()
    assert peer.conn.closed.result() == "output closed"
    with pytest.raises(ConnectionClosed):
        await task


class _BrokenDispatcher(FakeDispatcher):
    """A dispatcher whose synchronous part has a bug (raises a non-RPC exception)."""

    def dispatch(self, message: Request | Notification) -> Coroutine[Any, Any, Any] | None:
        if message.method in ("crash", "crash_note"):
            raise KeyError("a bug")
        return super().dispatch(message)


async def test_a_bug_in_dispatch_answers_32603_and_keeps_reading() -> None:
    written: list[bytes] = []
    conn = Connection(_BrokenDispatcher(), written.append)
    conn.feed(
        b'{"jsonrpc":"2.0","method":"crash_note"}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"crash"}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"echo","params":{"x":1}}\n'
    )
    for _ in range(5):
        await asyncio.sleep(0)
    replies = {m["id"]: m for m in (json.loads(line) for line in written)}
    assert replies[1]["error"]["code"] == -32603
    assert "Traceback" not in replies[1]["error"]["message"]
    assert "result" in replies[2]  # the reader survived both
