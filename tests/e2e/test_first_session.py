"""The first `session/new`, when it follows `initialize` at once, is served on the startup
path (`acp_fsm.early_session`). It must get the same answer, and the same update after it, as
the same request on the full path (which serves it when a blank line comes first, or anything
else the startup path leaves to it), and the session must be the same session: prompted,
stored, loaded elsewhere, its secrets scrubbed."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from tests.e2e.support import API_KEY, Launcher
from tests.harness import agent_command, agent_env, wait_until

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
LIST = b'{"jsonrpc":"2.0","id":"list","method":"session/list","params":{}}'
# A provider whose model list cannot be fetched (nothing listens there): no update follows.
NO_SERVER: dict[str, str | None] = {
    "ACP_FSM_PROVIDER": "openai",
    "OPENAI_API_KEY": API_KEY,
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "ACP_FSM_MODELS": "m-one,m-two",
}
SESSION_ID = re.compile(rb"sess_[0-9a-f]{32}")
SERVER = [sys.executable, "-c", "pass"]  # an MCP server that ends at once
WAIT_S = 30  # bound on waiting for a log line


def new(params: dict[str, Any], request_id: object = "new", *, ascii: bool = False) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": params}
    return json.dumps(message, ensure_ascii=ascii).encode()


# The line after `initialize`, and whether the startup path serves it: a session without MCP
# servers is served there; anything else is left to the full path.
SECOND = {
    "a session": (new({"cwd": "/w", "mcpServers": []}), True),
    "directories": (
        new({"cwd": "/w", "mcpServers": [], "additionalDirectories": ["/x", "/y"]}),
        True,
    ),
    "unicode": (new({"cwd": "/wörk/😀", "mcpServers": []}), True),
    # escaped surrogates: the startup path leaves every such line to the full path's decoder
    "unicode escaped": (new({"cwd": "/wörk/😀", "mcpServers": []}, ascii=True), False),
    "_meta": (new({"cwd": "/w", "mcpServers": [], "_meta": {"a": [1, 2]}}), True),
    "a numeric id": (new({"cwd": "/w", "mcpServers": []}, 7), True),
    "a relative cwd": (new({"cwd": "w", "mcpServers": []}), False),
    "a relative directory": (
        new({"cwd": "/w", "mcpServers": [], "additionalDirectories": ["x"]}),
        False,
    ),
    "a cwd over the limit": (new({"cwd": "/" + "a" * 5000, "mcpServers": []}), False),
    "no cwd": (new({"mcpServers": []}), False),
    "no mcpServers": (new({"cwd": "/w"}), False),
    "an MCP server that is none": (new({"cwd": "/w", "mcpServers": [{"name": "x"}]}), False),
    "an MCP server": (
        new(
            {
                "cwd": "/w",
                "mcpServers": [{"name": "t", "command": SERVER[0], "args": SERVER[1:], "env": []}],
            }
        ),
        False,
    ),
    "a notification": (b'{"jsonrpc":"2.0","method":"session/new","params":{"cwd":"/w"}}', False),
    "another method": (LIST, False),
    "not JSON": (b'{"jsonrpc":"2.0","id":1,"method":"session/n', False),
}


def created(log: str) -> list[dict[str, Any]]:
    """The `session_created` events of a log."""
    events = (json.loads(line) for line in log.splitlines() if line.startswith("{"))
    return [e for e in events if e.get("event") == "session_created"]


async def run(
    lines: bytes, home: Path, env: dict[str, str | None], until: bytes | None = None
) -> tuple[list[bytes], str]:
    """The lines the agent writes for `lines` (input then ends; with `until`, once a line
    holding it was written), session ids made alike, in order; and its log."""
    proc = await asyncio.create_subprocess_exec(
        *agent_command(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(ACP_FSM_HOME=str(home), **env),
        limit=1 << 24,
    )
    written: list[bytes] = []
    if until is not None:  # a request the agent answers later: the input stays open till then
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(lines)
        while until not in (line := await asyncio.wait_for(proc.stdout.readline(), 60)):
            assert line, "the agent ended first"
            written.append(line)
        written.append(line)
        lines = b""
    out, err = await asyncio.wait_for(proc.communicate(lines), 60)
    out = b"".join(written) + out
    log = err.decode(errors="replace")
    assert proc.returncode == 0 and "Traceback" not in log, log[-2000:]
    return [SESSION_ID.sub(b"sess_X", line) for line in out.splitlines()], log


async def fast_and_full(
    second: bytes, tmp_path: Path, env: dict[str, str | None]
) -> tuple[tuple[list[bytes], str], tuple[list[bytes], str]]:
    """`second` right after `initialize`, and after a blank line (the full path's), each in
    a process and a home of its own."""
    return await asyncio.gather(
        run(INIT + b"\n" + second + b"\n", tmp_path / "fast", env),
        run(INIT + b"\n\n" + second + b"\n", tmp_path / "full", env),
    )


@pytest.mark.parametrize(("second", "early"), SECOND.values(), ids=SECOND.keys())
async def test_the_line_after_initialize_is_answered_as_on_the_full_path(
    second: bytes, early: bool, tmp_path: Path
) -> None:
    (fast, fast_log), (full, full_log) = await fast_and_full(second, tmp_path, NO_SERVER)

    assert fast == full
    sessions = len(created(full_log))
    assert not any(e.get("fast_path") for e in created(full_log))
    assert [e.get("fast_path", False) for e in created(fast_log)] == [early] * sessions
    assert sessions or not early


async def test_a_session_that_needs_a_login_is_refused_as_on_the_full_path(
    tmp_path: Path,
) -> None:
    no_key = {"ACP_FSM_PROVIDER": "anthropic", "ANTHROPIC_API_KEY": None, "OPENAI_API_KEY": None}
    (fast, _), (full, _) = await fast_and_full(SECOND["a session"][0], tmp_path, no_key)

    assert fast == full
    assert "error" in json.loads(fast[-1])


async def test_a_session_served_early_is_the_same_session(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Prompted, listed and stored; loaded by another process, which replays it (a model
    configured: the scripted provider is a compatible server, whose list the full path awaits
    otherwise)."""
    agent = await launch.start(ACP_FSM_MODEL="gpt-5")
    session = await agent.new_session(project)
    await wait_until(lambda: agent.log("session_created"), "the session's log", WAIT_S)
    [event] = agent.log("session_created")
    assert event["fast_path"] is True and event["session_id"] == session
    server.script(Reply(text="hi there"))

    assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    listed = (await agent.result("session/list", {}))["sessions"]
    assert [s["sessionId"] for s in listed] == [session]
    await launch.close(agent)

    other = await launch.start(ACP_FSM_MODEL="gpt-5")
    params = {"sessionId": session, "cwd": str(project), "mcpServers": []}
    start = len(other.messages)
    assert "result" in await other.request("session/load", params)
    replayed = [u.get("content", {}).get("text") for u in other.updates(session, start)]
    assert "hello" in replayed and "hi there" in replayed


async def test_a_key_in_the_first_session_s_cwd_is_not_stored(tmp_path: Path) -> None:
    second = new({"cwd": f"/w/{API_KEY}", "mcpServers": []})
    home = tmp_path / "home"

    lines, log = await run(INIT + b"\n" + second + b"\n", home, NO_SERVER)

    assert b'"sessionId":"sess_X"' in b"".join(lines)
    assert [e["fast_path"] for e in created(log)] == [True]
    stored = b"".join(p.read_bytes() for p in home.glob("sessions.db*"))
    assert b"/w/[redacted]" in stored and API_KEY.encode() not in stored


async def test_a_compatible_server_s_list_is_awaited_on_the_full_path(tmp_path: Path) -> None:
    """No model configured and none of the server's known: the startup path leaves the session
    to the full path, which answers once the server listed its models (its picker showed
    `gpt-5`, a name a local server does not serve)."""
    async with ScriptedProvider(models=("coder-7b", "coder-1b")) as server:
        env = {
            "ACP_FSM_PROVIDER": "openai",
            "OPENAI_API_KEY": None,
            "OPENAI_BASE_URL": server.openai_base_url,
            "ACP_FSM_MODEL": None,
            "ACP_FSM_MODELS": None,
        }
        lines, log = await run(
            INIT + b"\n" + SECOND["a session"][0] + b"\n", tmp_path, env, until=b'"id":"new"'
        )
        assert [r.path for r in server.model_list_requests] == ["/v1/models"]
    [answer] = [json.loads(line) for line in lines if b'"id":"new"' in line]
    [model] = [o for o in answer["result"]["configOptions"] if o["id"] == "model"]
    assert model["currentValue"] == "coder-7b"
    assert [v["value"] for v in model["options"]] == ["coder-7b", "coder-1b"]
    assert [e.get("fast_path", False) for e in created(log)] == [False]
