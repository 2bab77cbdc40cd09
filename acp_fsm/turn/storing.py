"""What a turn stores (through its `Entries`), with its conversation kept in step: the model's
message, a tool call's result, a compaction, a notice, the turn's end. Each is queued before
it is put in the conversation, so the store and the conversation agree; one the editor is
about to be told of is committed first (commit, then tell: docs/sessions.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_fsm import transcript
from acp_fsm.providers.types import UserMessage

if TYPE_CHECKING:
    from acp_fsm.providers.types import AssistantMessage, Message, ToolResultPart, UserPart
    from acp_fsm.turn.runner import Turn


async def add_assistant(
    turn: Turn,
    message: AssistantMessage,
    stop_reason: str,
    views: dict[str, dict[str, Any]],
    *,
    wait: bool = True,
) -> None:
    """Store the model's message (and its tool calls' views)."""
    body = transcript.assistant_body(message, stop_reason, views, turn.message_ids)
    written = turn.entries.queue("assistant", body, required=wait)
    turn.conversation.append(message)
    # Known before the wait, so a cancel during the write can still mark the message.
    turn.last_assistant = (written, body) if written is not None else None
    if wait:
        await turn.entries.commit("assistant", written)


async def add_user(turn: Turn, body: dict[str, Any], parts: tuple[UserPart, ...]) -> None:
    """Store a message of the user's that joins the turn (`acp_fsm.steering`)."""
    await write(turn, "user", body, wait=True)
    turn.conversation.append(UserMessage(parts))


async def add_result(
    turn: Turn, result: ToolResultPart, view: dict[str, Any], *, wait: bool = True, ran: bool
) -> None:
    """Store a tool call's result (its final view: what a load shows; whether the call ran,
    which a rewind tells of a command)."""
    body = transcript.result_body(result, view)
    if not ran:
        body["ran"] = False
    written = turn.entries.queue("tool_result", body, required=wait)
    turn.conversation.add_result(result)
    if wait:
        await turn.entries.commit("tool_result", written)


def mark_cancelled(turn: Turn) -> None:
    """The turn was cancelled after its last assistant message was stored complete: that
    stored message now carries stopReason cancelled. Queued behind the message's own write
    if that is still under way."""
    if turn.last_assistant is None:
        return
    written, body = turn.last_assistant
    turn.last_assistant = None
    if body.get("stopReason") == transcript.CANCELLED:
        return
    if not written.done() or written.cancelled() or written.exception() is not None:
        return  # committed before anything went on (see `Journal.commit`): not stored
    turn.entries.rewrite(written.result(), {**body, "stopReason": transcript.CANCELLED})


async def compact_to(turn: Turn, messages: list[Message], body: dict[str, Any]) -> None:
    """Replace the conversation by its compacted form, once that is stored."""
    await write(turn, "compaction", body, wait=True)
    turn.conversation.compacted(messages)


async def add_notice(turn: Turn, text: str, message_id: str) -> None:
    """Store a message to the user that is not part of the conversation (a command's answer):
    a load shows it again, as message `message_id`."""
    await write(turn, "notice", {"text": text, "messageId": message_id}, wait=True)


async def write(turn: Turn, kind: str, body: dict[str, Any], *, wait: bool) -> None:
    """Store an entry: committed before returning with `wait`, else queued in order."""
    written = turn.entries.queue(kind, body, required=wait)
    if wait:
        await turn.entries.commit(kind, written)
