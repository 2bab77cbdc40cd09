"""Logging in from the editor: with no key configured, `initialize` offers a login, a session
is refused with auth_required (-32000) naming it, the user runs `acp-fsm login` in the terminal
the editor opens, and the same agent process then works, with the stored key kept secret."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    BARE,
    Agent,
    Launcher,
    args,
    content_text,
    for_call,
    statuses,
    user_texts,
)
from tests.harness import agent_command, title_lane, wait_until
from tests.terminal import Terminal

KEY = "sk-auth-e2e-7d2c-NOT-A-REAL-KEY"
EDITOR_KEY = "sk-env-key-of-the-editor-42"  # set in the agent's environment by the editor
TERMINAL_CLIENT = {"auth": {"terminal": True}}
# No provider key and no base URL in the agent's environment: the user has set nothing.
NOTHING_SET = {
    "OPENAI_API_KEY": None,
    "ANTHROPIC_API_KEY": None,
    "OPENAI_BASE_URL": None,
    "ANTHROPIC_BASE_URL": None,
}


def initialized(agent: Agent) -> dict[str, Any]:
    """The agent's `initialize` result."""
    return next(
        m["result"]
        for m in agent.messages
        if isinstance(m.get("result"), dict) and "protocolVersion" in m["result"]
    )


async def new_session(agent: Agent, project: Path) -> dict[str, Any]:
    return dict(await agent.request("session/new", {"cwd": str(project), "mcpServers": []}))


def log_in(
    launch: Launcher,
    server: ScriptedProvider,
    method: dict[str, Any],
    key: str = KEY,
    choice: str = "4",
) -> str:
    """What the editor does with a terminal login: run the agent's command with its args in
    a terminal, where the user answers (by default: the compatible server, the scripted
    one; else OpenAI's `choice`, its base URL the scripted server's); the screen."""
    env = {**NOTHING_SET, "OPENAI_BASE_URL": None if choice == "4" else server.openai_base_url}
    terminal = Terminal(method["args"], launch.env("openai", **env))
    terminal.expect("Provider [1-4")
    terminal.type(choice)
    if choice == "4":
        terminal.expect("Base URL")
        terminal.type(server.openai_base_url)
    terminal.expect("API key (hidden")
    terminal.type(key)
    assert terminal.finish() == 0, terminal.screen  # exit 0: logged in
    return terminal.screen


