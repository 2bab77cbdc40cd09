"""Breaks JSON-RPC's id rule everywhere: a numeric request id is echoed as a string ("1" for
1), so no answer matches its request. Every check fails at once, saying so, rather than
waiting out its timeout."""

from typing import Any

from tests.conformance.broken.base import Agent


class StringIds(Agent):
    def echo(self, msg_id: Any) -> Any:
        return str(msg_id) if isinstance(msg_id, int) else msg_id


if __name__ == "__main__":
    StringIds().main()
