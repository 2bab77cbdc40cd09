"""A prompt's turn as its session's foreground work (ACP v2: `state_update`, and the prompt
echoed once stored): what v1's dialect leaves out (`acp_fsm.dialects`), told by every session
alike.

`running` when the turn begins; once the prompt is stored, its echo (`user_message`) and its
acknowledgement (`Acceptance.stored`: v2 answers `session/prompt` with the message's id then);
`idle` when it ends, with its stop reason, the JSON-RPC error of a turn that failed, and the
turn's `_meta`. A prompt that ended unstored (a hook refused it, a login is missing) ended no
work of the user's: its idle has no stop reason, unless it was cancelled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from acp_fsm import updates
from acp_fsm.errors import DomainError
from acp_fsm.fsm.session import SessionState
from acp_fsm.methods import answer
from acp_fsm.protocol.errors import InternalError, RpcError

if TYPE_CHECKING:
    from acp_fsm.protocol.cancel import CancellationToken
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.core import Session


# Told a prompt's message id once it is stored: what to wait for before the turn goes on (its
# acknowledgement written), or None.
Tell = Callable[[str], Awaitable[None] | None]


class Acceptance:
    """Whether a prompt was stored (entered the conversation), and who is told when it is."""

    __slots__ = ("_body", "_session", "_tell", "message_id")

    def __init__(self, session: Session, body: dict[str, Any], tell: Tell | None) -> None:
        self._session = session
        self._body = body
        self._tell = tell
        self.message_id: str | None = None  # once stored

    def withdrawn(self, token: CancellationToken) -> bool:
        """Whether the prompt, cancelled under `token` before it was stored, is never to be:
        on ACP v2 (its request is then answered -32800, and the client drops it); v1 keeps
        it, as the editor shows it in the conversation."""
        return self._tell is not None and token.is_cancelled

    async def stored(self) -> None:
        """The prompt is stored: echoed, and its acknowledgement told; the turn goes on once
        that is written (nothing of the turn precedes it)."""
        self.message_id = self._body["messageId"]
        self._session.send_update(updates.user_message(self.message_id, self._body["prompt"]))
        written = None if self._tell is None else self._tell(self.message_id)
        if written is not None:
            await written


async def run(
    session: Session,
    turn: Coroutine[Any, Any, acp.PromptResponse],
    accepted: Acceptance,
) -> acp.PromptResponse:
    """`turn` (its prompt's run), told as the session's foreground work."""
    session.send_update(updates.state("running"))
    try:
        reply = await turn
    except DomainError as error:
        session.send_update(_failed(answer(error), accepted))
        raise
    except Exception:
        session.send_update(_failed(InternalError("Internal error: the turn failed"), accepted))
        raise
    stop = reply["stopReason"]
    ended = stop if accepted.message_id is not None or stop == "cancelled" else None
    session.send_update(updates.idle(ended, meta=reply.get("_meta")))
    return reply


def snapshot(session: Session) -> dict[str, Any]:
    """The session's foreground state now (v2 sends it before answering a resume)."""
    if session.lifecycle.state == SessionState.IDLE:
        return updates.idle(None)
    return updates.state("requires_action" if session.asking else "running")


def _failed(error: RpcError, accepted: Acceptance) -> dict[str, Any]:
    """The idle of a turn that failed: stop reason `error` and the error once its prompt was
    stored; before, the prompt's request is answered with the error, and no work ended."""
    if accepted.message_id is None:
        return updates.idle(None)
    return updates.idle("error", error=error.to_error())
