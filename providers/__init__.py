"""Streaming LLM providers (OpenAI Chat Completions and Responses, Anthropic Messages) over aiohttp.

`open_stream(request, token)` starts one model call and returns a `ModelStream` of neutral
events (`providers.types`). Adapters (`openai.py`, `anthropic.py`) are pure descriptions of the
wire formats; `stream.py` does the IO: one SSE decoder, retries, and cancellation by token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from acp_fsm.protocol.cancel import CancellationToken
    from acp_fsm.providers.base import WireFormat
    from acp_fsm.providers.config import ProviderConfig
    from acp_fsm.providers.stream import ModelStream
    from acp_fsm.providers.types import ModelRequest


if __name__ != "acp_fsm.providers":  # one name per module (docs/architecture.md, "Layers")
    raise ImportError(f"import acp_fsm.providers, not {__name__}", name=__name__)


def wire_format(provider: str, api: str = "chat") -> WireFormat:
    from acp_fsm.providers.config import ANTHROPIC, OPENAI, RESPONSES

    if provider == OPENAI and api == RESPONSES:
        from acp_fsm.providers.responses import ResponsesWire

        return ResponsesWire()
    if provider == OPENAI:
        from acp_fsm.providers.openai import OpenAiWire

        return OpenAiWire()
    if provider == ANTHROPIC:
        from acp_fsm.providers.anthropic import AnthropicWire

        return AnthropicWire()
    raise ValueError(f"unknown provider {provider!r}")


def open_stream(
    request: ModelRequest,
    token: CancellationToken,
    config: ProviderConfig | None = None,
    *,
    scrub: Callable[[bytes], bytes] | None = None,
    close_later: Callable[[Callable[[], None]], None] | None = None,
) -> ModelStream:
    """Start a streaming model call (configuration from the environment unless given;
    `scrub` filters the encoded request body; `close_later` as in `ModelStream`)."""
    from acp_fsm.providers.config import api_of, load_config
    from acp_fsm.providers.stream import ModelStream
    from acp_fsm.providers.written_form import lowered

    config = config or load_config()
    return ModelStream(
        wire_format(config.provider, api_of(config, request.model)),
        lowered(request),
        config,
        token,
        scrub,
        close_later=close_later,
    )
