"""Breaks `cancel.mid_stream`: session/cancel changes nothing, the turn streams on."""

from tests.conformance.broken.base import Agent, Turn


class IgnoresCancel(Agent):
    def cancel(self, turn: Turn) -> None:
        self.log("conformance agent: cancel ignored")


if __name__ == "__main__":
    IgnoresCancel().main()
