"""Provider credentials stored by `acp-fsm login`, and how they meet the environment.

`$ACP_FSM_HOME/credentials.json` (mode 0600, written atomically) holds one provider, its key
and, where it is not the provider's own, the base URL the key was checked at. The environment
takes precedence: the stored credentials apply only where the environment configures no
provider of its own, or configures the stored one without its key, and the key goes only to
the base URL it was checked at (docs/auth.md). The file is read again at each use (in a
worker thread, `read`), so a login in a terminal while the agent runs takes effect at once;
only a regular file of at most `MAX_FILE_BYTES` is read (`acp_fsm.small_files`).
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from acp_fsm import redact
from acp_fsm.errors import LoginRequired
from acp_fsm.providers.config import (
    ANTHROPIC,
    API_VARIABLE,
    CHAT,
    DEFAULT_BASE_URLS,
    KEY_VARIABLES,
    OPENAI,
    OPENAI_RESPONSES,
    RESPONSES,
    URL_VARIABLES,
    ConfigError,
    ProviderConfig,
    load_config,
)
from acp_fsm.small_files import NotRegular, read_head

if TYPE_CHECKING:
    from acp_fsm.blocking import Shared
    from acp_fsm.initialize import ClientInfo

FILE = "credentials.json"
FILE_MODE = 0o600
# The largest credentials file read: a provider, a key and a URL take well under 1 KiB.
MAX_FILE_BYTES = 64 * 1024
# A key stored while the agent runs (a login in a terminal) is a secret at once: the file is
# looked at this often, at most, when secrets are asked for, and read again if it changed.
CHECK_EVERY_S = 0.1
# How to give the agent a key, in one clause, for a client offered the terminal login and for
# one that was not (docs/auth.md); and every way, as steps.
BY_TERMINAL = "use the editor's log-in for acp-fsm (it runs `acp-fsm login`)"
BY_HAND = (
    "run `acp-fsm login` in a terminal, or set ANTHROPIC_API_KEY or OPENAI_API_KEY in "
    "the agent's environment"
)
STEPS = (
    "To give acp-fsm a model provider's key, either:\n"
    "- {login}, choose the provider and paste the key: it is checked with the provider "
    "and stored for the agent, which uses it at once;\n"
    "- or set ANTHROPIC_API_KEY (Anthropic) or OPENAI_API_KEY (OpenAI; choose it with "
    "ACP_FSM_PROVIDER=openai) in the agent's environment, in the editor's settings;\n"
    "- or point OPENAI_BASE_URL at a local OpenAI-compatible server, which needs no key."
)
LOGIN_STEP = {
    True: "use the editor's log-in for acp-fsm, which runs `acp-fsm login` in a terminal",
    False: "run `acp-fsm login` in a terminal",
}


class Stored(NamedTuple):
    provider: str  # "anthropic" or "openai"
    api_key: str  # empty for a server that needs none
    base_url: str | None = None  # where it was checked, when not the provider's own API
    api: str | None = None  # OpenAI's API chosen at login (ACP_FSM_OPENAI_API), if one was

    def __repr__(self) -> str:
        return (
            f"Stored({self.provider}, key={'set' if self.api_key else 'none'}, "
            f"base_url={self.base_url!r}, api={self.api!r})"
        )

    @property
    def url(self) -> str:
        """Where the key was checked: the only base URL it is sent to."""
        return (self.base_url or DEFAULT_BASE_URLS[self.provider]).rstrip("/")


class InForce(NamedTuple):
    """The provider configuration in force, as read at one moment: the environment, with
    what the stored file fills in."""

    config: ProviderConfig | None  # None: a setting is malformed (`error` names it)
    error: str = ""
    stored: Stored | None = None
    problem: str | None = None  # what is wrong with the stored file, if it cannot be used
    endpoint: int = 0  # the editor's endpoint as read (`llm_providers.EditorEndpoint.version`)

    @property
    def needs_login(self) -> bool:
        """No key for a provider's own API (a malformed setting is not a login matter: the
        prompt names the setting)."""
        return self.config is not None and needs_login(self.config)

    def refusal(self, client: ClientInfo | None) -> LoginRequired:
        """The refusal worded for `client` (answered as auth_required, -32000): one sentence
        naming the login it was offered in `initialize`, and every way in `data.details`
        (some clients show only `data.reason` or `data.details`, others only the message)."""
        terminal = client is not None and client.offers_terminal_login
        way = BY_TERMINAL if terminal else BY_HAND
        details = STEPS.format(login=LOGIN_STEP[terminal])
        if self.problem:  # its name only: the editor is never told a path of the agent's data
            details += f"\nNote: the stored {FILE} {self.problem}."
        return LoginRequired(
            f"no API key is configured; {way}.",
            data={"reason": f"No API key is configured: {way}.", "details": details},
        )


def path() -> Path:
    from acp_fsm.sessions_db import default_path

    return default_path().with_name(FILE)


def inspect() -> tuple[Stored | None, str | None]:
    """The stored credentials, or what is wrong with the file (said of it: "is a named
    pipe, not a regular file"; the editor is told its name, the terminal its path), or
    (None, None) when there is none.
    Only a regular file is read, at most `MAX_FILE_BYTES` of it: a named pipe or a device in
    its place is refused, never waited on. Learns nothing (it runs in worker threads too)."""
    try:
        head = read_head(path(), MAX_FILE_BYTES)
    except FileNotFoundError:
        return None, None
    except NotRegular as exc:
        return None, f"is a {exc.kind}, not a regular file"
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror or type(exc).__name__}"
    if head.cut:
        return None, (
            f"is {head.size:,} bytes, more than credentials take ({MAX_FILE_BYTES:,} at most)"
        )
    try:
        data = json.loads(head.data.decode("utf-8"))
    except ValueError as exc:  # a UnicodeDecodeError too
        return None, f"cannot be read: {exc}"
    if not isinstance(data, dict):
        return None, "is not a JSON object"
    provider, key, url = data.get("provider"), data.get("apiKey") or "", data.get("baseUrl")
    if provider not in (ANTHROPIC, OPENAI) or not isinstance(key, str):
        return None, "names no provider and key acp-fsm knows"
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        return None, "has a baseUrl that is not an http(s) URL"
    api = data.get("api")  # liberal: an API this version does not know is left to the default
    return Stored(provider, key, url, api if api in (CHAT, RESPONSES) else None), None


def learn(stored: Stored | None) -> None:
    """Scrub the stored key from now on, like the environment's keys (on the event loop's
    thread: `redact` is not shared with others)."""
    if stored is not None and stored.api_key:
        redact.also_secret(stored.api_key)


def save(stored: Stored) -> Path:
    """Write the credentials atomically, readable by the user only; the file's path. Raises
    OSError when the data directory cannot take them."""
    from acp_fsm.system.atomic_write import atomic_write  # `acp-fsm login` only

    target = path()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body = {"provider": stored.provider, "apiKey": stored.api_key}
    if stored.base_url:
        body["baseUrl"] = stored.base_url
    if stored.api:
        body["api"] = stored.api
    atomic_write(target, json.dumps(body), mode=FILE_MODE)
    directory = os.open(target.parent, os.O_RDONLY)  # the rename itself survives a crash
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return target


def remove() -> bool:
    """Forget the stored credentials; whether there were any. Raises OSError when the file
    cannot be removed."""
    try:
        path().unlink()
    except FileNotFoundError:
        return False
    return True


def configured_provider(env: Mapping[str, str]) -> str | None:
    """The provider the environment itself configures, by the rule `load_config` applies:
    named by ACP_FSM_PROVIDER, else Anthropic for its key, else OpenAI for its key or base URL
    (a local server needs no key). None: the environment configures none."""
    named = env.get("ACP_FSM_PROVIDER", "").strip().lower()
    if named:
        return OPENAI if named == OPENAI_RESPONSES else named
    if env.get(KEY_VARIABLES[ANTHROPIC]):
        return ANTHROPIC
    if env.get(KEY_VARIABLES[OPENAI]) or env.get(URL_VARIABLES[OPENAI]):
        return OPENAI
    return None


def elsewhere(env: Mapping[str, str], stored: Stored) -> str | None:
    """The base URL the environment sets for the stored provider when it is another than
    the one the stored key was checked at (None: it sets none, or that one)."""
    url = (env.get(URL_VARIABLES[stored.provider]) or "").rstrip("/")
    return url if url and url != stored.url else None


def environment(env: Mapping[str, str], stored: Stored | None) -> Mapping[str, str]:
    """The environment with the stored credentials filled in: where the environment
    configures no provider, the stored one; where it configures none or the stored one
    without its key, the key and its base URL, unless the environment sends that provider
    to another URL: the key goes only where it was checked. Otherwise the environment as it
    is."""
    if stored is None:
        return env
    env = dict(env)
    provider = configured_provider(env)
    if provider not in (None, stored.provider) or env.get(KEY_VARIABLES[stored.provider]):
        return env  # the environment's own configuration wins
    env.setdefault("ACP_FSM_PROVIDER", stored.provider)
    if stored.api:
        env.setdefault(API_VARIABLE, stored.api)
    if elsewhere(env, stored) is not None:
        return env  # never sent to a server it was not checked with (docs/auth.md)
    if stored.api_key:
        env[KEY_VARIABLES[stored.provider]] = stored.api_key
    if stored.base_url:
        env[URL_VARIABLES[stored.provider]] = stored.base_url
    return env


def in_force(env: Mapping[str, str] | None = None) -> InForce:
    """The provider configuration in force now: the environment (`os.environ` unless `env`
    is given), then the stored credentials. Reads the file: off the event loop, `read`."""
    from acp_fsm.llm_providers import EDITOR  # the endpoint the editor set, if it did

    stored, problem = inspect()
    try:
        config = load_config(
            EDITOR.environ(environment(os.environ if env is None else env, stored))
        )
    except ConfigError as exc:
        return InForce(None, str(exc), stored, problem, EDITOR.version)
    return InForce(EDITOR.applied(config), "", stored, problem, EDITOR.version)


async def read() -> InForce:
    """`in_force`, read in a worker thread (one read for those who ask at once, each one
    started after they asked: `blocking.Shared`): a slow file system never holds up the event
    loop. The stored key is a secret from then on."""
    found = await _shared_read()(None)
    learn(found.stored)
    return found


@cache
def _shared_read() -> Shared[InForce]:
    """The shared reads of `read`, made at its first use: `in_force` is also on the startup
    path, before asyncio is imported."""
    from acp_fsm.blocking import Shared

    return Shared(in_force)


def needs_login(config: ProviderConfig) -> bool:
    """No key for a provider's own API (a local server may need none; the editor's headers,
    `providers/set`, carry their own)."""
    return not config.api_key and not config.headers and config.official


def status() -> tuple[str, bool]:
    """Which provider is configured and where its key comes from, in words (never the key),
    and whether a model call could be made."""
    env = dict(os.environ)
    found = in_force(env)
    notes = [f"Note: {path()} {found.problem}."] if found.problem else []
    if found.stored is not None and (url := elsewhere(env, found.stored)) is not None:
        variable = URL_VARIABLES[found.stored.provider]
        notes.append(
            f"Note: the key stored by acp-fsm login in {path()} belongs to "
            f"{found.stored.url}; it is not used for {url} ({variable})."
        )
    if found.config is None:
        return "\n".join([f"The configuration is not usable: {found.error}", *notes]), False
    config = found.config
    if needs_login(config):
        return "\n".join(
            [
                "Not logged in: no API key is configured. "
                + STEPS.format(
                    login="run `acp-fsm login` (an editor's log-in for acp-fsm runs it)"
                ),
                *notes,
            ]
        ), False
    variable = KEY_VARIABLES[config.provider]
    if env.get(variable):
        where = f"from the environment ({variable})"
    elif config.api_key:
        where = f"stored by acp-fsm login in {path()}, for {config.base_url} only"
        if stat.S_IMODE(path().stat().st_mode) & 0o077:
            notes.append(f"Note: others can read {path()}: `chmod 600` it.")
    else:
        where = "none (the server needs none)"
    url = "" if config.base_url == DEFAULT_BASE_URLS[config.provider] else f" at {config.base_url}"
    api = " (Responses API)" if config.api == RESPONSES else ""
    return "\n".join(
        [f"Provider: {config.provider}{api}{url}, model {config.model}. Key: {where}.", *notes]
    ), True


class _Watch:
    """The stored file as last seen, for `redact` (see `CHECK_EVERY_S`)."""

    checked_at = float("-inf")
    seen: tuple[int, int, int] | None = None

    @classmethod
    def refresh(cls) -> None:
        now = time.monotonic()
        if now - cls.checked_at < CHECK_EVERY_S:
            return
        cls.checked_at = now
        try:
            found = os.stat(path())
        except OSError:
            return
        seen = (found.st_mtime_ns, found.st_size, found.st_ino)
        if seen != cls.seen:
            cls.seen = seen
            learn(inspect()[0])


redact.on_lookup(_Watch.refresh)
