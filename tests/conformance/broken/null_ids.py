"""Breaks JSON-RPC's id rule everywhere: every answer carries id null, as from an agent that
lost the request's id."""

from typing import Any

from tests.conformance.broken.base import Agent


class NullIds(Agent):
    def echo(self, msg_id: Any) -> Any:
        return None


if __name__ == "__main__":
    NullIds().main()
