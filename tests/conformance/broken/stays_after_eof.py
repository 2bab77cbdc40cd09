"""Breaks `robustness.stdin_eof`: when its stdin closes it goes on running, as an agent whose
event loop still holds work does."""

import time

from tests.conformance.broken.base import Agent


class StaysAfterEof(Agent):
    def main(self) -> None:
        super().main()
        time.sleep(3600)


if __name__ == "__main__":
    StaysAfterEof().main()
