"""Provider configuration from the environment (names are a public contract, see README)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import NamedTuple

OPENAI = "openai"
ANTHROPIC = "anthropic"
# OpenAI's two APIs (ACP_FSM_OPENAI_API; ACP_FSM_PROVIDER=openai-responses is OpenAI on the
# Responses API): Chat Completions, and Responses (reasoning kept between calls).
CHAT = "chat"
RESPONSES = "responses"
OPENAI_RESPONSES = "openai-responses"
API_VARIABLE = "ACP_FSM_OPENAI_API"
REASONING = r"(^|/)(o\d|gpt-5(?!.*chat)|codex|gpt-oss)"  # OpenAI's models that reason
# OpenAI's models served on the Responses API only: the codex models and the -pro ones
# (https://platform.openai.com/docs/models); a call of one to OpenAI goes there unless
# ACP_FSM_OPENAI_API says otherwise.
RESPONSES_ONLY = r"(^|/)(codex-|gpt-[\d.]+-codex|(o\d|gpt-[\d.]+)-pro\b)"
DEFAULT_MODELS = {ANTHROPIC: "claude-sonnet-4-5", OPENAI: "gpt-5"}
# Context window assumed for usage reports when ACP_FSM_CONTEXT_WINDOW is not set.
DEFAULT_CONTEXT_WINDOWS = {ANTHROPIC: 200_000, OPENAI: 128_000}
DEFAULT_BASE_URLS = {ANTHROPIC: "https://api.anthropic.com", OPENAI: "https://api.openai.com/v1"}
KEY_VARIABLES = {ANTHROPIC: "ANTHROPIC_API_KEY", OPENAI: "OPENAI_API_KEY"}
OFFICIAL_HOSTS = ("api.openai.com", "api.anthropic.com")  # the providers' own APIs
URL_VARIABLES = {ANTHROPIC: "ANTHROPIC_BASE_URL", OPENAI: "OPENAI_BASE_URL"}


class ConfigError(ValueError):
    """A provider setting is missing or malformed; the message names the variable."""


class ProviderConfig(NamedTuple):
    """The provider settings a model call uses (a NamedTuple: `session/new` reads them, and a
    dataclass would cost the startup budget more; see bench/startup.py)."""

    provider: str
    model: str
    base_url: str
    api_key: str | None = None  # never in repr
    max_tokens: int = 8192
    context_window: int = 128_000
    max_retries: int = 2
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 180.0
    retry_base_s: float = 0.5
    retry_max_s: float = 8.0
    window_set: bool = False  # context_window is the user's (ACP_FSM_CONTEXT_WINDOW)
    max_tokens_set: bool = False  # max_tokens is the user's (ACP_FSM_MAX_TOKENS)
    model_set: bool = False  # model is the user's (ACP_FSM_MODEL), not the provider default
    api: str = CHAT  # OpenAI's API: CHAT or RESPONSES (ACP_FSM_OPENAI_API)
    api_set: bool = False  # api is the user's, for every model (else by `api_of`)
    # Sent with every request, after the agent's own (the editor's: `providers/set`); secrets.
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def official(self) -> bool:
        """Whether this is the provider's own API (else a compatible server: a local one, a
        proxy), whose models and context window are its own."""
        from urllib.parse import urlsplit

        return urlsplit(self.base_url).hostname in OFFICIAL_HOSTS

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"ProviderConfig({self.provider}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key={key})"
        )


def _number(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{name}={raw!r} is not a finite number")
    if value < minimum:
        raise ConfigError(f"{name}={raw!r} must be at least {minimum:g}")
    return value


def load_config(env: Mapping[str, str] | None = None) -> ProviderConfig:
    """Read ACP_FSM_PROVIDER, ACP_FSM_MODEL, the provider's key and base URL, and the limits."""
    env = os.environ if env is None else env
    provider = env.get("ACP_FSM_PROVIDER", "").strip().lower()
    if not provider:
        provider = ANTHROPIC if env.get("ANTHROPIC_API_KEY") else OPENAI
    api = env.get(API_VARIABLE, "").strip().lower() or CHAT
    responses = provider == OPENAI_RESPONSES
    if responses and api != RESPONSES and env.get(API_VARIABLE, "").strip():
        raise ConfigError(
            f"ACP_FSM_PROVIDER=openai-responses with {API_VARIABLE}={api!r}: the provider "
            "names the Responses API; set ACP_FSM_PROVIDER=openai to choose the API"
        )
    if responses:
        provider, api = OPENAI, RESPONSES
    if provider not in DEFAULT_MODELS:
        raise ConfigError(
            f"ACP_FSM_PROVIDER={provider!r}: expected 'openai', 'openai-responses' or 'anthropic'"
        )
    if api not in (CHAT, RESPONSES):
        raise ConfigError(f"{API_VARIABLE}={api!r}: expected 'chat' or 'responses'")
    base_url = (env.get(URL_VARIABLES[provider]) or DEFAULT_BASE_URLS[provider]).rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{URL_VARIABLES[provider]}={base_url!r} is not an http(s) URL")
    return ProviderConfig(
        provider=provider,
        model=env.get("ACP_FSM_MODEL", "").strip() or DEFAULT_MODELS[provider],
        model_set=bool(env.get("ACP_FSM_MODEL", "").strip()),
        base_url=base_url,
        api_key=env.get(KEY_VARIABLES[provider]) or None,
        max_tokens=int(_number(env, "ACP_FSM_MAX_TOKENS", 8192, minimum=1)),
        context_window=int(
            _number(env, "ACP_FSM_CONTEXT_WINDOW", DEFAULT_CONTEXT_WINDOWS[provider], minimum=1)
        ),
        max_retries=int(_number(env, "ACP_FSM_MAX_RETRIES", 2)),
        connect_timeout_s=_number(env, "ACP_FSM_CONNECT_TIMEOUT_MS", 10_000, minimum=1) / 1000,
        read_timeout_s=_number(env, "ACP_FSM_READ_TIMEOUT_MS", 180_000, minimum=1) / 1000,
        window_set=bool(env.get("ACP_FSM_CONTEXT_WINDOW", "").strip()),
        max_tokens_set=bool(env.get("ACP_FSM_MAX_TOKENS", "").strip()),
        api=api if provider == OPENAI else CHAT,
        api_set=provider == OPENAI and (responses or bool(env.get(API_VARIABLE, "").strip())),
    )


def responses_only(model: str) -> bool:
    """Whether `model` is one of OpenAI's models served on the Responses API only."""
    return re.search(RESPONSES_ONLY, model) is not None


def reasons(model: str) -> bool:
    """Whether `model` is one of OpenAI's reasoning models (the o-series, GPT-5 but its chat
    models, codex, gpt-oss)."""
    return re.search(REASONING, model) is not None


def api_of(config: ProviderConfig, model: str) -> str:
    """The API a call of `model` goes to: the one the user set, else on OpenAI's own API the
    Responses API for the models served only there, else Chat Completions (a compatible
    server, a proxy, serves its models as it says)."""
    if config.provider != OPENAI or config.api_set or not config.official:
        return config.api
    return RESPONSES if responses_only(model) else config.api
