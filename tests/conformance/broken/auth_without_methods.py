"""Without an API key, refuses session/new as "authentication required" while its
initialize advertises no auth method: an editor (and the registry) has no way to log in."""

from __future__ import annotations

import os

from tests.conformance.broken.base import Agent, Message


class AuthWithoutMethods(Agent):
    def new_session(self, msg_id: object, params: Message) -> Message:
        if not os.environ.get("OPENAI_API_KEY"):
            return self.error(msg_id, -32000, "Authentication required")
        return super().new_session(msg_id, params)


if __name__ == "__main__":
    AuthWithoutMethods().main()
