"""Runs a tool call whatever option the user chose: a rejection is taken as an allow."""

from __future__ import annotations

from tests.conformance.broken.base import Agent, Message


class IgnoresRejection(Agent):
    def allowed(self, outcome: Message) -> bool:
        return outcome.get("outcome") == "selected"


if __name__ == "__main__":
    IgnoresRejection().main()
