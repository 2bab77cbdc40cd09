"""Breaks JSON-RPC's id rule everywhere: a numeric request id is echoed with a decimal point
(1.0 for 1), which a client that reads ids as integers cannot match."""

from typing import Any

from tests.conformance.broken.base import Agent


class FloatIds(Agent):
    def echo(self, msg_id: Any) -> Any:
        return float(msg_id) if isinstance(msg_id, int) else msg_id


if __name__ == "__main__":
    FloatIds().main()
