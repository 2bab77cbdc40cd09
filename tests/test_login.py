"""`acp-fsm login`, `login --status` and `logout`, in a real pseudo-terminal against the scripted
provider's models endpoint: the key is hidden, checked with the provider, stored 0600 only when
accepted, and never printed."""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from acp_fsm.providers.scripted import ScriptedProvider
from tests.harness import agent_command, agent_env
from tests.terminal import Terminal

KEY = "sk-login-test-5e1a-0c3b-NOT-REAL"
NO_PROVIDER = {name: None for name in ("ACP_FSM_PROVIDER", "OPENAI_API_KEY",
                                       "ANTHROPIC_API_KEY", "OPENAI_BASE_URL",
                                       "ANTHROPIC_BASE_URL")}


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    async with ScriptedProvider(api_key=KEY, models=("m-one", "m-two")) as provider:
        yield provider


def env_for(home: Path, **extra: str | None) -> dict[str, str]:
    return agent_env(ACP_FSM_HOME=str(home), **{**NO_PROVIDER, **extra})


def stored(home: Path) -> dict[str, str] | None:
    path = home / "credentials.json"
    return json.loads(path.read_text()) if path.exists() else None


def run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*agent_command(), *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=30)


def log_in_at_a_terminal(env: dict[str, str], url: str, key: str) -> Terminal:
    terminal = Terminal(["login"], env)
    terminal.expect("Provider [1-3")
    terminal.type("3")
    terminal.expect("Base URL of the server")
    terminal.type(url)
    terminal.expect("API key (hidden")
    terminal.type(key)
    return terminal


async def test_a_login_at_a_terminal_checks_the_key_and_stores_it_for_the_user_only(
        server: ScriptedProvider, tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = await asyncio.to_thread(log_in_at_a_terminal, env_for(home),
                                       server.openai_base_url, KEY)
    code = await asyncio.to_thread(terminal.finish)

    assert code == 0, terminal.screen
    assert "Logged in to An OpenAI-compatible server" in terminal.screen
    assert "(2 models)" in terminal.screen
    assert KEY not in terminal.screen  # typed, but never shown
    assert stored(home) == {"provider": "openai", "apiKey": KEY,
                            "baseUrl": server.openai_base_url}
    mode = stat.S_IMODE((home / "credentials.json").stat().st_mode)
    assert mode == 0o600
    [check] = server.model_list_requests
    assert check.headers["authorization"] == f"Bearer {KEY}"
    assert [p.name for p in home.iterdir()] == ["credentials.json"]  # no temporary left


async def test_a_refused_key_stores_nothing(server: ScriptedProvider, tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = await asyncio.to_thread(log_in_at_a_terminal, env_for(home),
                                       server.openai_base_url, "sk-wrong-key-0000")
    code = await asyncio.to_thread(terminal.finish)

    assert code == 1
    assert "The provider refused the key (HTTP 401). Nothing was stored." in terminal.screen
    assert stored(home) is None


async def test_ctrl_c_stores_nothing(tmp_path: Path) -> None:
    def interrupted() -> tuple[int, str]:
        terminal = Terminal(["login"], env_for(tmp_path))
        terminal.expect("Provider [1-3")
        terminal.type("1")
        terminal.expect("API key (hidden")
        terminal.interrupt()
        return terminal.finish(), terminal.screen

    code, screen = await asyncio.to_thread(interrupted)
    assert code == 1 and "Login cancelled: nothing was stored." in screen
    assert stored(tmp_path) is None


async def test_anthropic_is_checked_with_its_own_api_and_a_piped_key_works(
        server: ScriptedProvider, tmp_path: Path) -> None:
    env = env_for(tmp_path, ANTHROPIC_BASE_URL=server.anthropic_base_url)
    done = await asyncio.to_thread(run, ["login", "--provider", "anthropic"], env, KEY + "\n")

    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    [check] = server.model_list_requests
    assert check.headers["x-api-key"] == KEY and "anthropic-version" in check.headers
    # checked at a proxy's URL: the same URL is used afterwards
    assert stored(tmp_path) == {"provider": "anthropic", "apiKey": KEY,
                                "baseUrl": server.anthropic_base_url}


async def test_an_unreachable_server_stores_nothing(tmp_path: Path) -> None:
    done = await asyncio.to_thread(
        run, ["login", "--provider", "compatible", "--base-url", "http://127.0.0.1:9/v1"],
        env_for(tmp_path), KEY + "\n")
    assert done.returncode == 1
    assert "http://127.0.0.1:9/v1 could not be reached" in done.stderr
    assert stored(tmp_path) is None


def test_base_url_is_only_for_a_compatible_server(tmp_path: Path) -> None:
    done = run(["login", "--provider", "openai", "--base-url", "http://x/v1"], env_for(tmp_path))
    assert done.returncode == 2 and "--base-url is for --provider compatible" in done.stderr


async def test_status_says_where_the_key_comes_from_and_logout_forgets_it(
        server: ScriptedProvider, tmp_path: Path) -> None:
    env = env_for(tmp_path)
    none = await asyncio.to_thread(run, ["login", "--status"], env)
    assert none.returncode == 1 and none.stdout.startswith("Not logged in")

    login = await asyncio.to_thread(
        run, ["login", "--provider", "compatible", "--base-url", server.openai_base_url],
        env, KEY + "\n")
    assert login.returncode == 0, login.stderr
    mine = await asyncio.to_thread(run, ["login", "--status"], env)
    assert mine.returncode == 0
    assert f"at {server.openai_base_url}" in mine.stdout
    assert "stored by acp-fsm login" in mine.stdout and KEY not in mine.stdout

    theirs = await asyncio.to_thread(run, ["login", "--status"],
                                     {**env, "OPENAI_API_KEY": "sk-from-the-env-1234"})
    assert "from the environment (OPENAI_API_KEY)" in theirs.stdout
    assert "sk-from-the-env" not in theirs.stdout

    out = await asyncio.to_thread(run, ["logout"], env)
    assert out.returncode == 0 and out.stdout.startswith("Logged out: removed")
    assert stored(tmp_path) is None
    again = await asyncio.to_thread(run, ["logout"], env)
    assert again.returncode == 0 and again.stdout.startswith("Not logged in")
