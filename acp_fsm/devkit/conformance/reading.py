"""How a check reads what the agent said: a prompt's turn (its response, its updates, the
model calls that carried it), a session's updates, an error that asks for authentication, and
a text clipped for a reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from acp_fsm.devkit.conformance.verdicts import NotApplicable
from acp_fsm.devkit.editor import Message

if TYPE_CHECKING:
    from acp_fsm.devkit.provider import RecordedRequest, ScriptedProvider

AUTH_REQUIRED: Final = -32000  # ACP's error code: authenticate first
LINE_CLIP: Final = 240  # characters of one line shown in the evidence
# The updates that belong to a turn; the others (session_info_update, usage_update, ...) are
# about the session and may come at any time.
TURN_KINDS: Final = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)


class ModelCalls:
    """The calls to the model server that carry a prompt's tag, from the prompt on: those made
    for that prompt, among those of the checks running beside it."""

    def __init__(self, server: ScriptedProvider | None, tag: str) -> None:
        self.server = server
        self.tag = tag
        self.since = 0 if server is None else len(server.requests)

    def requests(self) -> list[RecordedRequest] | None:
        """Those there were so far (None: no server to ask)."""
        if self.server is None:
            return None
        tag = self.tag.encode()
        return [request for request in self.server.requests[self.since :] if tag in request.raw]

    def count(self) -> int | None:
        """How many there were so far (None: no server to ask)."""
        found = self.requests()
        return None if found is None else len(found)


def model_not_called(answered: str | None = None) -> NotApplicable:
    """The verdict of a check of what the model says or does, on an agent that did not call
    the model it was pointed at (one that answers by itself, or forwards to its own)."""
    said = "" if answered is None else f"; it answered {clip(answered, 80)!r}"
    return NotApplicable(
        "the agent did not call the model it was pointed at (no request to the scripted "
        f"model server carried the prompt){said}"
    )


@dataclass
class Turn:
    """A prompt's response, the session's updates before it and the turn's updates after it
    (`TURN_KINDS`); the time from session/cancel to the response, when cancelled; the model
    calls that carried the prompt (None: no model server to ask)."""

    response: Message
    updates: list[Message]
    late: list[Message]
    cancel_ms: float | None = None
    model_requests: list[RecordedRequest] | None = None  # None: no model server to ask

    @property
    def model_calls(self) -> int | None:
        return None if self.model_requests is None else len(self.model_requests)

    def needs_model(self) -> None:
        """NotApplicable when the agent answered without calling the model it was pointed
        at: a check of what that model says or does cannot apply."""
        if self.model_calls == 0:
            raise model_not_called(self.text())

    @property
    def stop_reason(self) -> Any:
        return (self.response.get("result") or {}).get("stopReason")

    def late_kinds(self) -> str:
        """The kinds of the turn's updates after the response, for a reason."""
        return f"{len(self.late)} session/update(s) after it: {', '.join(map(kind_of, self.late))}"

    def text(self) -> str:
        """The text of the agent_message_chunk updates, joined."""
        return "".join(
            str(content.get("text", ""))
            for m in self.updates
            if kind_of(m) == "agent_message_chunk"
            and isinstance(content := m["params"]["update"].get("content"), dict)
        )


def is_update(message: Any, session_id: str, kind: str | None = None) -> bool:
    """A session/update notification of `session_id` (of that kind, when given)."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return False
    params = message.get("params")
    if not isinstance(params, dict) or params.get("sessionId") != session_id or "id" in message:
        return False
    update = params.get("update")
    return kind is None or (isinstance(update, dict) and update.get("sessionUpdate") == kind)


def asks_authentication(error: Any) -> bool:
    """An error that asks the client to authenticate: ACP's auth_required (-32000), or
    one whose message says so."""
    if not isinstance(error, dict):
        return False
    lowered = str(error.get("message") or "").lower()
    return error.get("code") == AUTH_REQUIRED or any(
        word in lowered for word in ("auth_required", "authentication")
    )


def kind_of(update: Message) -> str:
    """The `sessionUpdate` of a session/update notification."""
    return str(update["params"]["update"].get("sessionUpdate", "?"))


def of_turn(update: Message) -> bool:
    """Whether the update belongs to a turn (`TURN_KINDS`), not to the session."""
    return kind_of(update) in TURN_KINDS


def clip(text: str, size: int = LINE_CLIP) -> str:
    return text if len(text) <= size else f"{text[:size]}… ({len(text)} characters)"
