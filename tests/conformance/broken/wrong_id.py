"""Breaks `transport.id_echo`: a string id made of digits is echoed as a number."""

from typing import Any

from tests.conformance.broken.base import Agent


class WrongId(Agent):
    def echo(self, msg_id: Any) -> Any:
        return int(msg_id) if isinstance(msg_id, str) and msg_id.isdigit() else msg_id


if __name__ == "__main__":
    WrongId().main()
