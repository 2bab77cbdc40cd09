"""Provider credentials stored by `acp-fsm login`, and how they meet the environment.

`$ACP_FSM_HOME/credentials.json` (mode 0600, written atomically) holds one provider, its key
and, for an OpenAI-compatible server, its base URL. The environment takes precedence: the
stored credentials apply only where the environment configures no provider, or configures the
same one without its key (docs/auth.md). The file is read again at each use, so a login in a
terminal while the agent runs takes effect at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from acp_fsm import redact
from acp_fsm.providers.config import (
    ANTHROPIC,
    DEFAULT_BASE_URLS,
    KEY_VARIABLES,
    OPENAI,
    URL_VARIABLES,
    ConfigError,
    ProviderConfig,
    load_config,
)

FILE = "credentials.json"
FILE_MODE = 0o600
OFFICIAL_HOSTS = ("api.openai.com", "api.anthropic.com")
LOGIN_NEEDED = (
    "Authentication required: no API key is configured. Log in with the editor's \"Log in\" "
    "(or run `acp-fsm login` in a terminal), or set ANTHROPIC_API_KEY (Anthropic) or "
    "OPENAI_API_KEY (OpenAI; choose it with ACP_FSM_PROVIDER=openai), or point "
    "OPENAI_BASE_URL at a local OpenAI-compatible server.")


class Stored(NamedTuple):
    provider: str  # "anthropic" or "openai"
    api_key: str  # empty for a server that needs none
    base_url: str | None = None  # an OpenAI-compatible server's, with /v1

    def __repr__(self) -> str:
        return f"Stored({self.provider}, key={'set' if self.api_key else 'none'}, " \
               f"base_url={self.base_url!r})"


def path() -> Path:
    from acp_fsm.store import default_path

    return default_path().with_name(FILE)


def load() -> Stored | None:
    """The stored credentials; None when there are none (or the file cannot be used)."""
    try:
        data = json.loads(path().read_text(encoding="utf-8"))
        stored = Stored(data["provider"], data.get("apiKey") or "", data.get("baseUrl"))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if stored.provider not in (ANTHROPIC, OPENAI) or not isinstance(stored.api_key, str):
        return None
    if stored.api_key:
        redact.also_secret(stored.api_key)  # never shown, stored or sent, like the env's
    return stored


def save(stored: Stored) -> Path:
    """Write the credentials atomically, readable by the user only; the file's path."""
    target = path()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body: dict[str, Any] = {"provider": stored.provider, "apiKey": stored.api_key}
    if stored.base_url:
        body["baseUrl"] = stored.base_url
    temporary = target.with_name(f".{FILE}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return target


def remove() -> bool:
    """Forget the stored credentials; whether there were any."""
    try:
        path().unlink()
    except FileNotFoundError:
        return False
    return True


def configured_provider(env: Mapping[str, str]) -> str | None:
    """The provider the environment itself configures, if any: named, or implied by a key or
    a base URL."""
    named = env.get("ACP_FSM_PROVIDER", "").strip().lower()
    if named:
        return named
    for provider in (ANTHROPIC, OPENAI):
        if env.get(KEY_VARIABLES[provider]) or env.get(URL_VARIABLES[provider]):
            return provider
    return None


def environment(env: Mapping[str, str] | None = None,
                stored: Stored | None = None) -> dict[str, str]:
    """The environment with the stored credentials filled in where it has none of its own."""
    env = dict(os.environ if env is None else env)
    stored = load() if stored is None else stored
    if stored is None:
        return env
    provider = configured_provider(env)
    if provider not in (None, stored.provider) or env.get(KEY_VARIABLES[stored.provider]):
        return env  # the environment's own configuration wins
    env.setdefault("ACP_FSM_PROVIDER", stored.provider)
    if stored.api_key:
        env[KEY_VARIABLES[stored.provider]] = stored.api_key
    if stored.base_url and not env.get(URL_VARIABLES[stored.provider]):
        env[URL_VARIABLES[stored.provider]] = stored.base_url
    return env


def provider_config() -> ProviderConfig:
    """The provider configuration in force: the environment, then the stored credentials.
    Raises `ConfigError` for a malformed setting."""
    return load_config(environment())


def needs_login(config: ProviderConfig) -> bool:
    """No key for a provider's own API (a local server may need none)."""
    return not config.api_key and any(host in config.base_url for host in OFFICIAL_HOSTS)


def login_needed() -> bool:
    """Whether the configuration in force lacks its key (a malformed one is not a login
    matter: the prompt names the setting)."""
    try:
        return needs_login(provider_config())
    except ConfigError:
        return False


def status() -> tuple[str, bool]:
    """Which provider is configured and where its key comes from, in words (never the key),
    and whether a model call could be made."""
    env = dict(os.environ)
    try:
        config = load_config(environment(env))
    except ConfigError as exc:
        return f"The configuration is not usable: {exc}", False
    if needs_login(config):
        return ("Not logged in: no API key is configured. Run `acp-fsm login`, or set "
                "ANTHROPIC_API_KEY or OPENAI_API_KEY.", False)
    variable = KEY_VARIABLES[config.provider]
    if env.get(variable):
        where = f"from the environment ({variable})"
    elif config.api_key:
        where = f"stored by acp-fsm login in {path()}"
    else:
        where = "none (the server needs none)"
    url = "" if config.base_url == DEFAULT_BASE_URLS[config.provider] else \
        f" at {config.base_url}"
    return f"Provider: {config.provider}{url}, model {config.model}. Key: {where}.", True
