"""What a compatible server (a local one: llama.cpp, Ollama, vLLM, LM Studio, llama-cpp-python;
or a proxy) tells of itself: the models it serves, in its own order, and the context window it
gives each, where it says (docs/local-servers.md).

Its model list (OpenAI-compatible `GET {base}/models`, where vLLM adds `max_model_len` to each;
or Anthropic's `GET {base}/v1/models`, which llama.cpp's server answers too) is asked at the
same time as the other servers' own endpoints, each answering only on its server: llama.cpp's
`GET /props` (`default_generation_settings.n_ctx`, the window of one slot), Ollama's
`GET /api/ps` (`context_length` of each loaded model) and LM Studio's `GET /api/v0/models`
(`loaded_context_length` of each loaded model). llama-cpp-python states no window:
ACP_FSM_CONTEXT_WINDOW is the only way to know it. Ollama and LM Studio state the window of
loaded models only, so a model not loaded yet is asked about again after a call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import aiohttp

    from acp_fsm.providers.config import ProviderConfig


# The other servers' endpoints answer at once where they exist: a server that takes longer
# holds up the model list no more than this (nor than the listing's own bound).
OPTIONAL_TIMEOUT_S = 2.0


class ServerInfo(NamedTuple):
    """A compatible server's models and the windows it states."""

    models: list[str]  # as the server lists them
    windows: dict[str, int]  # model id -> context window, where stated
    every_model: int | None = None  # a window for every model (llama.cpp serves one)
    loaded_only: frozenset[str] = frozenset()  # models whose window is stated once loaded

    def window(self, model: str) -> int | None:
        return self.windows.get(model, self.every_model)


class ListingError(RuntimeError):
    """The models endpoint did not give a list; `status` is its HTTP status, if it answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def root_of(base_url: str) -> str:
    """The server's root: its base URL without the `/v1` of the OpenAI-compatible API."""
    return base_url.removesuffix("/v1")


async def get_json(
    http: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    params: dict[str, str] | None = None,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """A JSON object from a GET (within `timeout_s`, else the session's limit);
    `ListingError` for any other answer."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=timeout_s) if timeout_s else http.timeout
    async with http.get(url, headers=headers, params=params or {}, timeout=timeout) as response:
        if response.status != 200:
            raise ListingError(f"GET {url}: HTTP {response.status}", response.status)
        try:
            body = await response.json(content_type=None)
        except ValueError:
            body = None
    if not isinstance(body, dict):
        raise ListingError(f"GET {url}: the answer is not a JSON object", response.status)
    return body


async def probe(
    http: aiohttp.ClientSession,
    config: ProviderConfig,
    headers: dict[str, str],
    listing: Awaitable[list[dict[str, Any]]] | None = None,
) -> ServerInfo:
    """Ask the server at `config.base_url` for its models (`listing`, the entries of its list;
    by default its OpenAI-compatible one) and windows, all at once; a failed listing raises,
    a server that answers none of the other endpoints states none."""
    root = root_of(config.base_url)
    # within the listing's bound too: one that hangs then leaves the list as it came
    optional_s = min(OPTIONAL_TIMEOUT_S, http.timeout.total or OPTIONAL_TIMEOUT_S)
    entries, props, ollama, lm_studio = await asyncio.gather(
        listing or openai_entries(http, config, headers),
        *(
            _optional(get_json(http, f"{root}{path}", headers, timeout_s=optional_s))
            for path in ("/props", "/api/ps", "/api/v0/models")
        ),
    )
    windows = {m["id"]: m["max_model_len"] for m in entries if _size(m.get("max_model_len"))}
    loaded_only: set[str] = set()
    if ollama is not None:  # only loaded models are listed
        for model in ollama.get("models") or ():
            if isinstance(model, dict) and _size(model.get("context_length")):
                for name in {model.get("name"), model.get("model")} - {None}:
                    windows[str(name)] = model["context_length"]
        loaded_only.update(m["id"] for m in entries if m["id"] not in windows)
    for model in named(lm_studio or {}):
        if _size(model.get("loaded_context_length")):
            windows[model["id"]] = model["loaded_context_length"]
        else:
            loaded_only.add(model["id"])
    settings = (props or {}).get("default_generation_settings")
    every = settings.get("n_ctx") if isinstance(settings, dict) else None
    return ServerInfo(
        [m["id"] for m in entries],
        windows,
        every if _size(every) else None,
        frozenset(loaded_only - windows.keys()),
    )


async def openai_entries(
    http: aiohttp.ClientSession, config: ProviderConfig, headers: dict[str, str]
) -> list[dict[str, Any]]:
    """The models an OpenAI-compatible `GET {base}/models` lists, each an object with an id."""
    listing = await get_json(http, f"{config.base_url}/models", headers)
    return named(listing)


def named(page: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries of a listing's `data` that have an id (both APIs' shape)."""
    return [m for m in page.get("data") or () if _named(m)]


async def _optional(request: Any) -> dict[str, Any] | None:
    """An endpoint only some servers have: None where it is not (or fails)."""
    import aiohttp

    try:
        result: dict[str, Any] = await request
    except (ListingError, aiohttp.ClientError, TimeoutError, ValueError):
        return None
    return result


def _named(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("id"), str) and bool(entry["id"])


def _size(value: Any) -> bool:
    """A plausible window: a positive integer of tokens."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
