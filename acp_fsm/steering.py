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
    """The steered messages of a session that no model call has read yet, in order. It takes
    them while a turn can still read them: from the turn's start (`open`) to its end
    (`close`); a message that comes later starts a turn of its own."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: list[Steer] | None = None  # None: no turn can read one now

    def __repr__(self) -> str:
        state = "closed" if self._waiting is None else f"waiting={len(self._waiting)}"
        return f"<Inbox {state}>"

    def open(self) -> None:
        """A turn begins: it reads what comes from now on."""
        if self._waiting is None:
            self._waiting = []

    def put(self, steer: Steer) -> bool:
        """Whether a turn will read `steer` (False: none can any more)."""
        if self._waiting is None:
            return False
        self._waiting.append(steer)
        return True

    def waiting(self) -> bool:
        return bool(self._waiting)

    def take(self) -> list[Steer]:
        """What waits, in order; none waits after."""
        if not self._waiting:
            return []
        taken, self._waiting = self._waiting, []
        return taken

    def close(self) -> list[Steer]:
        """The turn ends: what no model call read, in order; nothing is taken after."""
        taken, self._waiting = self._waiting or [], None
        return taken


def idle_behavior(params: dict[str, Any]) -> str | None:
    """The `_meta.steering.idleBehavior` a request asks for (liberal: anything else is None)."""
    meta = params.get("_meta")
    steering = meta.get("steering") if isinstance(meta, dict) else None
    found = steering.get("idleBehavior") if isinstance(steering, dict) else None
    return found if isinstance(found, str) else None
