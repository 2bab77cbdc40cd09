"""Fixtures for the provider tests: a real scripted server per test, configs, event helpers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from itertools import pairwise
from typing import Any

import pytest

from acp_fsm.devkit.provider import Reply, ScriptedProvider, render_anthropic, render_openai
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.providers import http, open_stream
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.stream import ModelStream
from acp_fsm.providers.types import (
    Event,
    Message,
    ModelRequest,
    TextPart,
    ToolSpec,
    Usage,
    UserMessage,
)

PROVIDERS = ("openai", "anthropic")
API_KEY = "sk-test-7Qv9-DO-NOT-LEAK-3f1a"
READ_FILE = ToolSpec(
    name="read_file",
    description="Read a text file",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
)


def make_config(server: ScriptedProvider, provider: str, **overrides: Any) -> ProviderConfig:
    """A config pointed at `server`, with tiny retry delays."""
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    config = ProviderConfig(
        provider=provider,
        model="m",
        base_url=base,
        api_key=API_KEY,
        max_retries=2,
        retry_base_s=0.01,
        retry_max_s=0.02,
        read_timeout_s=5.0,
        connect_timeout_s=2.0,
    )
    return config._replace(**overrides)


def make_request(*messages: Message, **fields: Any) -> ModelRequest:
    """A request with one tool and, by default, a single "hi" from the user."""
    history = messages or (UserMessage((TextPart("hi"),)),)
    return ModelRequest(**{"model": "m", "messages": history, "tools": (READ_FILE,), **fields})


def start_stream(
    config: ProviderConfig,
    token: CancellationToken | None = None,
    request: ModelRequest | None = None,
) -> ModelStream:
    return open_stream(request or make_request(), token or CancellationToken(), config)


async def collect(
    config: ProviderConfig,
    token: CancellationToken | None = None,
    request: ModelRequest | None = None,
) -> list[Event]:
    """Every event of one successful call."""
    async with start_stream(config, token, request) as stream:
        return [event async for event in stream]


async def collect_until_error(stream: ModelStream, into: list[Event]) -> None:
    """Append events to `into` until the stream raises (the exception propagates)."""
    async with stream:
        async for event in stream:
            into.append(event)


def split(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """`data` cut at the given offsets (clamped, deduplicated, in order)."""
    points = sorted({min(max(c, 0), len(data)) for c in cuts})
    return [data[a:b] for a, b in pairwise([0, *points, len(data)])]


def without_usage(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if not isinstance(e, Usage)]


def usages(events: Sequence[Event]) -> list[Usage]:
    return [e for e in events if isinstance(e, Usage)]


def rendered(provider: str, reply: Reply) -> list[bytes]:
    """The wire events the server streams `reply` as on `provider`'s route."""
    if provider == "openai":
        return render_openai(reply, "m", include_usage=True)
    return render_anthropic(reply, "m")


def events_through(provider: str, reply: Reply, needle: str) -> int:
    """How many wire events there are up to and including the first one whose JSON carries
    the string value `needle` (a whole text delta or argument fragment), for `Drop(after=…)`,
    `Hang(…)` and friends."""
    encoded = json.dumps(needle, ensure_ascii=False).encode()
    for index, event in enumerate(rendered(provider, reply)):
        if encoded in event:
            return index + 1
    raise AssertionError(f"{needle!r} is not in the rendered reply")


@pytest.fixture
async def server() -> AsyncIterator[ScriptedProvider]:
    """A started scripted provider that requires API_KEY; the client session is closed after
    each test (each test has its own event loop)."""
    provider = ScriptedProvider(api_key=API_KEY)
    await provider.start()
    try:
        yield provider
    finally:
        await http.close_client_session()
        await provider.stop()


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def config(server: ScriptedProvider, provider: str) -> ProviderConfig:
    return make_config(server, provider)