async def test_a_user_with_nothing_set_logs_in_from_the_editor_and_prompts(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.api_key = KEY
    agent = await launch.start("openai", capabilities=TERMINAL_CLIENT, **NOTHING_SET)
    [method] = initialized(agent)["authMethods"]
    assert method["type"] == "terminal" and method["args"] == ["login"]

    refused = await new_session(agent, project)
    assert refused["error"]["code"] == -32000
    assert "acp-fsm login" in refused["error"]["message"]

    screen = await asyncio.to_thread(log_in, launch, server, method)
    assert KEY not in screen

    created = await new_session(agent, project)  # the same process: no restart
    session = created["result"]["sessionId"]
    (project / "notes.txt").write_text(f"the key is {KEY}\n")
    server.script(
        Reply(calls=(Call("r", "read_file", args(path="notes.txt")),)), Reply(text="done")
    )
    turn = await agent.prompt(session, "read notes.txt")

    assert turn.stop_reason == "end_turn"
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    shown = content_text(for_call(turn.updates, "r")[-1])
    assert "the key is [redacted]" in shown  # the stored key is a secret like the env's
    assert KEY not in server.requests[-1].raw.decode()  # nor sent to the model
    assert all(KEY not in str(m) for m in agent.messages)


async def test_authenticate_reads_the_credentials_again_and_logout_forgets_them(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.api_key = KEY
    agent = await launch.start("openai", **NOTHING_SET)
    [method] = initialized(agent)["authMethods"]
    assert method["id"] == "api-key" and "type" not in method  # no terminal: agent-handled
    assert initialized(agent)["agentCapabilities"]["auth"] == {"logout": {}}

    before = await agent.request("authenticate", {"methodId": "api-key"})
    assert before["error"]["code"] == -32000
    unknown = await agent.request("authenticate", {"methodId": "oauth"})
    assert unknown["error"]["code"] == -32602 and "'api-key'" in unknown["error"]["message"]

    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    assert await agent.result("authenticate", {"methodId": "api-key"}) == {}
    session = (await new_session(agent, project))["result"]["sessionId"]

    assert await agent.result("logout", {}) == {}
    assert not (launch.home / "credentials.json").exists()
    after = await new_session(agent, project)
    assert after["error"]["code"] == -32000
    refused = await agent.prompt(session, "while logged out")
    assert refused.error["code"] == -32000

    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    server.script(Reply(text="back"))
    assert (await agent.prompt(session, "logged in again")).stop_reason == "end_turn"
    assert user_texts(server.requests[-1]) == ["logged in again"]  # the refused one: not kept


async def test_a_login_to_the_responses_api_makes_the_agent_use_it(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.api_key = KEY
    screen = await asyncio.to_thread(log_in, launch, server, {"args": ["login"]}, choice="3")
    assert "Logged in to OpenAI on the Responses API" in screen
    agent = await launch.start("openai", **{**NOTHING_SET, "OPENAI_BASE_URL": None})
    await prompts_on_the_responses_api(agent, server, project)


async def test_a_key_stored_for_openai_serves_its_responses_api_too(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """ACP_FSM_PROVIDER=openai-responses is OpenAI: the key stored for it is used."""
    server.api_key = KEY
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    agent = await launch.start("openai-responses", **NOTHING_SET)
    await prompts_on_the_responses_api(agent, server, project)


async def prompts_on_the_responses_api(
    agent: Agent, server: ScriptedProvider, project: Path
) -> None:
    """A prompt of `agent` goes to the Responses API, with the stored key."""
    session = (await new_session(agent, project))["result"]["sessionId"]
    server.script(Reply(text="hi"))

    assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    assert server.requests[-1].path == "/v1/responses"
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


async def test_the_environment_takes_precedence_over_what_is_stored(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.api_key = KEY
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    server.api_key = EDITOR_KEY
    await prompts_with_the_editors_key(launch, server, project)


async def prompts_with_the_editors_key(
    launch: Launcher, server: ScriptedProvider, project: Path, **env: str | None
) -> None:
    """An agent whose environment sets `EDITOR_KEY` (and `env`) prompts with that key."""
    agent = await launch.start("openai", capabilities=BARE, OPENAI_API_KEY=EDITOR_KEY, **env)
    session = (await new_session(agent, project))["result"]["sessionId"]
    server.script(Reply(text="hi"))

    assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    assert server.requests[-1].headers["authorization"] == f"Bearer {EDITOR_KEY}"


async def test_the_environment_decides_as_it_would_without_a_stored_key(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A base URL alone (an Anthropic proxy, say) configures no provider: the stored login
    applies. A key in the environment does, and wins over a stored one of another provider."""
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})  # OpenAI-compatible
    proxied = await launch.start(
        "openai",
        ACP_FSM_PROVIDER=None,
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
        **{k: v for k, v in NOTHING_SET.items() if k != "ANTHROPIC_BASE_URL"},
    )
    assert "result" in await new_session(proxied, project)

    await prompts_with_the_editors_key(
        launch,
        server,
        project,
        ACP_FSM_PROVIDER=None,
        ANTHROPIC_API_KEY=None,
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    )


async def test_a_key_stored_while_a_turn_runs_is_secret_at_once(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    agent = await launch.start("openai", **NOTHING_SET)
    session = (await new_session(agent, project))["result"]["sessionId"]
    await agent.result(
        "session/set_config_option",
        {"sessionId": session, "configId": "mode", "value": "full_access"},
    )
    later = "sk-second-login-3f9a-NOT-REAL"
    (project / "later.txt").write_text(f"new key {later}\n")
    server.script(
        Reply(calls=(Call("c", "run_command", args(command="sleep 1.5; cat later.txt")),)),
        Reply(text="ok"),
    )

    running = await agent.start_prompt(session, "show it")
    await wait_until(
        lambda: "in_progress" in statuses(for_call(agent.updates(session, running.start), "c")),
        "the command running",
    )
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]}, later)
    turn = await running.result()

    assert turn.stop_reason == "end_turn"
    shown = content_text(for_call(turn.updates, "c")[-1])
    assert "new key [redacted]" in shown and later not in str(agent.messages)
    assert later not in server.requests[-1].raw.decode()


async def test_search_files_never_matches_nor_shows_a_stored_key(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    agent = await launch.start("openai", **NOTHING_SET)
    session = (await new_session(agent, project))["result"]["sessionId"]
    (project / "env.txt").write_text("x" * 270 + f"TOKEN={KEY}\n")
    server.script(
        Reply(
            calls=(
                Call("g", "search_files", args(pattern=f"TOKEN={KEY[:12]}")),
                Call("t", "search_files", args(pattern="TOKEN=")),
            )
        ),
        Reply(text="ok"),
    )

    turn = await agent.prompt(session, "search")

    guessed = content_text(for_call(turn.updates, "g")[-1])
    found = content_text(for_call(turn.updates, "t")[-1])
    assert "No matches" in guessed  # the key cannot be guessed a character at a time
    assert "TOKEN=[redacted]" in found and KEY[:8] not in found


def one_sentence(message: str) -> bool:
    return "\n" not in message and message.endswith(".") and ". " not in message


@pytest.mark.parametrize(
    ("capabilities", "terminal"),
    [
        (TERMINAL_CLIENT, True),
        ({"_meta": {"terminal-auth": True}}, True),  # as clients said it before ACP had `auth`
        (BARE, False),  # acpx, avante, acp-client: no terminal login, no "Log in" button
    ],
)
async def test_the_login_message_names_the_login_the_client_was_offered(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, Any],
    terminal: bool,
) -> None:
    agent = await launch.start("openai", capabilities=capabilities, **NOTHING_SET)
    [method] = initialized(agent)["authMethods"]
    assert (method.get("type") == "terminal") is terminal

    refused = (await new_session(agent, project))["error"]
    authenticate = (await agent.request("authenticate", {"methodId": method["id"]}))["error"]

    for error in (refused, authenticate):
        message = error["message"]
        assert error["code"] == -32000 and one_sentence(message), error
        assert ("the editor's log-in for acp-fsm (it runs `acp-fsm login`)" in message) is terminal
        assert ("run `acp-fsm login` in a terminal" in message) is not terminal
        reason, details = error["data"]["reason"], error["data"]["details"]
        assert one_sentence(reason) and "acp-fsm login" in reason  # Toad shows only data
        assert "OPENAI_BASE_URL" in details and ("editor's log-in" in details) is terminal


@pytest.mark.parametrize("kind", ["named pipe", "link to /dev/zero"])
async def test_a_credentials_file_that_is_not_a_regular_file_is_refused_at_once(
    launch: Launcher, server: ScriptedProvider, project: Path, kind: str
) -> None:
    """A FIFO would block the read until a writer came (the agent froze); /dev/zero never
    ends (the agent filled its memory). Either is named, like a malformed file."""
    launch.home.mkdir()
    stored = launch.home / "credentials.json"
    if kind == "named pipe":
        os.mkfifo(stored)
    else:
        stored.symlink_to("/dev/zero")
    agent = await launch.start("openai", **NOTHING_SET)

    refused = (await new_session(agent, project))["error"]
    assert refused["code"] == -32000
    what = "named pipe" if kind == "named pipe" else "character device"
    assert f"credentials.json is a {what}, not a regular file" in refused["data"]["details"]
    assert str(launch.home) not in json.dumps(refused)  # the agent's data: never its path

    keyed = await launch.start("openai")  # the environment's key: the file is not needed
    session = (await new_session(keyed, project))["result"]["sessionId"]
    server.script(Reply(text="hi"))
    assert (await keyed.prompt(session, "hello")).stop_reason == "end_turn"
    status = await asyncio.to_thread(
        subprocess.run,
        [*agent_command(), "login", "--status"],
        capture_output=True,
        text=True,
        timeout=30,
        env=launch.env("openai", **NOTHING_SET),
    )
    assert status.returncode == 1 and f"Note: {stored} is a {what}" in status.stdout


async def test_a_stored_key_goes_only_to_the_base_url_it_was_checked_at(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.api_key = KEY
    await asyncio.to_thread(log_in, launch, server, {"args": ["login"]})
    async with ScriptedProvider(Reply(text="from elsewhere")) as elsewhere:
        title_lane(elsewhere)  # the session's title call is answered apart there too
        env = {**NOTHING_SET, "OPENAI_BASE_URL": elsewhere.openai_base_url}
        agent = await launch.start("openai", capabilities=BARE, **env)
        session = (await new_session(agent, project))["result"]["sessionId"]

        assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
        [request] = elsewhere.requests
        assert "authorization" not in request.headers  # the stored key stayed home
        assert KEY not in str(request.headers) and KEY not in request.raw.decode()
        status = await asyncio.to_thread(
            subprocess.run,
            [*agent_command(), "login", "--status"],
            capture_output=True,
            text=True,
            timeout=30,
            env=launch.env("openai", **env),
        )
        assert (
            f"belongs to {server.openai_base_url}; it is not used for "
            f"{elsewhere.openai_base_url} (OPENAI_BASE_URL)"
        ) in status.stdout
