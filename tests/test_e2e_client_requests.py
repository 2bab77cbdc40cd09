"""Agent → client requests through the real process: answered, error-answered, timed out,
cancelled by token, late answers, and inbound validation of the client's result."""

from __future__ import annotations

import asyncio

from acp_fsm.devkit.editor import Message
from tests.harness import AgentProcess, agent_env

READ = {"method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/tmp/a.txt"}}


async def start_call(agent: AgentProcess, msg_id: str, **extra: object) -> asyncio.Future[Message]:
    future = agent.expect(msg_id, "_acp_fsm/call_client")
    await agent.send(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "_acp_fsm/call_client",
            "params": {**READ, **extra},
        }
    )
    return future


async def test_answered(ready: AgentProcess) -> None:
    call = await start_call(ready, "c1")
    request = await ready.next_request()
    assert request["method"] == "fs/read_text_file"
    assert request["params"] == READ["params"]
    assert isinstance(request["id"], int)
    await ready.respond(request, {"content": "hello"})
    result = (await call)["result"]
    assert result["outcome"] == "result" and result["result"] == {"content": "hello"}


async def test_error_answer_surfaces_code_and_message(ready: AgentProcess) -> None:
    call = await start_call(ready, "c2")
    request = await ready.next_request()
    await ready.send(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32002, "message": "no such file"},
        }
    )
    result = (await call)["result"]
    assert result["outcome"] == "error"
    assert result["error"] == {"code": -32002, "message": "no such file"}


async def test_invalid_result_from_client_is_an_error(ready: AgentProcess) -> None:
    call = await start_call(ready, "c3")
    request = await ready.next_request()
    await ready.respond(request, {"contents": 5})
    result = (await call)["result"]
    assert result["outcome"] == "invalid"  # our finding: the client reported no error
    assert "content" in result["reason"] and "peer error" not in result["reason"]


async def test_a_null_result_is_an_empty_one_where_nothing_is_required(ready: AgentProcess) -> None:
    """Real editors answer `null` for results with no required member (fs/write_text_file,
    terminal/release, ...): that is `{}`. Where the result carries data, `null` is refused."""
    for method, params, outcome in [
        ("fs/write_text_file", {"sessionId": "s", "path": "/tmp/x", "content": ""}, "result"),
        ("terminal/release", {"sessionId": "s", "terminalId": "t"}, "result"),
        ("fs/read_text_file", {"sessionId": "s", "path": "/tmp/x"}, "invalid"),
    ]:
        call = asyncio.ensure_future(
            ready.request("_acp_fsm/call_client", {"method": method, "params": params})
        )
        request = await ready.next_request()
        await ready.respond(request, None)
        result = (await call)["result"]
        assert result["outcome"] == outcome, (method, result)
        if outcome == "result":
            assert result["result"] == {}


async def test_timeout_sends_cancel_request_and_drops_late_answer(ready: AgentProcess) -> None:
    call = await start_call(ready, "c4", timeoutMs=200)
    request = await ready.next_request()
    result = (await call)["result"]
    assert result["outcome"] == "timeout" and result["elapsedMs"] >= 190
    cancel = await ready.next_notification()
    assert cancel == {
        "jsonrpc": "2.0",
        "method": "$/cancel_request",
        "params": {"requestId": request["id"]},
    }
    await ready.respond(request, {"content": "too late"})  # dropped, not fatal
    assert "result" in await ready.request("_acp_fsm/sleep", {"ms": 0})
    dropped = [e for e in ready.log_events() if e["event"] == "response_dropped"]
    assert dropped and dropped[0]["id"] == request["id"]


async def test_token_cancel_releases_the_wait(ready: AgentProcess) -> None:
    call = await start_call(ready, "c5", cancelAfterMs=100, timeoutMs=0)
    request = await ready.next_request()
    result = (await call)["result"]
    assert result["outcome"] == "cancelled"
    cancel = await ready.next_notification()
    assert cancel["method"] == "$/cancel_request"
    assert cancel["params"] == {"requestId": request["id"]}


async def test_default_timeout_comes_from_the_environment() -> None:
    agent = await AgentProcess.start(agent_env(ACP_CLIENT_RPC_TIMEOUT_MS="150"))
    try:
        await agent.initialize()
        call = await start_call(agent, "c6")
        await agent.next_request()
        result = (await call)["result"]
        assert result["outcome"] == "timeout"
        assert 140 <= result["elapsedMs"] < 5000
        assert await agent.close() == 0
    finally:
        await agent.kill()


async def test_ids_are_unique_and_concurrent_calls_resolve_independently(
    ready: AgentProcess,
) -> None:
    calls = [await start_call(ready, f"p{i}") for i in range(3)]
    requests = [await ready.next_request() for _ in range(3)]
    assert len({r["id"] for r in requests}) == 3
    for i, request in reversed(list(enumerate(requests))):
        await ready.respond(request, {"content": f"body {i}"})
    contents = [(await call)["result"]["result"]["content"] for call in calls]
    assert sorted(contents) == ["body 0", "body 1", "body 2"]


async def test_pending_call_fails_when_input_closes(ready: AgentProcess) -> None:
    call = await start_call(ready, "c7", timeoutMs=0)
    await ready.next_request()
    assert await ready.close() == 0
    result = (await asyncio.wait_for(call, 2))["result"]
    assert result["outcome"] == "closed"
