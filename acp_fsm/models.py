"""The models the configured provider offers, for the model picker (docs/settings.md).

`ACP_FSM_MODELS` (comma-separated) is the list when set. Otherwise the list comes from the
provider's models endpoint (OpenAI-compatible `GET {base}/models`, Anthropic
`GET {base}/v1/models`), fetched in the background with a short timeout and kept for a day
in `$ACP_FSM_HOME/models.json`. Until a fetch succeeds, the list is the last one kept, else the
configured model and a short built-in list. A session answers at once with what is known and is
told of a better list later (`config_option_update`).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm.credentials import needs_login
from acp_fsm.providers.config import ANTHROPIC, OFFICIAL_HOSTS, ProviderConfig

if TYPE_CHECKING:
    import aiohttp

log = structlog.get_logger("models")

CACHE_FILE = "models.json"
CACHE_TTL_S = 24 * 3600
FETCH_TIMEOUT_S = 5.0
RETRY_AFTER_S = 60.0  # a failed fetch is not tried again sooner
BUILT_IN = {
    ANTHROPIC: ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
    "openai": ("gpt-5", "gpt-5-mini", "gpt-4.1"),
}
# Ids of OpenAI models that do not chat (embeddings, speech, images, moderation, ...).
_NOT_CHAT = ("embedding", "tts", "whisper", "dall-e", "davinci", "babbage", "moderation",
             "image", "transcribe", "realtime", "audio", "search", "computer-use", "sora")


def override() -> list[str] | None:
    """`ACP_FSM_MODELS` as a list, when set."""
    raw = os.environ.get("ACP_FSM_MODELS", "")
    models = [m.strip() for m in raw.split(",") if m.strip()]
    return list(dict.fromkeys(models)) or None


def fallback(config: ProviderConfig) -> list[str]:
    """The configured model, then the built-in list for the provider's own API (a local
    OpenAI-compatible server has models of its own)."""
    official = any(host in config.base_url for host in OFFICIAL_HOSTS)
    return list(dict.fromkeys([config.model, *(BUILT_IN[config.provider] if official else ())]))


def _cache_path() -> Path:
    from acp_fsm.store import default_path

    return default_path().with_name(CACHE_FILE)


def _cache_key(config: ProviderConfig) -> str:
    return f"{config.provider} {config.base_url}"


class Catalog:
    """The model list of this process's provider, and the fetch that refreshes it."""

    def __init__(self) -> None:
        self._models: dict[str, tuple[float, list[str]]] = {}  # cache key -> (when, ids)
        self._loaded = False
        self._fetching: asyncio.Task[None] | None = None
        self._failed_at = 0.0
        self._on_change: list[Callable[[], None]] = []  # told if the running fetch changes it

    def models(self, config: ProviderConfig) -> list[str]:
        """What is known now, without waiting."""
        if (chosen := override()) is not None:
            return chosen
        self._load()
        known = self._models.get(_cache_key(config))
        return list(known[1]) if known else fallback(config)

    def refresh_soon(self, config: ProviderConfig, on_change: Callable[[], None]) -> None:
        """Fetch the list in the background unless it is fresh or overridden; `on_change`
        is called if the fetch under way (this one or an earlier) changes it."""
        if override() is not None:
            return
        if self._fetching is not None and not self._fetching.done():
            self._on_change.append(on_change)
            return
        self._load()
        known = self._models.get(_cache_key(config))
        now = time.time()
        if (known and now - known[0] < CACHE_TTL_S) or now - self._failed_at < RETRY_AFTER_S:
            return
        if needs_login(config):
            return  # nothing to authenticate with: the turn says what to set
        self._on_change = [on_change]
        self._fetching = asyncio.ensure_future(self._fetch(config))

    async def _fetch(self, config: ProviderConfig) -> None:
        before = self.models(config)
        try:
            models = await asyncio.wait_for(list_models(config), FETCH_TIMEOUT_S)
        except Exception as exc:  # any failure keeps what is known
            self._failed_at = time.time()
            log.info("models_not_listed", provider=config.provider, error=str(exc) or
                     type(exc).__name__)
            return
        if not models:
            self._failed_at = time.time()
            return
        self._models[_cache_key(config)] = (time.time(), models)
        self._save()
        log.info("models_listed", provider=config.provider, count=len(models))
        if models != before:
            for call in self._on_change:
                call()

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            data = json.loads(_cache_path().read_text(encoding="utf-8"))
            for key, entry in data.items():
                when, models = entry["fetchedAt"], entry["models"]
                if (isinstance(when, int | float) and isinstance(models, list) and models
                        and all(isinstance(m, str) for m in models)):
                    self._models[key] = (float(when), models)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass  # no cache yet, or one this version cannot read: fetched again

    def _save(self) -> None:
        from acp_fsm.tools.files import atomic_write

        path = _cache_path()
        data = {key: {"fetchedAt": when, "models": models}
                for key, (when, models) in self._models.items()}
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write(path, json.dumps(data))
        except OSError as exc:
            log.info("models_not_cached", error=str(exc))


async def list_models(config: ProviderConfig, timeout_s: float = FETCH_TIMEOUT_S) -> list[str]:
    """The provider's models, from one authenticated GET of its models endpoint (all
    Anthropic pages, each within `timeout_s`); `ListingError` or an aiohttp error when it
    fails."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=timeout_s)
    models: list[str] = []
    async with aiohttp.ClientSession(timeout=timeout) as http:
        if config.provider == ANTHROPIC:
            headers = {"anthropic-version": "2023-06-01"}
            if config.api_key:
                headers["x-api-key"] = config.api_key
            params: dict[str, str] = {"limit": "1000"}
            while True:
                page = await _get(http, f"{config.base_url}/v1/models", headers, params)
                models += [m["id"] for m in page.get("data") or () if _named(m)]
                if not page.get("has_more") or not page.get("last_id"):
                    return models
                params["after_id"] = str(page["last_id"])
        headers = {"authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        page = await _get(http, f"{config.base_url}/models", headers, {})
    models = [m["id"] for m in page.get("data") or () if _named(m)]
    return sorted(m for m in models if not any(word in m for word in _NOT_CHAT))


def _named(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("id"), str) and bool(entry["id"])


class ListingError(RuntimeError):
    """The models endpoint did not give a list; `status` is its HTTP status, if it answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


async def _get(http: aiohttp.ClientSession, url: str, headers: dict[str, str],
               params: dict[str, str]) -> dict[str, Any]:
    async with http.get(url, headers=headers, params=params) as response:
        if response.status != 200:
            raise ListingError(f"GET {url}: HTTP {response.status}", response.status)
        try:
            body = await response.json(content_type=None)
        except ValueError:
            body = None
    if not isinstance(body, dict):
        raise ListingError(f"GET {url}: the answer is not a JSON object", response.status)
    return body


CATALOG = Catalog()
