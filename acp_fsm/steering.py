"""Steering a running turn: the `_session/steering` extension claude-agent-acp and codex-acp
ship (advertised as `_meta.steering.supported` in the `initialize` result, beside
`agentCapabilities`; params `sessionId`, `prompt`, and `_meta.steering.idleBehavior`; result
`outcome`).

A message the user steers with while a turn runs joins that turn: the editor is shown it at
once (`user_message_chunk`s with its own `messageId`), and the turn hands it to the model with
its next model call, stored in order then, after the results of the calls the model made
(never between a call and its result). When the model's answer ends the turn while a message
waits, the turn goes on with one more model call, so a steered message is always answered
(the turn machine's `steered` guard). A turn that ends otherwise (cancelled, failed, a
command's) keeps what waits as the user's message, read with the next prompt.

With no turn running, the message starts one (`startedNewTurn`), unless the client asked for
`idleBehavior: "promptRequired"`: then nothing is done and it sends the message as a prompt
(`promptRequired`, reason `noRunningTurn`). A prompt sent with `session/prompt` while a turn
runs still waits for its own turn, as before.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from acp_fsm.providers.types import UserPart

METHOD = "_session/steering"
INJECTED = "injected"
STARTED = "startedNewTurn"
PROMPT_REQUIRED = "promptRequired"
NO_RUNNING_TURN = "noRunningTurn"


class Steer(NamedTuple):
    """One steered message: its stored body (`prompt`, `parts`, `messageId`) and its parts."""

    body: dict[str, Any]
    parts: tuple[UserPart, ...]


class Inbox:
    """The steered messages of a session that no model call has read yet, in order."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: list[Steer] = []

    def __repr__(self) -> str:
        return f"<Inbox waiting={len(self._waiting)}>"

    def put(self, steer: Steer) -> None:
        self._waiting.append(steer)

    def waiting(self) -> bool:
        return bool(self._waiting)

    def take(self) -> list[Steer]:
        """What waits, in order; none waits after."""
        taken, self._waiting = self._waiting, []
        return taken


def idle_behavior(params: dict[str, Any]) -> str | None:
    """The `_meta.steering.idleBehavior` a request asks for (liberal: anything else is None)."""
    meta = params.get("_meta")
    steering = meta.get("steering") if isinstance(meta, dict) else None
    found = steering.get("idleBehavior") if isinstance(steering, dict) else None
    return found if isinstance(found, str) else None
