"""Subagents as child sessions (ACP: protocol/v1/subagents), for a client that opts in with
`clientCapabilities.subagents`: a child's id, the `subagent_update`s that announce a child on
its parent and report its work's state there, the two linked views of a message between two
sessions, the `session` content that links a tool call to its child, and the refusal of what
a client may not do with a child's id.

A child is the session of one `task` call: it is never stored as a session of its own (its
transcript is stored with its parent's, `turn.subagent`), never listed, and a client may only
cancel its work (`session/cancel`, its `cancel` capability) while it runs.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from acp_fsm import limits, updates
from acp_fsm.errors import BadRequest
from acp_fsm.front_matter import shortened

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

# A child's id is its parent's, this mark and a random part: any process knows a child's id
# for one, and its parent, without a lookup (a replayed child's included).
MARK = "_task_"
# The announcement's `description`: the task's prompt, its first characters.
DESCRIPTION_CHARS = 200


def child_id(parent: str) -> str:
    """A new child session's id, under session `parent`."""
    return f"{parent}{MARK}{uuid.uuid4().hex[:12]}"


def parent_of(session_id: str) -> str | None:
    """The parent of child session `session_id`; None when it names no child."""
    parent, mark, own = session_id.rpartition(MARK)
    return parent if mark and parent and own.isalnum() else None


def refusal(session_id: str) -> BadRequest | None:
    """The error that answers a method with a child's id other than `session/cancel`, the one
    that applies to a child; None when `session_id` names no child."""
    parent = parent_of(session_id)
    if parent is None:
        return None
    return BadRequest(
        "sessionId",
        f"{limits.echo(session_id)} is the session of a subagent of {limits.echo(parent)}: "
        "a client may only cancel its work (session/cancel)",
    )


def announcement(
    child: str, title: str, prompt: str, *, live: bool
) -> acp.SessionUpdateSubagentUpdate:
    """The `subagent_update` that announces `child` on its parent: its title (the task's
    description) and description (its prompt's start); while it runs (`live`) it may be
    cancelled and is running. A replayed one claims neither: the child is not at work."""
    update: acp.SessionUpdateSubagentUpdate = {
        "sessionUpdate": "subagent_update",
        "sessionId": child,
        "title": title,
        "description": shortened(" ".join(prompt.split()), DESCRIPTION_CHARS, at_word=True),
    }
    if live:
        update["capabilities"] = {"cancel": {}}
        update["state"] = {"state": "running"}
    return update


def state(child: str, snapshot: acp.StateUpdate) -> acp.SessionUpdateSubagentUpdate:
    """The `subagent_update` that reports `child`'s work as `snapshot` (on its parent)."""
    return {"sessionUpdate": "subagent_update", "sessionId": child, "state": snapshot}


def idle(stop: acp.IdleStopReason, error: acp.Error | None = None) -> acp.StateUpdateIdle:
    """The snapshot of a child whose work ended with `stop` (`error` with its JSON-RPC error)."""
    snapshot: acp.StateUpdateIdle = {"state": "idle", "stopReason": stop}
    if error is not None:
        snapshot["error"] = error
    return snapshot


def message_ids() -> tuple[str, str]:
    """The ids of a message's two views: the sender's, the recipient's."""
    return updates.message_id(), updates.message_id()


def views(
    sender: str, recipient: str, text: str, ids: tuple[str, str]
) -> tuple[acp.SessionUpdateSessionMessage, acp.SessionUpdateSessionMessage]:
    """Message `text` from session `sender` to `recipient` as each sees it: the sender's
    outgoing view (its id `ids[0]`, naming the recipient's) and the recipient's incoming view
    (`ids[1]`, naming the sender's)."""
    content: list[acp.ContentBlock] = [updates.text_content(text)]
    common: dict[str, Any] = {
        "sessionUpdate": "session_message",
        "senderSessionId": sender,
        "recipientSessionId": recipient,
        "content": content,
    }
    outgoing: Any = {**common, "messageId": ids[0], "recipientMessageId": ids[1]}
    incoming: Any = {**common, "messageId": ids[1], "senderMessageId": ids[0]}
    return outgoing, incoming


def reference(child: str) -> acp.ToolCallContentSession:
    """Tool-call content that links the call to `child` (announced before)."""
    return {"type": "session", "sessionId": child}


def without_references(content: list[Any]) -> list[Any]:
    """`content` without `session` blocks (for a client that did not opt in)."""
    return [block for block in content if block.get("type") != "session"]
