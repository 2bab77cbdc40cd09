"""What a provider adapter is: a pure description of a wire format.

An adapter builds the HTTP request for a `ModelRequest`, turns an error body into a
`ProviderError`, and parses server-sent events into neutral events through a fresh
`StreamParser` per attempt. It does no IO; `providers.stream.ModelStream` does.
"""

from __future__ import annotations

from typing import Protocol

from acp_fsm.providers.assemble import MessageBuilder
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.encoder import Scrub
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.sse import SseEvent
from acp_fsm.providers.types import Event, ModelRequest


class StreamParser(Protocol):
    builder: MessageBuilder

    def feed(self, event: SseEvent) -> list[Event]:
        """Events for one server-sent event; raises ProviderError for an in-stream error."""

    def end(self) -> list[Event]:
        """The body ended: the final events, or ProviderError if the stream was truncated."""


class WireFormat(Protocol):
    name: str

    def build(
        self, request: ModelRequest, config: ProviderConfig, scrub: Scrub | None = None
    ) -> tuple[str, dict[str, str], bytes]:
        """URL, headers and JSON body of the streaming call, its secrets hidden by `scrub`."""

    def parse_error(self, status: int, body: bytes) -> ProviderError:
        """The error a non-200 response stands for (retryable or not)."""

    def parser(self) -> StreamParser:
        """A parser for one response body."""
