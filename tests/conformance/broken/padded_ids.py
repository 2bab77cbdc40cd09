"""Breaks JSON-RPC's id rule everywhere: a numeric request id is echoed as a string padded
with a zero ("01" for 1), which matches no request in any JSON type. Every check fails at once,
saying so, rather than waiting out its timeout."""

from typing import Any

from tests.conformance.broken.base import Agent


class PaddedIds(Agent):
    def echo(self, msg_id: Any) -> Any:
        return f"0{msg_id}" if isinstance(msg_id, int) else msg_id


if __name__ == "__main__":
    PaddedIds().main()
