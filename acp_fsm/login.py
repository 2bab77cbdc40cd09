"""`acp-fsm login`, `acp-fsm login --status` and `acp-fsm logout`: provider credentials from a
terminal (the one an editor opens for ACP's terminal login, or the user's own).

The key is read without echo, checked with one cheap authenticated request (the provider's
models endpoint) and stored by `acp_fsm.credentials`; nothing is stored unless the provider
accepted it. Exit status 0 means logged in: ACP's terminal login reads it so.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from typing import NamedTuple

from acp_fsm import credentials
from acp_fsm.providers.config import (
    ANTHROPIC,
    CHAT,
    DEFAULT_BASE_URLS,
    DEFAULT_MODELS,
    KEY_VARIABLES,
    OPENAI,
    RESPONSES,
    URL_VARIABLES,
    ProviderConfig,
)

CHECK_TIMEOUT_S = 15.0


class Choice(NamedTuple):
    label: str
    provider: str  # the wire format
    compatible: bool = False  # a server of the user's, at a base URL they give
    api: str | None = None  # OpenAI's API the agent is to use (ACP_FSM_OPENAI_API), if chosen


CHOICES = {
    "anthropic": Choice("Anthropic", ANTHROPIC),
    "openai": Choice("OpenAI", OPENAI),
    "openai-responses": Choice(
        "OpenAI on the Responses API (GPT-5, the codex models; reasoning kept between calls)",
        OPENAI,
        api=RESPONSES,
    ),
    "compatible": Choice(
        "An OpenAI-compatible server (Ollama, vLLM, LiteLLM, a proxy...)", OPENAI, compatible=True
    ),
}


class LoginFailed(Exception):
    """Why nothing was stored, in words for the user."""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="acp-fsm login",
        description="Log acp-fsm in to a model provider: the key is checked with the provider "
        "and stored in $ACP_FSM_HOME/credentials.json (readable by you only). "
        "Variables set in the environment take precedence over it.",
    )
    parser.add_argument(
        "--status",
        action="store_true",
        help="say which provider is configured and from where (never the key)",
    )
    parser.add_argument(
        "--provider",
        choices=sorted(CHOICES),
        help="skip the question (compatible: an OpenAI-compatible server)",
    )
    parser.add_argument("--base-url", help="the compatible server's base URL, with /v1")
    parser.add_argument(
        "--api",
        choices=(CHAT, RESPONSES),
        help="the compatible server's API: Chat Completions (the default) or Responses",
    )
    args = parser.parse_args(argv)
    if args.status:
        text, usable = credentials.status()
        print(text)
        return 0 if usable else 1
    if args.base_url and args.provider not in (None, "compatible"):
        parser.error(
            "--base-url is for --provider compatible (for Anthropic or OpenAI set "
            "ANTHROPIC_BASE_URL or OPENAI_BASE_URL)"
        )
    if args.api and args.provider not in (None, "compatible"):
        parser.error("--api is for --provider compatible (for OpenAI choose openai-responses)")
    try:
        chosen = args.provider or ("compatible" if args.base_url or args.api else None)
        return login(chosen, args.base_url, args.api)
    except (KeyboardInterrupt, EOFError):
        print("\nLogin cancelled: nothing was stored.", file=sys.stderr)
        return 1
    except LoginFailed as exc:
        print(f"{exc} Nothing was stored.", file=sys.stderr)
        return 1


def logout() -> int:
    """`acp-fsm logout`: forget the stored credentials (the environment's are the editor's)."""
    where = credentials.path()
    try:
        removed = credentials.remove()
    except OSError as exc:
        print(f"{where} could not be removed: {exc}", file=sys.stderr)
        return 1
    print(f"Logged out: removed {where}." if removed else f"Not logged in: there is no {where}.")
    present = [name for name in KEY_VARIABLES.values() if os.environ.get(name)]
    if present:
        print(f"The environment still sets {', '.join(present)}.")
    return 0


def login(choice_name: str | None, base_url: str | None, api: str | None = None) -> int:
    choice = CHOICES[choice_name] if choice_name else _ask_choice()
    if api is not None:
        choice = choice._replace(api=api)
    config = _config(choice, base_url)
    key = _read_key(optional=choice.compatible)
    config = config._replace(api_key=key or None)
    print(f"Checking the key with {config.base_url} ...", flush=True)
    count = asyncio.run(_check(config))
    default = DEFAULT_BASE_URLS[choice.provider]
    stored = credentials.Stored(
        choice.provider, key, None if config.base_url == default else config.base_url, choice.api
    )
    try:
        path = credentials.save(stored)
    except OSError as exc:
        raise LoginFailed(
            f"The provider accepted the key, but it could not be stored: {exc}."
        ) from None
    print(
        f"Logged in to {choice.label}: the provider accepted the key ({count} models). "
        f"Stored in {path}, readable by you only."
    )
    return _in_force(stored)


def _in_force(stored: credentials.Stored) -> int:
    """Say whether the environment lets the agent use what was stored: exit 1 when the agent
    would still have no key (an editor would ask to log in again and again)."""
    env_provider = credentials.configured_provider(os.environ)
    if env_provider not in (None, stored.provider) or os.environ.get(
        KEY_VARIABLES[stored.provider]
    ):
        named = "ACP_FSM_PROVIDER" if os.environ.get("ACP_FSM_PROVIDER") else "a key or base URL"
        unused = (
            f"But the agent's environment chooses {env_provider} ({named}) and has no "
            f"key for it, so this key is not used: log in to {env_provider}, or change "
            "the environment."
        )
        note = (
            f"Note: the environment configures {env_provider} itself ({named}); it takes "
            "precedence over what is stored."
        )
    elif (other := credentials.elsewhere(os.environ, stored)) is not None:
        sent = (
            f"the agent's environment sends {stored.provider} requests to {other} "
            f"({URL_VARIABLES[stored.provider]}), and this key, checked at {stored.url}, "
            "goes only there"
        )
        unused = f"But {sent}: log in at {other}, or change the environment."
        note = f"Note: {sent}; the agent sends {other} no key."
    else:
        return 0
    if credentials.in_force().needs_login:
        print(unused, file=sys.stderr)
        return 1
    print(note)
    return 0


def _ask_choice() -> Choice:
    names = list(CHOICES)
    print("Which provider should acp-fsm use?")
    for number, name in enumerate(names, 1):
        print(f"  {number}. {CHOICES[name].label}")
    while True:
        answer = _ask(f"Provider [1-{len(names)}, default 1]: ").strip().lower() or "1"
        if answer.isascii() and answer.isdigit() and 1 <= int(answer) <= len(names):
            return CHOICES[names[int(answer) - 1]]
        if answer in CHOICES:
            return CHOICES[answer]
        print(f"Please answer a number from 1 to {len(names)}.")


def _config(choice: Choice, base_url: str | None) -> ProviderConfig:
    """Where the key is checked: the compatible server's URL, or the provider's (its
    environment variable can point elsewhere, a proxy say)."""
    if choice.compatible:
        if base_url is not None and not _is_url(base_url):  # given on the command line
            raise LoginFailed(f"{base_url!r} is not an http(s) URL.")
        while base_url is None or not _is_url(base_url):
            if base_url:
                print(f"{base_url!r} is not an http(s) URL.")
            base_url = _ask(
                "Base URL of the server, with /v1 (e.g. http://localhost:11434/v1): "
            ).strip()
    else:
        base_url = (
            os.environ.get(URL_VARIABLES[choice.provider]) or DEFAULT_BASE_URLS[choice.provider]
        )
    return ProviderConfig(choice.provider, DEFAULT_MODELS[choice.provider], base_url.rstrip("/"))


def _is_url(text: str) -> bool:
    return text.startswith(("http://", "https://")) and len(text) > len("https://")


def _ask(prompt: str) -> str:
    """A line from the user (EOFError at the end of input)."""
    if sys.stdin.isatty():
        return input(prompt)
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def _read_key(*, optional: bool) -> str:
    """The key, never echoed: hidden at a terminal, else read from a piped stdin."""
    prompt = (
        "API key (hidden; empty if the server needs none): " if optional else "API key (hidden): "
    )
    while True:
        key = getpass.getpass(prompt) if sys.stdin.isatty() else _ask(prompt)
        key = key.strip()
        if not key.isprintable() or not key.isascii():
            print(
                "The key holds characters no key has (a control character?); paste it "
                "again, or press Ctrl+C to stop."
            )
        elif key or optional:
            return key
        else:
            print("The key is empty; paste it, or press Ctrl+C to stop.")


async def _check(config: ProviderConfig) -> int:
    """The number of models the provider lists with this key; `LoginFailed` if it refused
    it or could not be reached."""
    import aiohttp

    from acp_fsm.model_listing import ListingError, list_models

    try:
        models = await asyncio.wait_for(list_models(config, CHECK_TIMEOUT_S), CHECK_TIMEOUT_S)
    except ListingError as exc:
        if exc.status in (401, 403):
            raise LoginFailed(f"The provider refused the key (HTTP {exc.status}).") from None
        raise LoginFailed(f"The key could not be checked: {exc}.") from None
    except TimeoutError:
        raise LoginFailed(
            f"{config.base_url} did not answer within {CHECK_TIMEOUT_S:g} s."
        ) from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise LoginFailed(
            f"{config.base_url} could not be reached ({type(exc).__name__}: {exc})."
        ) from None
    return len(models)
