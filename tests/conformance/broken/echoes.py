"""Breaks nothing the suite can hold it to: it answers a prompt by echoing it, without calling
any model (as an echo agent does, or a proxy to a model of its own). The checks of what the
model says or does are not applicable to it, and say why."""

from collections.abc import Iterator

from tests.conformance.broken.base import Agent, Message


class Echoes(Agent):
    def stream(self, messages: list[Message]) -> Iterator[str | Message]:
        yield f"You said: {messages[-1]['content']}"


if __name__ == "__main__":
    Echoes().main()
