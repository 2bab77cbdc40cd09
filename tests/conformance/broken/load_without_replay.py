"""Breaks `advertised.load`: it advertises loadSession, and answers session/load without
replaying anything."""

from typing import Any

from tests.conformance.broken.base import Agent, Message


class LoadWithoutReplay(Agent):
    def initialize(self, msg_id: Any, params: Message) -> Message:
        answer = super().initialize(msg_id, params)
        if "result" in answer:
            answer["result"]["agentCapabilities"]["loadSession"] = True
        return answer

    def serve(self, method: str) -> Any:
        if method == "session/load":
            return lambda msg_id, params: self.result(msg_id, {})
        return super().serve(method)


if __name__ == "__main__":
    LoadWithoutReplay().main()
