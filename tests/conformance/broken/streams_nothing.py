"""Breaks `sessions.prompt_streams`: it calls the model it was pointed at, and drops the
text of its reply (tool calls still run), so the client sees nothing of it."""

from collections.abc import Iterator

from tests.conformance.broken.base import Agent, Message


class StreamsNothing(Agent):
    def stream(self, messages: list[Message]) -> Iterator[str | Message]:
        yield from (piece for piece in super().stream(messages) if not isinstance(piece, str))


if __name__ == "__main__":
    StreamsNothing().main()
