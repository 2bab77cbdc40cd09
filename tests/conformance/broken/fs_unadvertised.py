"""Writes files through fs/write_text_file even to a client that did not advertise fs."""

from __future__ import annotations

from tests.conformance.broken.base import Agent


class FsUnadvertised(Agent):
    def delegates(self, capability: str) -> bool:
        return capability == "fs" or super().delegates(capability)


if __name__ == "__main__":
    FsUnadvertised().main()
