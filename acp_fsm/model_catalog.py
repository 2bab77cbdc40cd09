"""The models the configured provider offers, for the model picker (docs/settings.md).

`ACP_FSM_MODELS` (comma-separated) is the list when set. Otherwise the list comes from the
provider's models endpoint (OpenAI-compatible `GET {base}/models`, Anthropic
`GET {base}/v1/models`: `acp_fsm.model_listing`), fetched in the background with a short
timeout and kept for a day in `$ACP_FSM_HOME/models.json`. Until a fetch succeeds, the list is
the last one kept, else the configured model and a short built-in list. A session answers at
once with what is known and is told of a better list later (`config_option_update`); but on
a compatible server with no model configured and none of its models known, `session/new`
waits for its list (`listed`: the server's models are its own, and its first is the default).
What is known is read without asyncio or the logging library: the startup path answers the
first `session/new` with it (`acp_fsm.early_session`), or leaves it to the full path when it
`awaits_listing`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from acp_fsm.credentials import needs_login
from acp_fsm.providers.config import ANTHROPIC, ProviderConfig

if TYPE_CHECKING:
    import asyncio

    from acp_fsm.compatible import ServerInfo

CACHE_FILE = "models.json"
CACHE_TTL_S = 24 * 3600
RETRY_AFTER_S = 60.0  # a failed fetch is not tried again sooner
BUILT_IN = {
    ANTHROPIC: ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
    "openai": ("gpt-5", "gpt-5-mini", "gpt-4.1"),
}


def override() -> list[str] | None:
    """`ACP_FSM_MODELS` as a list, when set."""
    raw = os.environ.get("ACP_FSM_MODELS", "")
    models = [m.strip() for m in raw.split(",") if m.strip()]
    return list(dict.fromkeys(models)) or None


def fallback(config: ProviderConfig) -> list[str]:
    """The configured model, then the built-in list for the provider's own API (a local
    OpenAI-compatible server has models of its own)."""
    built_in = BUILT_IN[config.provider] if config.official else ()
    return list(dict.fromkeys([config.model, *built_in]))


def _cache_path() -> Path:
    from acp_fsm.sessions_db import default_path

    return default_path().with_name(CACHE_FILE)


def _cache_key(config: ProviderConfig) -> str:
    return f"{config.provider} {config.base_url}"


class Catalog:
    """The model list of this process's provider, the windows a compatible server states,
    and the fetch that refreshes them."""

    def __init__(self) -> None:
        self._models: dict[str, tuple[float, list[str]]] = {}  # cache key -> (when, ids)
        self._info: dict[str, ServerInfo] = {}  # what compatible servers said, this process
        self._asked_again: set[tuple[str, str]] = set()  # (cache key, model) once loaded
        self._waited: set[str] = set()  # servers a model call has waited for once
        self._loaded = False
        self._fetching: asyncio.Task[None] | None = None
        self._failed_at = 0.0
        self._unlisted: dict[str, str] = {}  # cache key -> why its last fetch gave no list
        self._on_change: list[Callable[[], None]] = []  # told if the running fetch changes it

    def models(self, config: ProviderConfig) -> list[str]:
        """What is known now, without waiting."""
        if (chosen := override()) is not None:
            return chosen
        self._load()
        known = self._models.get(_cache_key(config))
        return list(known[1]) if known else fallback(config)

    def default_model(self, config: ProviderConfig) -> str:
        """The model of a session that chose none: ACP_FSM_MODEL, else on a compatible server
        the first it lists (a local server serves its own models, never OpenAI's)."""
        if config.model_set or config.official:
            return config.model
        return self.models(config)[0]

    def awaits_listing(self, config: ProviderConfig) -> bool:
        """Whether a session's answer waits for the models list: a compatible server, no model
        configured (ACP_FSM_MODEL, ACP_FSM_MODELS) and none of its models known (none kept,
        none listed by this process), so that the picker and the first call have the server's
        own model, not the provider's default name."""
        if config.official or config.model_set or override() is not None:
            return False
        self._load()
        return _cache_key(config) not in self._models

    async def listed(self, config: ProviderConfig) -> str | None:
        """Before a session's answer: when it `awaits_listing`, the listing waited for (within
        its own bound, `model_listing.listing_timeout_s`; one that failed is not asked again
        for `RETRY_AFTER_S`); what the user is to be told when it gave no model."""
        if not self.awaits_listing(config):
            return None
        if (fetch := self._fetched(config)) is not None:  # another session's, maybe
            await fetch
        if not self.awaits_listing(config):
            return None
        why = self._unlisted.get(_cache_key(config), "no answer")
        return (
            f"The server at {config.base_url} did not list its models ({why}): calls go to "
            f"{config.model!r}, a name it may not serve. Set ACP_FSM_MODEL to a model it serves."
        )

    def window(self, config: ProviderConfig, model: str) -> int | None:
        """The context window a compatible server states for `model`, if it did."""
        info = self._info.get(_cache_key(config))
        return None if info is None else info.window(model)

    def refresh_soon(self, config: ProviderConfig, on_change: Callable[[], None]) -> None:
        """Fetch the list in the background unless it is fresh or overridden; `on_change`
        is called if the fetch under way (this one or an earlier) changes it. A compatible
        server is asked once per process whatever the cache holds (its windows are never
        stored: the server may be started again with another)."""
        if self._fetching is not None and not self._fetching.done():
            if on_change not in self._on_change:  # one `announce_options` tells every session
                self._on_change.append(on_change)
            return
        key = _cache_key(config)
        if (config.official and override() is not None) or key in self._info:
            return
        self._load()
        known = self._models.get(key)
        now = time.time()
        fresh = known is not None and now - known[0] < CACHE_TTL_S and config.official
        if fresh or now - self._failed_at < RETRY_AFTER_S or needs_login(config):
            return  # without a key there is nothing to authenticate with: the turn says so
        self._start(config, on_change)

    def _start(self, config: ProviderConfig, on_change: Callable[[], None]) -> None:
        import asyncio

        self._on_change = [on_change]
        self._fetching = asyncio.ensure_future(self._fetch(config))

    def pending(self, config: ProviderConfig) -> asyncio.Future[None] | None:
        """What to wait for before a model call to a compatible server: the fetch of what it
        says of itself (its default model, its window), started if it was not yet asked;
        None for the providers' own APIs, once it answered or was waited for once (a server
        that does not answer costs the first call its bound, not every call)."""
        if config.official or _cache_key(config) in self._waited:
            return None  # a later fetch (after a failure) is not waited for at every call
        return self._fetched(config)

    def _fetched(self, config: ProviderConfig) -> asyncio.Future[None] | None:
        """The fetch under way, started if due, to wait for (a cancelled wait leaves it
        running); None when none is."""
        import asyncio

        self.refresh_soon(config, lambda: None)
        if self._fetching is None or self._fetching.done():
            return None
        self._waited.add(_cache_key(config))  # the first model call: nothing left to wait for
        return asyncio.shield(self._fetching)

    def after_call(self, config: ProviderConfig, model: str) -> None:
        """A model call went through: a server that states the window of loaded models only
        (Ollama, LM Studio) is asked again, once, now that `model` is loaded."""
        key = _cache_key(config)
        info = self._info.get(key)
        if info is None or model not in info.loaded_only or (key, model) in self._asked_again:
            return
        self._asked_again.add((key, model))
        self._waited.discard(key)  # the next call waits for this answer, once
        if self._fetching is None or self._fetching.done():
            self._start(config, lambda: None)

    async def _fetch(self, config: ProviderConfig) -> None:
        import asyncio

        import structlog

        from acp_fsm.model_listing import FETCH_TIMEOUT_S, listing_timeout_s, server_info

        log = structlog.get_logger("models")
        before = self.models(config)
        limit = listing_timeout_s(config)
        try:
            info = await asyncio.wait_for(server_info(config, limit), FETCH_TIMEOUT_S)
        except Exception as exc:  # any failure keeps what is known
            self._failed_at = time.time()
            late = isinstance(exc, TimeoutError)
            error = f"no answer within {limit:g} s" if late else str(exc) or type(exc).__name__
            self._unlisted[_cache_key(config)] = error
            log.info("models_not_listed", provider=config.provider, error=error)
            return
        if not config.official:
            self._info[_cache_key(config)] = info
            log.info(
                "server_described",
                windows=info.windows,
                every_model=info.every_model,
                loaded_only=sorted(info.loaded_only),
            )
        if not info.models:
            self._failed_at = time.time()
            self._unlisted[_cache_key(config)] = "it lists none"
            return
        self._unlisted.pop(_cache_key(config), None)
        self._models[_cache_key(config)] = (time.time(), info.models)
        if (unsaved := self._save()) is not None:
            log.info("models_not_cached", error=unsaved)
        log.info("models_listed", provider=config.provider, count=len(info.models))
        if self.models(config) != before:
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
                if (
                    isinstance(when, int | float)
                    and isinstance(models, list)
                    and models
                    and all(isinstance(m, str) for m in models)
                ):
                    self._models[key] = (float(when), models)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass  # no cache yet, or one this version cannot read: fetched again

    def _save(self) -> str | None:
        """Keep the lists for a day; what failed, if anything."""
        from acp_fsm.system.atomic_write import atomic_write

        path = _cache_path()
        data = {
            key: {"fetchedAt": when, "models": models}
            for key, (when, models) in self._models.items()
        }
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write(path, json.dumps(data))
        except OSError as exc:
            return str(exc)
        return None


CATALOG = Catalog()
