"""Never releases the terminals it creates."""

from __future__ import annotations

from tests.conformance.broken.base import Agent


class KeepsTerminals(Agent):
    def release(self, session_id: str, terminal_id: str) -> None:
        self.log(f"conformance agent: keeps {terminal_id}")


if __name__ == "__main__":
    KeepsTerminals().main()
