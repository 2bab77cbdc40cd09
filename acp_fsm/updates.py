"""Builders of `session/update` payloads (ACP: SessionUpdate), shared by live turns and replay
so a loaded session looks exactly as it did live."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from acp_fsm.initialize import ClientInfo
    from acp_fsm.providers.types import Usage
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.tools.base import ToolCallView

ChunkKind = Literal["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]


def text_content(text: str) -> acp.ContentBlockText:
    return {"type": "text", "text": text}


def chunk(kind: ChunkKind, content: acp.ContentBlock, message_id: str) -> acp.SessionUpdate:
    """`user_message_chunk`, `agent_message_chunk` or `agent_thought_chunk` of message
    `message_id` (its every chunk carries it; a thought is a message of its own)."""
    if kind == "user_message_chunk":
        return {"sessionUpdate": "user_message_chunk", "content": content, "messageId": message_id}
    if kind == "agent_thought_chunk":
        return {"sessionUpdate": "agent_thought_chunk", "content": content, "messageId": message_id}
    return {"sessionUpdate": "agent_message_chunk", "content": content, "messageId": message_id}


def told(client: ClientInfo | None, text: str) -> acp.SessionUpdate:
    """Something the agent tells the user apart from the model's answer: a `notice` for a
    client that shows them, else text of its own before the answer."""
    if client is not None and client.shows_notices:
        return notice(text)
    return agent_text(text + "\n\n", message_id())


def agent_text(text: str, message_id: str) -> acp.SessionUpdate:
    """An `agent_message_chunk` of `text`, of message `message_id`."""
    return chunk("agent_message_chunk", text_content(text), message_id)


def message_id() -> str:
    """A new message's id (ACP: `messageId`): opaque, unique. One that a load shows again is
    stored with its entry."""
    return str(uuid.uuid4())


_STORED = uuid.UUID("6f1c2a9e-4b0d-4e53-9a57-2d1c0f3e8b61")


def stored_message_id(session_id: str, seq: int, part: str) -> str:
    """The id of a message stored without one (before messages had ids): made from where it
    is stored, so every load shows the same."""
    return str(uuid.uuid5(_STORED, f"{session_id}/{seq}/{part}"))


def view_body(view: ToolCallView, name: str) -> dict[str, Any]:
    """The stored form of a call's initial view (replayed as its `tool_call`); `name` is the
    tool's, as the model called it (an MCP tool's `mcp__server__tool`)."""
    body = {
        "name": name,
        "title": view.title,
        "kind": view.kind,
        "locations": list(view.locations),
        "rawInput": view.raw_input,
    }
    if view.content:
        body["content"] = list(view.content)
    return body


def tool_call_fields(
    call_id: str, view: dict[str, Any], preview: tuple[acp.ToolCallContent, ...] = ()
) -> acp.ToolCall:
    """A pending call as ACP describes it (in a `tool_call` update and a permission request);
    `preview` (the change it will make) replaces the view's own content."""
    fields: acp.ToolCall = {
        "toolCallId": call_id,
        "status": "pending",
        "title": view["title"],
        "kind": view["kind"],
        "rawInput": view["rawInput"],
    }
    if view.get("name"):  # stored before tool calls were named: none
        fields["name"] = view["name"]
    content = list(preview) or view.get("content")
    if content:
        fields["content"] = content
    if view.get("locations"):
        fields["locations"] = view["locations"]
    return fields


def tool_call(call_id: str, view: dict[str, Any]) -> acp.SessionUpdateToolCall:
    """A complete call announced to the editor, before permission or execution."""
    return {"sessionUpdate": "tool_call", **tool_call_fields(call_id, view)}


def state(name: str) -> dict[str, Any]:
    """The session's foreground state (v2's `state_update`): `running`, or `requires_action`
    while its work waits for the user (`idle`: `idle`)."""
    return {"sessionUpdate": "state_update", "state": name}


