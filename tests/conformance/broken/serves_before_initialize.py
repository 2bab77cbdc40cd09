"""Breaks `handshake.before_initialize`: it serves requests that come before initialize."""

from typing import Any

from tests.conformance.broken.base import Agent, Message


class ServesBeforeInitialize(Agent):
    def before_initialize(self, request: Message) -> Message:
        serve: Any = {"session/new": self.new_session, "session/prompt": self.prompt}
        answer: Message = serve[request["method"]](request["id"], request.get("params") or {})
        return answer


if __name__ == "__main__":
    ServesBeforeInitialize().main()
