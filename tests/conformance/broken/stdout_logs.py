"""Breaks `transport.stdout_only`: its log lines go to stdout, among the protocol's."""

from tests.conformance.broken.base import Agent


class StdoutLogs(Agent):
    def log(self, text: str) -> None:
        self.emit(text.encode() + b"\n")


if __name__ == "__main__":
    StdoutLogs().main()