def idle(
    stop_reason: str | None,
    error: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The session ready for a prompt: why its work stopped (None: a prompt it never accepted
    ended nothing), the JSON-RPC error of one that failed, and `meta` (`_meta`)."""
    update: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle"}
    if stop_reason is not None:
        update["stopReason"] = stop_reason
    if error is not None:
        update["error"] = error
    if meta is not None:
        update["_meta"] = meta
    return update


def user_message(message_id: str, prompt: list[acp.ContentBlock]) -> dict[str, Any]:
    """The user's prompt, once stored, as message `message_id` (v2 echoes it)."""
    return {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt}


def tool_call_update(
    call_id: str,
    status: acp.ToolCallStatus | None,
    *,
    content: list[acp.ToolCallContent] | None = None,
    locations: list[acp.ToolCallLocation] | None = None,
) -> acp.SessionUpdateToolCallUpdate:
    """Changed fields of a call (`status` None: unchanged)."""
    update: acp.SessionUpdateToolCallUpdate = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
    }
    if status is not None:
        update["status"] = status
    if content is not None:
        update["content"] = content
    if locations is not None:
        update["locations"] = locations
    return update


def final_view(
    status: acp.ToolCallStatus,
    content: list[acp.ToolCallContent],
    locations: list[acp.ToolCallLocation] | None = None,
) -> dict[str, Any]:
    """The stored form of a call's final state (replayed as its last `tool_call_update`)."""
    view: dict[str, Any] = {"status": status, "content": content}
    if locations is not None:
        view["locations"] = locations
    return view


def text_block(text: str) -> acp.ToolCallContentContent:
    """A ToolCallContent block of plain text."""
    return {"type": "content", "content": text_content(text)}


def iso_time(timestamp: float) -> str:
    """A time as ACP writes it (`updatedAt`): ISO 8601, UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(timestamp))


def session_info(title: str, updated_at: str) -> acp.SessionUpdateSessionInfoUpdate:
    return {"sessionUpdate": "session_info_update", "title": title, "updatedAt": updated_at}


PLAN_TOOL = "update_plan"  # the tool whose calls set the plan (replayed by session/load)


def plan(entries: list[acp.PlanEntry]) -> acp.SessionUpdatePlan:
    """The agent's plan, whole (ACP: each `plan` update replaces the one before)."""
    return {"sessionUpdate": "plan", "entries": entries}


# `Usage`'s counts by the names ACP's (unstable) `Usage` gives them, which a stored `usage`
# entry keeps (`ledger` reads them back).
USAGE_NAMES = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cachedReadTokens"),
    ("cache_write_tokens", "cachedWriteTokens"),
    ("thought_tokens", "thoughtTokens"),
)


def usage_totals(usage: Usage) -> dict[str, int]:
    """Token counts as ACP's (unstable) `Usage` names them (`USAGE_NAMES`), with their total;
    the reasoning ones (counted in the output's) when the provider told them."""
    totals: dict[str, int] = {name: getattr(usage, field) for field, name in USAGE_NAMES}
    if not usage.thought_tokens:
        del totals["thoughtTokens"]
    totals["totalTokens"] = usage.input_tokens + usage.output_tokens
    return totals


def usage(used: int, size: int, cost: acp.Cost | None = None) -> acp.SessionUpdateUsageUpdate:
    """Context-window use after a model call, and the session's cost so far when it is known
    (ACP UsageUpdate)."""
    update: acp.SessionUpdateUsageUpdate = {
        "sessionUpdate": "usage_update",
        "used": used,
        "size": size,
    }
    if cost is not None:
        update["cost"] = cost
    return update


def notice(title: str, severity: str = "warning") -> acp.SessionUpdateNotice:
    """A notice for the user apart from the conversation (for clients with session.notices)."""
    return {"sessionUpdate": "notice", "severity": severity, "title": title}


def compaction_update(compaction_id: str, status: str) -> acp.SessionUpdateCompactionUpdate:
    """A compaction starting or ending (for clients with session.compaction)."""
    return {"sessionUpdate": "compaction_update", "compactionId": compaction_id, "status": status}


def compaction_summary(compaction_id: str, text: str) -> acp.SessionUpdateCompactionSummaryChunk:
    """A compaction's summary (sent whole, as one chunk)."""
    return {
        "sessionUpdate": "compaction_summary_chunk",
        "compactionId": compaction_id,
        "content": text_content(text),
    }
