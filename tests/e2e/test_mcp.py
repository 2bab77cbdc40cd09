"""MCP servers the editor passes, through the real agent and real MCP servers
(`tests/mcp/tools_server.py`, written with the SDK): the model sees their tools, calls them
with permission, a cancel stops a slow call, a failed or lost server is reported and the
session goes on, and no server outlives its session or the agent."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    Agent,
    Launcher,
    TurnResult,
    args,
    for_call,
    offered_tools,
    statuses,
    tool_results,
)
from tests.harness import live_processes, wait_until
from tests.timing import INTERRUPTED_S

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "tools_server.py"
RAW_SERVER = SERVER.with_name("raw_server.py")
pytestmark = pytest.mark.slow  # servers of their own, besides the agent


def stdio_server(name: str = "tools", *, marks: Path | None = None) -> dict[str, Any]:
    """The test server over stdio; its command line carries a unique marker (`argv[-1]`)."""
    env = [{"name": "TOOLS_SERVER_MARKS", "value": str(marks)}] if marks else []
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(SERVER), "stdio", f"marker-{uuid.uuid4().hex}"],
        "env": env,
    }


async def open_session(agent: Agent, project: Path, *servers: dict[str, Any]) -> str:
    result = await agent.result("session/new", {"cwd": str(project), "mcpServers": list(servers)})
    return str(result["sessionId"])


def offered(server: ScriptedProvider, index: int = 0) -> dict[str, dict[str, Any]]:
    """The tools of a model request, by name: their parameters."""
    return offered_tools(server.requests[index])


def text_block(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


async def one_call(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    tool: str,
    arguments: str = "{}",
    *,
    provider: str = "openai",
    servers: tuple[dict[str, Any], ...] = (),
) -> tuple[Agent, TurnResult]:
    """A session with the test server (or `servers`) whose model calls `tool` once as "c1"
    (the user allows it), then says "done"."""
    agent = await launch.start(provider)
    agent.editor.permissions.append("allow_once")
    session = await open_session(agent, project, *(servers or (stdio_server(),)))
    server.script(Reply(calls=(Call("c1", tool, arguments),)), Reply(text="done"))
    return agent, await agent.prompt(session, f"use {tool}")


async def cancel_once(agent: Agent, session: str, prompt: str, status: str) -> TurnResult:
    """Prompt, cancel once call "c1" has reached `status`; the turn, answered at once
    (`INTERRUPTED_S`: the call itself would take 30 s, or for ever)."""
    pending = await agent.start_prompt(session, prompt)
    await wait_until(
        lambda: any(u.get("status") == status for u in for_call(agent.updates(session), "c1")),
        f"the call to be {status}",
    )
    await agent.cancel(session)
    return await pending.result(timeout=INTERRUPTED_S)


async def test_the_model_calls_an_mcp_tool_with_the_users_permission(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, turn = await one_call(launch, server, project, "mcp__tools__add", args(a=2, b=3))

    assert turn.stop_reason == "end_turn"
    tools = offered(server)
    assert {"read_file", "mcp__tools__add", "mcp__tools__echo", "mcp__tools__slow"} <= set(tools)
    assert tools["mcp__tools__add"]["properties"].keys() == {"a", "b"}
    asked = agent.editor.of_method("session/request_permission")
    assert [a["params"]["toolCall"]["title"] for a in asked] == ["add (tools)"]
    assert [a["params"]["toolCall"]["name"] for a in asked] == ["mcp__tools__add"]
    call = for_call(turn.updates, "c1")
    assert call[0]["kind"] == "other" and call[0]["rawInput"] == {"a": 2, "b": 3}
    assert call[0]["name"] == "mcp__tools__add"  # as the model sees it
    assert statuses(call) == ["pending", "in_progress", "completed"]
    assert call[-1]["content"] == [text_block("5")]
    assert tool_results(server.requests[-1])["c1"] == ("5", None)


async def test_a_read_only_tool_runs_without_asking(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, turn = await one_call(launch, server, project, "mcp__tools__echo", args(text="hi"))

    assert agent.editor.of_method("session/request_permission") == []
    call = for_call(turn.updates, "c1")
    assert call[0]["kind"] == "read" and call[0]["title"] == "Echo back (tools)"
    assert call[-1]["status"] == "completed"
    assert tool_results(server.requests[-1])["c1"] == ("hi", None)


async def test_an_error_result_fails_the_call_and_the_model_is_told(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    _, turn = await one_call(
        launch, server, project, "mcp__tools__fail", args(reason="x"), provider="anthropic"
    )

    assert statuses(for_call(turn.updates, "c1"))[-1] == "failed"
    text, is_error = tool_results(server.requests[-1])["c1"]
    assert is_error is True and "fail" in text


async def test_an_image_result_is_shown_and_described_to_the_model(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    _, turn = await one_call(launch, server, project, "mcp__tools__image")

    shown = for_call(turn.updates, "c1")[-1]["content"][0]["content"]
    assert shown["type"] == "image" and shown["mimeType"] == "image/png" and shown["data"]
    text, _ = tool_results(server.requests[-1])["c1"]
    assert text.startswith("[image image/png")


async def test_a_server_that_cannot_start_is_reported_once_and_the_session_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    missing = {"name": "gone", "command": str(project / "no-such-server"), "args": [], "env": []}
    session = await open_session(agent, project, missing, stdio_server())
    server.script(Reply(text="first"), Reply(text="second"))

    first = await agent.prompt(session, "hello")
    second = await agent.prompt(session, "again")

    notice = first.updates[0]["content"]["text"]
    assert notice.startswith("MCP server 'gone' could not be started")
    assert "no-such-server" in notice
    assert [u["content"]["text"] for u in second.updates] == ["second"]  # told once
    assert not any(name.startswith("mcp__gone__") for name in offered(server))
    assert "mcp__tools__add" in offered(server)


async def test_a_server_that_never_answers_is_given_up_after_the_startup_timeout(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_MCP_STARTUP_TIMEOUT_MS="400")
    marker = f"silent-{uuid.uuid4().hex}"
    silent = {
        "name": "silent",
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(60)", marker],
        "env": [],
    }
    session = await open_session(agent, project, silent)
    server.script(Reply(text="ok"))

    turn = await agent.prompt(session, "hello")

    assert "did not start within 0.4 s" in turn.updates[0]["content"]["text"]
    await wait_until(lambda: live_processes(marker) == [], "the server to be stopped")


async def test_a_cancel_during_a_slow_call_answers_at_once_and_tells_the_server(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    agent = await launch.start("openai")
    agent.editor.permissions.append("allow_once")
    session = await open_session(agent, project, stdio_server(marks=marks))
    server.script(
        Reply(calls=(Call("c1", "mcp__tools__slow", args(seconds=30)),)), Reply(text="after")
    )

    turn = await cancel_once(agent, session, "slow", "in_progress")

    assert turn.stop_reason == "cancelled"
    assert statuses(for_call(turn.updates, "c1"))[-1] == "failed"
    await wait_until(
        lambda: marks.exists() and "slow cancelled" in marks.read_text(),
        "the server to see notifications/cancelled",
    )
    await agent.prompt(session, "go on")  # the conversation stays valid for the provider
    assert "c1" in tool_results(server.requests[-1])


async def test_a_server_that_dies_loses_its_tools_and_the_session_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    _, turn = await one_call(launch, server, project, "mcp__tools__crash")

    call = for_call(turn.updates, "c1")
    assert call[-1]["status"] == "failed"
    text, _ = tool_results(server.requests[-1])["c1"]
    assert "MCP server 'tools'" in text and "crashing now" in text
    assert not any(name.startswith("mcp__tools__") for name in offered(server, -1))
    notices = [
        u["content"]["text"] for u in turn.updates if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert any("no longer available" in n for n in notices)


async def test_servers_stop_with_their_session_and_with_the_agent(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    closed, kept = stdio_server("a"), stdio_server("b")
    first = await open_session(agent, project, closed)
    await open_session(agent, project, kept)
    for entry in (closed, kept):
        assert len(live_processes(entry["args"][-1])) == 1

    await agent.result("session/close", {"sessionId": first})
    assert live_processes(closed["args"][-1]) == []
    assert len(live_processes(kept["args"][-1])) == 1

    await launch.close(agent)
    await wait_until(lambda: live_processes(kept["args"][-1]) == [], "the server to stop")


@pytest.fixture(params=["http", "sse"])
async def remote_server(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, str]]:
    """The test server over streamable HTTP, or the older SSE transport, on loopback: the
    transport and its URL."""
    transport = request.param
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SERVER),
        transport,
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )

    def listening() -> bool:
        with socket.socket() as client:
            return client.connect_ex(("127.0.0.1", port)) == 0

    try:
        await wait_until(listening, "the MCP server to listen", timeout=15)
        yield transport, f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"
    finally:
        process.terminate()
        await process.wait()


async def test_a_remote_server_is_used_like_a_stdio_one(
    launch: Launcher, server: ScriptedProvider, project: Path, remote_server: tuple[str, str]
) -> None:
    transport, url = remote_server
    web = {
        "type": transport,
        "name": "web",
        "url": url,
        "headers": [{"name": "X-Test", "value": "1"}],
    }
    _, turn = await one_call(
        launch, server, project, "mcp__web__add", args(a=20, b=22), servers=(stdio_server(), web)
    )  # and a stdio one beside it

    assert {"mcp__web__add", "mcp__tools__add"} <= set(offered(server))

    assert for_call(turn.updates, "c1")[-1]["content"] == [text_block("42")]
    assert tool_results(server.requests[-1])["c1"] == ("42", None)


def stubborn_server() -> dict[str, Any]:
    """A server that ignores SIGTERM and outlives its stdin: only a kill stops it."""
    entry = stdio_server()
    entry["env"].append({"name": "TOOLS_SERVER_STUBBORN", "value": "1"})
    return entry


async def test_a_stubborn_server_is_killed_when_its_session_closes(
    launch: Launcher, project: Path
) -> None:
    agent = await launch.start("openai")
    entry = stubborn_server()
    session = await open_session(agent, project, entry)
    assert len(live_processes(entry["args"][-1])) == 1

    await agent.result("session/close", {"sessionId": session})

    assert live_processes(entry["args"][-1]) == []


async def test_a_stubborn_server_dies_with_a_killed_agent(launch: Launcher, project: Path) -> None:
    agent = await launch.start("openai")
    entry = stubborn_server()
    await open_session(agent, project, entry)
    assert len(live_processes(entry["args"][-1])) == 1

    await launch.kill(agent)  # kill -9: nothing of the agent runs any more

    await wait_until(
        lambda: live_processes(entry["args"][-1]) == [], "the watcher to kill the server"
    )


async def test_progress_is_shown_in_the_tool_call(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    _, turn = await one_call(launch, server, project, "mcp__tools__steps")

    shown = [
        u["content"][0]["content"]["text"]
        for u in for_call(turn.updates, "c1")
        if u.get("content") and u.get("status") != "completed"
    ]
    assert shown == ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
    assert for_call(turn.updates, "c1")[-1]["content"] == [text_block("three steps")]


async def test_a_changed_tool_list_is_read_before_the_next_model_call(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.extend(["allow_once", "allow_once"])
    session = await open_session(agent, project, stdio_server())
    server.script(
        Reply(calls=(Call("c1", "mcp__tools__grow", "{}"),)),
        Reply(calls=(Call("c2", "mcp__tools__late", args(word="hi")),)),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "grow")

    assert "mcp__tools__late" not in offered(server, 0)
    assert "mcp__tools__late" in offered(server, 1)
    assert for_call(turn.updates, "c2")[-1]["status"] == "completed"
    assert tool_results(server.requests[-1])["c2"] == ("HI", None)


async def test_always_allow_is_remembered_per_tool(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    agent.editor.permissions.extend(["allow_always", "allow_once"])
    session = await open_session(agent, project, stdio_server())
    server.script(
        Reply(calls=(Call("c1", "mcp__tools__add", args(a=1, b=1)),)),
        Reply(
            calls=(
                Call("c2", "mcp__tools__add", args(a=2, b=2)),
                Call("c3", "mcp__tools__image", "{}"),
            )
        ),
        Reply(text="done"),
    )

    await agent.prompt(session, "twice")

    asked = agent.editor.of_method("session/request_permission")
    assert [a["params"]["toolCall"]["toolCallId"] for a in asked] == ["c1", "c3"]
    results = tool_results(server.requests[-1])
    assert results["c2"] == ("4", None) and results["c3"][0].startswith("[image")


async def test_a_call_that_outlasts_its_limit_fails_and_the_turn_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_MCP_CALL_TIMEOUT_MS="300")
    agent.editor.permissions.append("allow_once")
    session = await open_session(agent, project, stdio_server())
    server.script(
        Reply(calls=(Call("c1", "mcp__tools__slow", args(seconds=30)),)), Reply(text="done")
    )

    turn = await agent.prompt(session, "slow")

    assert turn.stop_reason == "end_turn"
    assert for_call(turn.updates, "c1")[-1]["status"] == "failed"
    text, _ = tool_results(server.requests[-1])["c1"]
    assert text == "slow on MCP server 'tools' did not answer within 0.3 s"


async def test_a_failed_server_is_tried_again_at_the_next_prompt(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    script = tmp_path / "server.py"  # missing at first: the server cannot start
    entry = {"name": "later", "command": sys.executable, "args": [str(script)], "env": []}
    agent = await launch.start("openai")
    session = await open_session(agent, project, entry)
    server.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    first = await agent.prompt(session, "hello")  # tries again: still missing
    assert "could not be started" in first.updates[0]["content"]["text"]
    await wait_until(lambda: len(agent.log("mcp_server_failed")) == 2, "the retry to fail")
    script.write_text(SERVER.read_text())

    second = await agent.prompt(session, "again")  # tries again, in the background
    await wait_until(lambda: agent.log("mcp_server_ready"), "the server to start", timeout=15)
    await agent.prompt(session, "and again")

    assert [u["content"]["text"] for u in second.updates] == ["two"]  # not told twice
    assert "mcp__later__add" in offered(server, 2)


async def test_load_and_resume_connect_the_servers_they_pass(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    first, second = stdio_server("a"), stdio_server("b")
    session = await open_session(agent, project, first)
    await agent.result("session/close", {"sessionId": session})
    assert live_processes(first["args"][-1]) == []

    await agent.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": [second]}
    )
    assert len(live_processes(second["args"][-1])) == 1
    await agent.result(
        "session/resume", {"sessionId": session, "cwd": str(project), "mcpServers": [first]}
    )  # open: a new set
    assert live_processes(second["args"][-1]) == []
    assert len(live_processes(first["args"][-1])) == 1
    server.script(Reply(text="ok"))
    await agent.prompt(session, "which tools?")
    assert "mcp__a__add" in offered(server) and "mcp__b__add" not in offered(server)


async def test_a_third_party_server_from_pypi_answers_a_scripted_turn(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """`mcp-server-time` (PyPI), as an editor would configure it."""
    time_server = {
        "name": "time",
        "command": sys.executable,
        "args": ["-m", "mcp_server_time"],
        "env": [],
    }
    agent, turn = await one_call(
        launch,
        server,
        project,
        "mcp__time__convert_time",
        args(source_timezone="Etc/UTC", time="12:00", target_timezone="Asia/Tokyo"),
        servers=(time_server,),
    )

    assert agent.editor.of_method("session/request_permission") == []  # read-only hint
    call = for_call(turn.updates, "c1")
    assert call[0]["kind"] == "read" and call[-1]["status"] == "completed"
    text, _ = tool_results(server.requests[-1])["c1"]
    assert '"timezone": "Asia/Tokyo"' in text and "21:00" in text


@contextlib.asynccontextmanager
async def refusing_server(seen: list[dict[str, str]]) -> AsyncIterator[str]:
    """An HTTP endpoint on loopback that notes each request's headers in `seen` and refuses
    it with 401; its URL."""
    from aiohttp import web

    async def refuse(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.json_response({"error": "bad token"}, status=401)

    app = web.Application()
    app.router.add_route("*", "/mcp", refuse)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/mcp"
    finally:
        await runner.cleanup()


async def test_an_http_server_gets_its_headers_and_a_refusal_is_reported(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    seen: list[dict[str, str]] = []
    async with refusing_server(seen) as url:
        agent = await launch.start("openai")
        entry = {
            "type": "http",
            "name": "guarded",
            "url": url,
            "headers": [{"name": "Authorization", "value": "Bearer t0ken-123"}],
        }
        session = await open_session(agent, project, entry)
        server.script(Reply(text="ok"))
        turn = await agent.prompt(session, "hello")

    assert seen and seen[0]["Authorization"] == "Bearer t0ken-123"
    notice = turn.updates[0]["content"]["text"]
    assert notice.startswith("MCP server 'guarded' could not be started")


def raw_server(name: str, modes: str = "", label: str = "") -> dict[str, Any]:
    """The hand-written server (`tests/mcp/raw_server.py`); `args[-1]` is a unique label."""
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(RAW_SERVER), modes, label or f"{name}-{uuid.uuid4().hex}"],
        "env": [],
    }


async def test_a_cancel_is_not_held_up_by_a_server_that_never_lists_its_tools_again(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    session = await open_session(agent, project, raw_server("raw", "hang_relist"))
    server.script(Reply(calls=(Call("c1", "mcp__raw__changed", "{}"),)), Reply(text="never"))

    turn = await cancel_once(agent, session, "change", "completed")  # then the list hangs

    assert turn.stop_reason == "cancelled"
    assert len(server.requests) == 1  # the second model call never went out


async def test_the_agent_exits_while_a_session_is_still_starting_its_servers(
    launch: Launcher, project: Path
) -> None:
    agent = await launch.start("openai")
    entry = raw_server("slow", "slow_stubborn")
    await agent.proc.send(
        {
            "jsonrpc": "2.0",
            "id": "new",
            "method": "session/new",
            "params": {"cwd": str(project), "mcpServers": [entry]},
        }
    )
    await wait_until(lambda: live_processes(entry["args"][-1]), "the server to be spawned")

    await launch.close(agent)  # stdin closed: an orderly exit, within its grace

    assert live_processes(entry["args"][-1]) == []


async def test_a_tool_name_keeps_its_server_when_another_server_comes_back(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    script = tmp_path / "late.py"  # `a.b` cannot start at first; `a_b` can
    late = {
        "name": "a.b",
        "command": sys.executable,
        "args": [str(script), "", "from a.b"],
        "env": [],
    }
    agent = await launch.start("openai")
    session = await open_session(agent, project, late, raw_server("a_b", label="from a_b"))
    server.script(
        Reply(text="one"),
        Reply(text="two"),
        Reply(calls=(Call("c1", "mcp__a_b__ok", "{}"), Call("c2", "mcp__a_b__ok_2", "{}"))),
        Reply(text="done"),
    )
    await agent.prompt(session, "hello")  # tries `a.b` again: still missing
    await wait_until(lambda: len(agent.log("mcp_server_failed")) == 2, "the retry to fail")
    script.write_text(RAW_SERVER.read_text())
    await agent.prompt(session, "again")  # starts `a.b` in the background
    await wait_until(lambda: len(agent.log("mcp_server_ready")) == 2, "`a.b` to start")

    await agent.prompt(session, "both")

    results = tool_results(server.requests[-1])
    assert results["c1"] == ("from a_b", None) and results["c2"] == ("from a.b", None)
