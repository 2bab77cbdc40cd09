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

from acp_fsm.devkit.provider import ScriptedProvider
from tests.harness import agent_command, agent_env
from tests.terminal import Terminal

KEY = "sk-login-test-5e1a-0c3b-NOT-REAL"
NO_PROVIDER = {
    name: None
    for name in (
        "ACP_FSM_PROVIDER",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    )
}


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
    return subprocess.run(
        [*agent_command(), *args], input=stdin, capture_output=True, text=True, env=env, timeout=30
    )


def log_in_at_a_terminal(env: dict[str, str], url: str, key: str) -> Terminal:
    terminal = Terminal(["login"], env)
    terminal.expect("Provider [1-4")
    terminal.type("4")
    terminal.expect("Base URL of the server")
    terminal.type(url)
    terminal.expect("API key (hidden")
    terminal.type(key)
    return terminal


async def test_a_login_at_a_terminal_checks_the_key_and_stores_it_for_the_user_only(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    terminal = await asyncio.to_thread(
        log_in_at_a_terminal, env_for(home), server.openai_base_url, KEY
    )
    code = await asyncio.to_thread(terminal.finish)

    assert code == 0, terminal.screen
    assert "Logged in to An OpenAI-compatible server" in terminal.screen
    assert "(2 models)" in terminal.screen
    assert KEY not in terminal.screen  # typed, but never shown
    assert stored(home) == {"provider": "openai", "apiKey": KEY, "baseUrl": server.openai_base_url}
    mode = stat.S_IMODE((home / "credentials.json").stat().st_mode)
    assert mode == 0o600
    [check] = server.model_list_requests
    assert check.headers["authorization"] == f"Bearer {KEY}"
    assert [p.name for p in home.iterdir()] == ["credentials.json"]  # no temporary left


async def test_a_refused_key_stores_nothing(server: ScriptedProvider, tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = await asyncio.to_thread(
        log_in_at_a_terminal, env_for(home), server.openai_base_url, "sk-wrong-key-0000"
    )
    code = await asyncio.to_thread(terminal.finish)

    assert code == 1
    assert "The provider refused the key (HTTP 401). Nothing was stored." in terminal.screen
    assert stored(home) is None


async def test_ctrl_c_stores_nothing(tmp_path: Path) -> None:
    def interrupted() -> tuple[int, str]:
        terminal = Terminal(["login"], env_for(tmp_path))
        terminal.expect("Provider [1-4")
        terminal.type("1")
        terminal.expect("API key (hidden")
        terminal.interrupt()
        return terminal.finish(), terminal.screen

    code, screen = await asyncio.to_thread(interrupted)
    assert code == 1 and "Login cancelled: nothing was stored." in screen
    assert stored(tmp_path) is None


async def test_anthropic_is_checked_with_its_own_api_and_a_piped_key_works(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    env = env_for(tmp_path, ANTHROPIC_BASE_URL=server.anthropic_base_url)
    done = await asyncio.to_thread(run, ["login", "--provider", "anthropic"], env, KEY + "\n")

    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout + done.stderr
    [check] = server.model_list_requests
    assert check.headers["x-api-key"] == KEY and "anthropic-version" in check.headers
    # checked at a proxy's URL: the same URL is used afterwards
    assert stored(tmp_path) == {
        "provider": "anthropic",
        "apiKey": KEY,
        "baseUrl": server.anthropic_base_url,
    }


async def test_an_unreachable_server_stores_nothing(tmp_path: Path) -> None:
    done = await asyncio.to_thread(
        run,
        ["login", "--provider", "compatible", "--base-url", "http://127.0.0.1:9/v1"],
        env_for(tmp_path),
        KEY + "\n",
    )
    assert done.returncode == 1
    assert "http://127.0.0.1:9/v1 could not be reached" in done.stderr
    assert stored(tmp_path) is None


async def test_a_compatible_server_on_the_responses_api_is_stored_with_it(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    env = env_for(tmp_path)
    args = ["login", "--api", "responses", "--base-url", server.openai_base_url]
    done = await asyncio.to_thread(run, args, env, KEY + "\n")

    assert done.returncode == 0, done.stderr
    assert stored(tmp_path) == {
        "provider": "openai",
        "apiKey": KEY,
        "baseUrl": server.openai_base_url,
        "api": "responses",
    }
    status = await asyncio.to_thread(run, ["login", "--status"], env)
    assert status.stdout.startswith("Provider: openai (Responses API) at "), status.stdout
    refused = run(["login", "--provider", "anthropic", "--api", "chat"], env)
    assert refused.returncode == 2 and "--api is for --provider compatible" in refused.stderr


def test_base_url_is_only_for_a_compatible_server(tmp_path: Path) -> None:
    done = run(["login", "--provider", "openai", "--base-url", "http://x/v1"], env_for(tmp_path))
    assert done.returncode == 2 and "--base-url is for --provider compatible" in done.stderr


async def test_status_says_where_the_key_comes_from_and_logout_forgets_it(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    env = env_for(tmp_path)
    none = await asyncio.to_thread(run, ["login", "--status"], env)
    assert none.returncode == 1 and none.stdout.startswith("Not logged in")
    assert "- run `acp-fsm login`" in none.stdout and "OPENAI_API_KEY" in none.stdout
    assert "To log in, log in" not in none.stdout

    login = await asyncio.to_thread(
        run,
        ["login", "--provider", "compatible", "--base-url", server.openai_base_url],
        env,
        KEY + "\n",
    )
    assert login.returncode == 0, login.stderr
    mine = await asyncio.to_thread(run, ["login", "--status"], env)
    assert mine.returncode == 0
    assert f"at {server.openai_base_url}" in mine.stdout
    assert "stored by acp-fsm login" in mine.stdout and KEY not in mine.stdout

    theirs = await asyncio.to_thread(
        run, ["login", "--status"], {**env, "OPENAI_API_KEY": "sk-from-the-env-1234"}
    )
    assert "from the environment (OPENAI_API_KEY)" in theirs.stdout
    assert "sk-from-the-env" not in theirs.stdout

    out = await asyncio.to_thread(run, ["logout"], env)
    assert out.returncode == 0 and out.stdout.startswith("Logged out: removed")
    assert stored(tmp_path) is None
    again = await asyncio.to_thread(run, ["logout"], env)
    assert again.returncode == 0 and again.stdout.startswith("Not logged in")


async def test_wrong_answers_are_asked_again(server: ScriptedProvider, tmp_path: Path) -> None:
    def session() -> tuple[int, str]:
        terminal = Terminal(["login"], env_for(tmp_path))
        terminal.expect("Provider [1-4")
        terminal.type("²")  # a digit to str.isdigit, not a number
        terminal.expect("Please answer a number from 1 to 4.")
        terminal.type("4")
        terminal.expect("Base URL")
        terminal.type("localhost:8080")
        terminal.expect("'localhost:8080' is not an http(s) URL.")
        terminal.type(server.openai_base_url)
        terminal.expect("API key (hidden")
        terminal.type("sk-\x16\x01pasted")  # a control character, typed literally
        terminal.expect("holds characters no key has")
        terminal.expect("API key (hidden")  # typed before it, a key would be shown
        terminal.type(KEY)
        return terminal.finish(), terminal.screen

    code, screen = await asyncio.to_thread(session)
    assert code == 0, screen
    assert stored(tmp_path) == {
        "provider": "openai",
        "apiKey": KEY,
        "baseUrl": server.openai_base_url,
    }


async def test_a_base_url_alone_means_a_compatible_server(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    done = await asyncio.to_thread(
        run, ["login", "--base-url", server.openai_base_url], env_for(tmp_path), KEY + "\n"
    )
    assert done.returncode == 0, done.stderr
    assert stored(tmp_path) == {
        "provider": "openai",
        "apiKey": KEY,
        "baseUrl": server.openai_base_url,
    }


async def test_a_key_the_environment_would_not_use_is_a_failed_login(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    """An editor's terminal login reads exit 0 as "logged in": the agent must then work."""
    env = env_for(tmp_path, ACP_FSM_PROVIDER="anthropic")
    done = await asyncio.to_thread(
        run, ["login", "--base-url", server.openai_base_url], env, KEY + "\n"
    )
    assert done.returncode == 1
    assert "chooses anthropic (ACP_FSM_PROVIDER) and has no key for it" in done.stderr


async def test_a_data_directory_that_cannot_take_the_key_is_said_plainly(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.write_text("a file, not a directory")
    done = await asyncio.to_thread(
        run, ["login", "--base-url", server.openai_base_url], env_for(home), KEY + "\n"
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the provider accepted the key, but it could not be stored" in done.stderr.lower()
    out = await asyncio.to_thread(run, ["logout"], env_for(home))
    assert out.returncode == 1 and "could not be removed" in out.stderr


async def test_a_stored_file_made_readable_or_broken_by_hand(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    (tmp_path / "credentials.json").write_text(
        json.dumps({"provider": "openai", "apiKey": KEY, "baseUrl": 5})
    )
    broken = await asyncio.to_thread(run, ["login", "--status"], env_for(tmp_path))
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    assert "credentials.json has a baseUrl that is not an http(s) URL" in broken.stdout

    (tmp_path / "credentials.json").chmod(0o644)
    done = await asyncio.to_thread(
        run, ["login", "--base-url", server.openai_base_url], env_for(tmp_path), KEY + "\n"
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE((tmp_path / "credentials.json").stat().st_mode) == 0o600
    (tmp_path / "credentials.json").chmod(0o644)
    shown = await asyncio.to_thread(run, ["login", "--status"], env_for(tmp_path))
    assert "others can read" in shown.stdout and KEY not in shown.stdout


async def test_a_key_the_environment_would_send_elsewhere_is_said_so(
    server: ScriptedProvider, tmp_path: Path
) -> None:
    """The key goes only to the base URL it was checked at: an environment that sends the
    provider's requests to another one does not get it."""
    env = env_for(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # a local server's
    done = await asyncio.to_thread(
        run, ["login", "--base-url", server.openai_base_url], env, KEY + "\n"
    )
    assert done.returncode == 0, done.stderr  # the local server needs no key
    assert (
        f"sends openai requests to http://127.0.0.1:9/v1 (OPENAI_BASE_URL), and this "
        f"key, checked at {server.openai_base_url}, goes only there"
    ) in done.stdout
    shown = await asyncio.to_thread(run, ["login", "--status"], env)
    assert "Key: none (the server needs none)" in shown.stdout
    assert (
        f"belongs to {server.openai_base_url}; it is not used for http://127.0.0.1:9/v1"
        in shown.stdout
    )

    official = env_for(tmp_path, OPENAI_BASE_URL="https://api.openai.com/v1")
    again = await asyncio.to_thread(
        run, ["login", "--base-url", server.openai_base_url], official, KEY + "\n"
    )
    assert again.returncode == 1  # the agent would have no key for the official API
    assert "log in at https://api.openai.com/v1, or change the environment" in again.stderr
