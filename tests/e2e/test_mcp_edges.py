"""MCP at the edges of what the editor sends and what servers do: a stdio entry that also
carries an HTTP or SSE tag, secrets in the servers' headers and environment, results larger
than the store or the window, and remote servers that accept a connection and never answer."""

from __future__ import annotations

import socket
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Launcher, args, for_call, stored, tool_results
from tests.e2e.test_mcp import (
    SERVER,
    offered,
    open_session,
    raw_server,
    refusing_server,
    stdio_server,
)
from tests.harness import live_processes


def tagged_stdio(transport: str) -> dict[str, Any]:
    """A stdio entry (command, args, env) that also says it is an HTTP or SSE server."""
    return {
        "type": transport,
        "name": "mixed",
        "command": sys.executable,
        "args": [str(SERVER), "stdio"],
        "env": [],
    }


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_stdio_entry_tagged_as_remote_is_refused_naming_the_field(
    launch: Launcher, server: ScriptedProvider, project: Path, transport: str
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    entry = tagged_stdio(transport)
    setups = [
        ("session/new", {"cwd": str(project), "mcpServers": [entry]}),
        ("session/load", {"sessionId": session, "cwd": str(project), "mcpServers": [entry]}),
        ("session/resume", {"sessionId": session, "cwd": str(project), "mcpServers": [entry]}),
    ]

    for method, params in setups:
        answer = await agent.request(method, params)
        assert answer["error"]["code"] == -32602, (method, answer)
        assert answer["error"]["message"] == (
            'Invalid params: mcpServers[0]: missing required property "url"'
        ), method
    assert agent.log("handler_failed") == []


# `type` values a stdio entry may not carry: ACP's schema names only "http" and "sse".
UNKNOWN_TYPES = [True, 1, "x", "HTTP", False, "", {"http": 1}]


@pytest.mark.parametrize("tag", UNKNOWN_TYPES, ids=repr)
async def test_a_stdio_entry_of_any_other_type_is_refused_naming_the_field(
    launch: Launcher, server: ScriptedProvider, project: Path, tag: Any
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    entry = {**tagged_stdio("stdio"), "type": tag}
    where = {"cwd": str(project), "mcpServers": [entry]}
    before = await agent.result("session/list", {})
    setups = [
        ("session/new", where),
        ("session/load", {"sessionId": session, **where}),
        ("session/resume", {"sessionId": session, **where}),
        ("session/fork", {"sessionId": session, **where}),
    ]

    for method, params in setups:
        answer = await agent.request(method, params)
        assert answer["error"]["code"] == -32602, (method, answer)
        assert answer["error"]["message"] == (
            'Invalid params: mcpServers[0].type: expected "http" or "sse" (a server at a url), '
            f'or no type or "stdio" (a server started as a command), got {tag!r}'
        ), method
    assert agent.log("handler_failed") == []
    assert await agent.result("session/list", {}) == before  # nothing stored


async def test_a_stdio_entry_typed_stdio_is_a_stdio_server(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Some clients write the type ACP leaves out."""
    agent = await launch.start("openai")
    session = await open_session(agent, project, tagged_stdio("stdio"))
    server.script(Reply(text="ok"))

    await agent.prompt(session, "hello")

    assert "mcp__mixed__echo" in offered(server)


async def test_the_servers_secrets_are_neither_stored_nor_logged(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    secret = f"s3cret-{uuid.uuid4().hex}"
    seen: list[dict[str, str]] = []
    stdio = stdio_server()
    stdio["env"].append({"name": "TOKEN", "value": secret})
    async with refusing_server(seen) as url:
        agent = await launch.start("openai")  # the tests' agents log at debug level
        remote = {
            "type": "http",
            "name": "guarded",
            "url": url,
            "headers": [{"name": "Authorization", "value": f"Bearer {secret}"}],
        }
        session = await open_session(agent, project, remote, stdio)
        server.script(Reply(text="ok"))
        await agent.prompt(session, "hello")
        await agent.request(
            "session/load",
            {"sessionId": session, "cwd": str(project), "mcpServers": [remote, stdio]},
        )
        await launch.close(agent)

    assert seen[0]["Authorization"] == f"Bearer {secret}"  # the server got the real value
    assert "mcp__tools__add" in offered(server)  # and so did the stdio one (it started)
    db = launch.home / "sessions.db"
    for path in (db, db.with_name("sessions.db-wal")):
        assert secret.encode() not in (path.read_bytes() if path.exists() else b""), path
    assert secret.encode() not in agent.proc.stderr
    assert agent.log("received")  # the messages were logged, with the values replaced
    with sqlite3.connect(db) as conn:
        (kept,) = conn.execute("SELECT mcp_servers FROM sessions").fetchone()
    assert '"name":"Authorization","value":"[redacted]"' in kept
    assert '"name":"TOKEN","value":"[redacted]"' in kept


def silent_listener() -> socket.socket:
    """A loopback port whose connections the kernel completes and nobody ever reads: an HTTP
    or SSE server that accepts the connection and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    return listener


def contacted(listener: socket.socket) -> bool:
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return False
    return True


async def test_the_start_up_bound_counts_from_the_request_the_sdks_import_included(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The first session with servers loads the SDK (half a second, seconds on a busy
    machine). That is part of the start-up bound, so a bound shorter than it passes before
    any server is reached, and session/new answers at once, the servers failed."""
    agent = await launch.start("openai", ACP_FSM_MCP_STARTUP_TIMEOUT_MS="1")
    marker = f"never-{uuid.uuid4().hex}"
    local = {
        "name": "local",
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(60)", marker],
        "env": [],
    }
    with silent_listener() as http, silent_listener() as sse:
        remote = [
            {
                "type": kind,
                "name": f"silent-{kind}",
                "headers": [],
                "url": f"http://127.0.0.1:{port}/{kind}",
            }
            for kind, port in (("http", http.getsockname()[1]), ("sse", sse.getsockname()[1]))
        ]
        answer = await agent.proc.request(
            "session/new", {"cwd": str(project), "mcpServers": [*remote, local]}, wait_s=3
        )

        assert live_processes(marker) == []  # the bound passed before anything was started
        assert not contacted(http) and not contacted(sse)
        server.script(Reply(text="ok"))
        turn = await agent.prompt(answer["result"]["sessionId"], "hello")

    told = [
        u["content"]["text"] for u in turn.updates if u["sessionUpdate"] == "agent_message_chunk"
    ][:3]
    assert [t.split(" did not start within 0.001 s")[0] for t in told] == [
        "MCP server 'silent-http'",
        "MCP server 'silent-sse'",
        "MCP server 'local'",
    ]


@pytest.mark.slow
async def test_a_result_too_large_for_the_store_is_cut_and_the_turn_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A result that would take 68 MiB as stored (structured content: JSON text for the model
    and for the editor): the model reads what its window can take, the editor is shown what
    one result shows, each the start and the end of it with a note of the cut, and it is
    stored.
    (The SDK reads a long line in time quadratic in its length: 17 MiB take seconds.)"""
    count = 8_500_000
    agent = await launch.start("openai")
    session = await open_session(agent, project, raw_server("raw"))
    server.script(
        Reply(calls=(Call("c1", "mcp__raw__quotes", args(count=count)),)),
        Reply(text="SUMMARY: the user asked for quotes."),  # it fills the window
        Reply(text="done"),
    )

    turn = await (await agent.start_prompt(session, "quote")).result(timeout=60)

    assert turn.stop_reason == "end_turn"
    start, end = '{"quotes": "' + '\\"' * 3, '\\"' * 3 + '"}'
    read, is_error = tool_results(server.requests[-1])["c1"]
    assert is_error is None and read.startswith(start) and read.endswith(end)
    assert "characters cut here to fit the context window" in read and len(read) < count // 10
    final = for_call(turn.updates, "c1")[-1]
    assert final["status"] == "completed"
    [shown] = final["content"]
    text = shown["content"]["text"]
    assert text.startswith(start) and text.endswith(end) and len(text) < 2 * count
    assert "characters cut here: a tool result shows at most 16 MiB" in text
    [body] = [b for kind, b in stored(launch.home, session) if kind == "tool_result"]
    assert body["view"]["content"] == [shown]
    kept = body["content"]  # cut to the window when stored; compaction cut it further since
    assert kept.startswith(start) and kept.endswith(end) and len(read) < len(kept) < count
