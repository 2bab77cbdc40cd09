"""Breaks `sessions.updates_precede_response`: a last message chunk follows the end_turn
response (a buffer flushed too late)."""

from tests.conformance.broken.base import Agent, Turn


class UpdateAfterResponse(Agent):
    def after_turn(self, turn: Turn) -> None:
        content = {"type": "text", "text": " (flushed late)"}
        self.notify_update(
            turn.session_id, {"sessionUpdate": "agent_message_chunk", "content": content}
        )


if __name__ == "__main__":
    UpdateAfterResponse().main()
