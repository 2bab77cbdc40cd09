"""The transport contract through the real `acp-fsm` process over pipes (issue: protocol core)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.harness import AgentProcess

INIT = {"protocolVersion": 1, "clientCapabilities": {}}


@pytest.mark.parametrize("msg_id", [0, 7, "abc", "", 2**64 - 1, -1])
async def test_response_echoes_request_id_exactly(agent: AgentProcess, msg_id: object) -> None:
    response = await agent.request("initialize", INIT, msg_id=msg_id)
    assert response["id"] == msg_id
    assert type(response["id"]) is type(msg_id)
    assert response["result"]["protocolVersion"] == 1


async def test_output_lines_are_compact_json(ready: AgentProcess) -> None:
    await ready.request("_acp_fsm/sleep", {"ms": 0})
    for line in ready.raw_lines:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert (
            line.rstrip(b"\n")
            == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False).encode()
        )


async def test_notifications_are_never_answered(agent: AgentProcess) -> None:
    await agent.notify("session/cancel", {"sessionId": "s"})  # before initialize
    await agent.notify("no/such_method")
    await agent.notify("initialize", INIT)  # a request method sent as a notification
    await agent.initialize()
    await agent.notify("session/cancel", {"sessionId": "s"})
    await agent.notify("_unknown/extension", {"x": 1})
    await agent.notify("session/cancel", {"sessionId": 5})  # invalid params, still silent
    await agent.notify("session/update", {"sessionId": "s", "update": {}})  # wrong direction
    response = await agent.request("_acp_fsm/sleep", {"ms": 0})
    assert "result" in response
    assert len(agent.raw_lines) == 2, agent.raw_lines  # the two responses, nothing else


async def test_malformed_notification_is_an_invalid_request(ready: AgentProcess) -> None:
    # Not a notification at all (JSON-RPC 2.0 §7: {"method": 1, "params": "bar"} -> -32600).
    await ready.send({"jsonrpc": "2.0", "method": 1, "params": "bar"})
    error = await ready.next_other()
    assert error["id"] is None and error["error"]["code"] == -32600


async def test_mixed_batch_gets_one_array(ready: AgentProcess) -> None:
    await ready.send(
        [
            {"jsonrpc": "2.0", "id": "a", "method": "_acp_fsm/sleep", "params": {"ms": 50}},
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}},
            {"jsonrpc": "2.0", "id": "b", "method": "no/such"},
            42,
            {"jsonrpc": "2.0", "id": "c", "method": "_acp_fsm/sleep", "params": {"ms": 0}},
        ]
    )
    batch = await ready.next_other()
    assert isinstance(batch, list)
    by_id = {item["id"]: item for item in batch}
    assert len(batch) == 4
    assert by_id["a"]["result"]["sleptMs"] >= 0
    assert by_id["b"]["error"]["code"] == -32601
    assert by_id[None]["error"]["code"] == -32600
    assert "result" in by_id["c"]


async def test_batch_of_notifications_writes_nothing(ready: AgentProcess) -> None:
    lines_before = len(ready.raw_lines)
    await ready.send(
        [
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}},
            {"jsonrpc": "2.0", "method": "_x/y"},
        ]
    )
    await ready.request("_acp_fsm/sleep", {"ms": 0})
    assert len(ready.raw_lines) == lines_before + 1


async def test_empty_batch_is_one_invalid_request(agent: AgentProcess) -> None:
    await agent.send_raw(b"[]\n")
    error = await agent.next_other()
    assert error == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": error["error"]["message"]},
    }
    assert "empty batch" in error["error"]["message"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,',
        b"not json",
        b'{"a":NaN}',
        b'{"jsonrpc":"2.0","method":"x"} trailing',
    ],
)
async def test_parse_error(agent: AgentProcess, line: bytes) -> None:
    await agent.send_raw(line + b"\n")
    error = await agent.next_other()
    assert error["id"] is None and error["error"]["code"] == -32700
    await agent.initialize()  # still serving


async def test_invalid_utf8_is_answered_not_fatal(agent: AgentProcess) -> None:
    await agent.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n')
    error = await agent.next_other()
    assert error["error"]["code"] == -32700 and "UTF-8" in error["error"]["message"]
    await agent.initialize()


@pytest.mark.parametrize(
    ("message", "expected_id", "needle"),
    [
        ({"jsonrpc": "2.0", "id": 1}, 1, "method"),
        ({"jsonrpc": "2.0", "id": 2, "method": 5}, 2, "method"),
        ({"jsonrpc": "1.0", "id": 3, "method": "initialize"}, 3, "jsonrpc"),
        ({"id": 4, "method": "initialize"}, 4, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": True, "method": "initialize"}, None, "id"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "initialize"}, None, "id"),
        ({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": "x"}, 5, "params"),
        (17, None, "object"),
        ("initialize", None, "object"),
        (None, None, "object"),
        (True, None, "object"),
    ],
)
async def test_invalid_request_shapes(
    agent: AgentProcess, message: object, expected_id: object, needle: str
) -> None:
    await agent.send(message)
    error = await agent.next_other()
    assert error["jsonrpc"] == "2.0"
    assert error["id"] == expected_id
    assert error["error"]["code"] == -32600
    assert needle in error["error"]["message"]


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"protocolVersion": "one"}, "protocolVersion"),
        ({}, "protocolVersion"),
        (
            {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": "yes"}}},
            "clientCapabilities.fs.readTextFile",
        ),
        (None, "params"),
        ([1], "params"),
    ],
)
async def test_invalid_params_name_the_field(
    agent: AgentProcess, params: object, needle: str
) -> None:
    response = await agent.request("initialize", params)
    assert response["error"]["code"] == -32602
    assert needle in response["error"]["message"]
    await agent.initialize()  # a failed initialize does not initialize


async def test_requests_run_concurrently(ready: AgentProcess) -> None:
    slow = ready.expect("slow", "_acp_fsm/sleep")
    await ready.send(
        {"jsonrpc": "2.0", "id": "slow", "method": "_acp_fsm/sleep", "params": {"ms": 1500}}
    )
    fast = await ready.request("_acp_fsm/sleep", {"ms": 0}, msg_id="fast")
    assert "result" in fast and not slow.done()
    assert (await slow)["result"]["sleptMs"] >= 1400
    order = [m.get("id") for m in ready.messages]
    assert order.index("fast") < order.index("slow")


async def test_cancel_request_from_client_answers_32800(ready: AgentProcess) -> None:
    pending = ready.expect(99, "_acp_fsm/sleep")
    await ready.send(
        {"jsonrpc": "2.0", "id": 99, "method": "_acp_fsm/sleep", "params": {"ms": 60000}}
    )
    # read in order: the request is running when the cancel is read
    await ready.notify("$/cancel_request", {"requestId": 99})
    response = await asyncio.wait_for(pending, 5)
    assert response["error"]["code"] == -32800
    await ready.notify("$/cancel_request", {"requestId": 12345})  # unknown: ignored
    assert "result" in await ready.request("_acp_fsm/sleep", {"ms": 0})


async def test_twenty_megabyte_line_is_accepted(agent: AgentProcess) -> None:
    padding = "x" * (20 * 1024 * 1024)
    response = await agent.request("initialize", {**INIT, "_meta": {"padding": padding}}, wait_s=60)
    assert response["result"]["protocolVersion"] == 1
    assert "result" in await agent.request("_acp_fsm/sleep", {"ms": 0})


async def test_line_over_the_limit_is_refused_and_skipped(ready: AgentProcess) -> None:
    limit = 64 * 1024 * 1024
    prefix = b'{"jsonrpc":"2.0","id":"big","method":"_acp_fsm/sleep","params":{"ms":0,"p":"'
    line = prefix + b"y" * (limit + 1024 - len(prefix)) + b'"}}\n'
    follow = b'{"jsonrpc":"2.0","id":"after","method":"_acp_fsm/sleep","params":{"ms":0}}\n'
    after = ready.expect("after", "_acp_fsm/sleep")
    await ready.send_raw(line + follow)
    error = await ready.next_other(timeout=60)
    assert error["id"] is None and error["error"]["code"] == -32600
    assert "exceeds" in error["error"]["message"]
    assert "result" in await asyncio.wait_for(after, 60)


async def test_unterminated_last_line_is_served_before_exit(agent: AgentProcess) -> None:
    pending = agent.expect(1, "initialize")
    await agent.send_raw(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}).encode()
    )
    code = await agent.close()
    assert code == 0
    assert (await asyncio.wait_for(pending, 1))["result"]["protocolVersion"] == 1
