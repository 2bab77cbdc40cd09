"""Errors at the providers' boundary: every aiohttp/HTTP/stream failure becomes one of these."""

from __future__ import annotations

import re

from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.providers.config import API_VARIABLE
from acp_fsm.providers.types import AssistantMessage

# How the APIs word a request over the context window, when they give no code for it
# (OpenAI, Anthropic, vLLM, llama.cpp's "exceeds the available context size").
CONTEXT_MARKERS = (
    "prompt is too long",
    "maximum context length",
    "exceed context limit",
    "context window",
    "context length",
    "context size",
    "context the overflows",
)
BRIEF_CHARS = 240  # of a provider's message, in the one line the user is shown
MAX_DETAILS_CHARS = 8192  # of the whole message, kept in the error's data
# What such an error says of the sizes: the prompt's tokens, and the model's maximum.
# (llama.cpp says "request (N tokens) exceeds the available context size (M tokens)", LM
# Studio "keep the first N tokens ... context length of only M tokens".)
_PROMPT_SIZE = re.compile(
    r"(\d+) in the messages|resulted in (\d+) tokens|too long: (\d+) "
    r"tokens|context limit: (\d+) \+|(?:prompt|request) \((\d+) tokens\)"
    r"|keep the first (\d+) tokens"
)
_MAXIMUM = re.compile(
    r"maximum context length is (\d+)|> (\d+)(?: maximum)?\b|"
    r"context size \((\d+) tokens\)|context length of only (\d+)"
)


class ProviderError(Exception):
    """A model call failed. `status` is the HTTP status (None for network errors and errors
    inside a 200 stream), `error_type` the provider's own error type, `retryable` whether
    trying again later could help."""

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        retryable: bool = False,
        advice: str | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.error_type = error_type
        self.message = message
        self.retryable = retryable
        self.advice = advice  # ours: what the error means and what to do, never cut
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "stream"
        kind = f" {self.error_type}" if self.error_type else ""
        advice = f". {self.advice}" if self.advice else ""
        return f"{self.provider} {where}{kind}: {self.brief}{advice}"

    @property
    def brief(self) -> str:
        """The message as one short line (a server may answer with kilobytes of validation
        dump); `details` holds the rest."""
        line = " ".join(self.message.split())
        return line if len(line) <= BRIEF_CHARS else f"{line[: BRIEF_CHARS - 1].rstrip()}…"

    @property
    def details(self) -> str | None:
        """The whole message, bounded, when `brief` had to shorten it."""
        if self.brief == self.message:
            return None
        cut = self.message[:MAX_DETAILS_CHARS]
        return cut if len(cut) == len(self.message) else f"{cut}…"

    @property
    def context_exceeded(self) -> bool:
        """The request did not fit the model's context window (OpenAI
        `context_length_exceeded`, Anthropic "prompt is too long" and the like), refused
        with a 400 or inside the stream (LM Studio answers 200, then an error)."""
        if self.status not in (400, None):
            return False
        message = self.message.lower()
        return self.error_type == "context_length_exceeded" or any(
            marker in message for marker in CONTEXT_MARKERS
        )

    @property
    def context_sizes(self) -> tuple[int | None, int | None]:
        """For a context-window refusal: the prompt's tokens and the model's maximum, as far
        as the message states them."""
        return _first_number(_PROMPT_SIZE, self.message), _first_number(_MAXIMUM, self.message)

    def __repr__(self) -> str:
        return (
            f"ProviderError({self.provider!r}, {self.message!r}, status={self.status}, "
            f"error_type={self.error_type!r}, retryable={self.retryable}, "
            f"advice={self.advice!r})"
        )


EMPTY_STREAM = "empty_stream"


def empty_stream(provider: str, *, retryable: bool) -> ProviderError:
    """A 200 event stream that ended before its first event. llama-cpp-python answers so when
    the request is over its context window (the error comes after the headers): from such a
    server the turn decides whether that is the likely cause (`acp_fsm.turn`), so it is
    retried only from the providers' own APIs, which refuse a long request with a 400."""
    return ProviderError(
        provider,
        "the server answered 200 and ended the stream without a single event",
        status=200,
        error_type=EMPTY_STREAM,
        retryable=retryable,
    )


def truncated(provider: str, before: str) -> ProviderError:
    """The body ended before the event that ends the wire's stream (`before`, as its wire
    says it): the connection broke, a later attempt may get it all."""
    return ProviderError(
        provider,
        f"stream ended before {before} (truncated)",
        error_type="truncated",
        retryable=True,
    )


def unserved(error: ProviderError, url: str, model: str, base_url: str) -> ProviderError:
    """A compatible server's 404 to the model call's `url`: it does not serve that API
    (llama-cpp-python has no Messages or Responses API, a base URL without `/v1` reaches no
    Chat Completions), said with what to set instead; a 404 for a model it does not have
    (OpenAI's `model_not_found`, Ollama's and vLLM's messages name the model) is left as it
    is (docs/local-servers.md)."""
    message = error.message.lower()
    if error.error_type == "model_not_found" or "model" in message or model.lower() in message:
        return error
    if url.endswith("/messages"):
        api = "Anthropic's Messages API"
        instead = (
            f"set ACP_FSM_PROVIDER=openai and OPENAI_BASE_URL={base_url.removesuffix('/v1')}/v1"
            " to use its OpenAI-compatible API"
        )
    elif url.endswith("/responses"):
        api = "OpenAI's Responses API"
        instead = (
            f"set {API_VARIABLE}=chat (and ACP_FSM_PROVIDER=openai, not openai-responses) to "
            "use its Chat Completions"
        )
    elif base_url.endswith("/v1"):
        api = "Chat Completions at this URL"
        instead = "check that OPENAI_BASE_URL is the server's OpenAI-compatible API"
    else:
        api = "Chat Completions at this URL"
        instead = f"OPENAI_BASE_URL should end with /v1, as local servers serve it ({base_url}/v1)"
    error.advice = f"This server does not serve {api} (POST {url}): {instead}"
    return error


class StreamCancelled(Cancelled):
    """The turn's token fired mid-stream. `partial` holds what was streamed until then: text
    and thinking are kept; a tool call whose arguments were still streaming is dropped."""

    def __init__(self, partial: AssistantMessage, reason: str = "cancelled") -> None:
        super().__init__(reason)
        self.partial = partial


def _first_number(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    if match is None:
        return None
    return int(next(group for group in match.groups() if group is not None))
