"""Breaks nothing: it advertises an auth method and refuses session/new (auth_required) until
the client calls `authenticate` with it, as agents that keep their own login do."""

from __future__ import annotations

from typing import Any

from tests.conformance.broken.base import Agent, Message

METHOD = "conformance-key"


class NeedsLogin(Agent):
    logged_in = False

    def initialize(self, msg_id: Any, params: Message) -> Message:
        answer = super().initialize(msg_id, params)
        if "result" in answer:
            answer["result"]["authMethods"] = [{"id": METHOD, "name": "Conformance key"}]
        return answer

    def serve(self, method: str) -> Any:
        if method == "authenticate":
            return self.authenticate
        return super().serve(method)

    def authenticate(self, msg_id: Any, params: Message) -> Message:
        if params.get("methodId") != METHOD:
            return self.error(msg_id, -32602, f"unknown auth method {params.get('methodId')!r}")
        self.logged_in = True
        return self.result(msg_id, {})

    def new_session(self, msg_id: Any, params: Message) -> Message:
        if not self.logged_in:
            return self.error(msg_id, -32000, "Authentication required")
        return super().new_session(msg_id, params)


if __name__ == "__main__":
    NeedsLogin().main()
