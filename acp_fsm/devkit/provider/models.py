"""`GET /v1/models`: the server's model ids listed in each API's shape. OpenAI lists them all
at once; Anthropic pages them (`limit`, `after_id`, `before_id`) and refuses a bad page the
way its API does. The ids are listed in the order given, read as newest first."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from acp_fsm.devkit.provider.rules import reject

MODELS_PATH = "/v1/models"
# The first model is dated 2025-09-29T00:00:00Z, each next one a day earlier.
NEWEST_CREATED = 1_759_104_000
DAY_S = 86_400
# Anthropic's page size: 20 unless asked, at most 1000.
DEFAULT_PAGE = 20
MAX_PAGE = 1000

ModelList = Callable[[Sequence[str], Mapping[str, str]], dict[str, Any]]
"""The listing of the given ids for the given query parameters, in one API's shape."""


def _created(index: int) -> int:
    return NEWEST_CREATED - index * DAY_S


def openai_models(ids: Sequence[str], query: Mapping[str, str]) -> dict[str, Any]:
    """OpenAI's `{"object": "list", "data": [...]}`, unpaged (the query is ignored)."""
    return {
        "object": "list",
        "data": [
            {"id": model, "object": "model", "created": _created(i), "owned_by": "system"}
            for i, model in enumerate(ids)
        ],
    }


def display_name(model_id: str) -> str:
    """A readable name: "claude-sonnet-4-5" reads "Claude Sonnet 4.5"."""
    words: list[str] = []
    for part in model_id.split("-"):
        if part.isdigit() and words and words[-1][-1].isdigit():
            words[-1] += f".{part}"
        else:
            words.append(part.capitalize())
    return " ".join(words)


def anthropic_models(ids: Sequence[str], query: Mapping[str, str]) -> dict[str, Any]:
    """One page of Anthropic's listing: `limit` ids after `after_id`, or before `before_id`,
    or from the start; `has_more` says whether more lie in that direction."""
    limit = _page_size(query.get("limit"))
    if "after_id" in query:
        start = _position(ids, "after_id", query["after_id"]) + 1
        end = min(start + limit, len(ids))
        has_more = end < len(ids)
    elif "before_id" in query:
        end = _position(ids, "before_id", query["before_id"])
        start = max(end - limit, 0)
        has_more = start > 0
    else:
        start, end = 0, min(limit, len(ids))
        has_more = end < len(ids)
    data = [
        {
            "type": "model",
            "id": ids[i],
            "display_name": display_name(ids[i]),
            "created_at": datetime.fromtimestamp(_created(i), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for i in range(start, end)
    ]
    return {
        "data": data,
        "has_more": has_more,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def _page_size(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_PAGE
    try:
        limit = int(raw)
    except ValueError:
        raise reject(
            "limit: Input should be a valid integer, unable to parse string as an integer"
        ) from None
    if limit < 1:
        raise reject("limit: Input should be greater than or equal to 1")
    if limit > MAX_PAGE:
        raise reject(f"limit: Input should be less than or equal to {MAX_PAGE}")
    return limit


def _position(ids: Sequence[str], name: str, model_id: str) -> int:
    """Where a cursor id is; an id the server does not list is refused (a scripted choice:
    the real API's answer to an unknown cursor is not documented)."""
    if model_id not in ids:
        raise reject(f"{name}: no model with id '{model_id}'")
    return list(ids).index(model_id)
