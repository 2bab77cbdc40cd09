"""Asking a provider which models it serves (and a compatible server, on either API, what it
states of each: `acp_fsm.compatible`): for the model picker (`acp_fsm.model_catalog`) and for
the check of a key at login."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_fsm.compatible import ListingError as ListingError  # login checks a key with it
from acp_fsm.compatible import ServerInfo, get_json, named, openai_entries, probe
from acp_fsm.providers.config import ANTHROPIC, ProviderConfig
from acp_fsm.warm import aiohttp_imported

if TYPE_CHECKING:
    import aiohttp

FETCH_TIMEOUT_S = 5.0  # a listing's longest, connecting included (`listing_timeout_s`)

# Ids of OpenAI models that do not chat (embeddings, speech, images, moderation, ...).
_NOT_CHAT = (
    "embedding",
    "tts",
    "whisper",
    "dall-e",
    "davinci",
    "babbage",
    "moderation",
    "image",
    "transcribe",
    "realtime",
    "audio",
    "search",
    "computer-use",
    "sora",
)


def listing_timeout_s(config: ProviderConfig) -> float:
    """How long a listing may take, connecting included: the connect limit
    (ACP_FSM_CONNECT_TIMEOUT_MS), at most `FETCH_TIMEOUT_S`. A server answers it from what it
    holds, at once once reached; the first call to a compatible server waits for it, and so
    waits no longer than the user allows for reaching the server (docs/local-servers.md)."""
    return min(FETCH_TIMEOUT_S, config.connect_timeout_s)


async def list_models(config: ProviderConfig, timeout_s: float = FETCH_TIMEOUT_S) -> list[str]:
    """The provider's models, from one authenticated GET of its models endpoint (all
    Anthropic pages, each within `timeout_s`); `ListingError` or an aiohttp error when it
    fails."""
    return (await server_info(config, timeout_s)).models


async def server_info(config: ProviderConfig, timeout_s: float = FETCH_TIMEOUT_S) -> ServerInfo:
    """The provider's models and, from a compatible server (on either API: llama.cpp's serves
    both), the windows it states, each GET within `timeout_s` from its connecting on; OpenAI
    lists are rid of models that do not chat. OpenAI's own list is sorted; a compatible
    server's keeps its order (its first model is the default, see `Catalog.default_model`)."""
    await aiohttp_imported()  # off the loop (acp_fsm.warm)
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        if config.provider == ANTHROPIC:
            headers = {"anthropic-version": "2023-06-01"}
            if config.api_key:
                headers["x-api-key"] = config.api_key
            headers.update(config.headers)  # the editor's (`llm_providers`)
            listing = _anthropic_entries(http, config, headers)
        else:
            headers = {"authorization": f"Bearer {config.api_key}"} if config.api_key else {}
            headers.update(config.headers)
            listing = openai_entries(http, config, headers)
        if config.official:  # states no window: the provider's own API
            info = ServerInfo([m["id"] for m in await listing], {})
        else:
            info = await probe(http, config, headers, listing)
    if config.provider == ANTHROPIC:
        return info
    chat = [m for m in info.models if not any(word in m for word in _NOT_CHAT)]
    return info._replace(models=sorted(chat) if config.official else chat)


async def _anthropic_entries(
    http: aiohttp.ClientSession, config: ProviderConfig, headers: dict[str, str]
) -> list[dict[str, Any]]:
    """Every page of Anthropic's `GET {base}/v1/models`."""
    params: dict[str, str] = {"limit": "1000"}
    models: list[dict[str, Any]] = []
    while True:
        page = await get_json(http, f"{config.base_url}/v1/models", headers, params)
        models += named(page)
        if not page.get("has_more") or not page.get("last_id"):
            return models
        params["after_id"] = str(page["last_id"])
