"""A stored session brought back: its conversation rebuilt from the entries (repaired where a
crash left a call without its result), its settings, and the updates that show it to the
editor as it looked live (`session/load`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm import checkpoints, child_sessions, transcript, updates
from acp_fsm.config_options import Settings
from acp_fsm.providers.types import Message, ToolResultsMessage
from acp_fsm.store import Entry, Store

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

log = structlog.get_logger("session")

# Put between the text blocks of one replayed prompt: a paragraph break, in Markdown as in
# plain text (a single newline joins two lines into one paragraph in Markdown).
BLOCK_SEPARATOR = "\n\n"


async def rebuild(
    store: Store, session_id: str, entries: list[Entry], *, repair: bool = True
) -> tuple[list[Message], int]:
    """The conversation from stored entries, and the seq of the last entry it reflects. With
    `repair`, a tool call a crash or a cancel left without its result gets a synthetic one,
    stored too; never while another live process runs a turn of the session (its calls are
    still on their way to their results)."""
    last = entries[-1].seq if entries else 0
    entries = checkpoints.effective(entries)  # without what a rewind took back
    messages: list[Message] = []
    # What comes before the last compaction is not in the conversation any more.
    start = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].kind == "compaction"), 0)
    for entry in entries[start:]:
        if entry.kind == "user":
            messages.append(transcript.user_from_body(entry.body))
        elif entry.kind == "assistant":
            messages.append(transcript.assistant_from_body(entry.body))
        elif entry.kind == "tool_result":
            messages.append(ToolResultsMessage((transcript.result_from_body(entry.body),)))
        elif entry.kind == "compaction":
            from acp_fsm.compaction import from_body  # not on the session/new path

            messages = from_body(entry.body)
    messages = transcript.group_results(messages)
    if not repair:
        return messages, last
    fixed, added = transcript.repair(messages)
    for result in added:
        content: list[acp.ToolCallContent] = [updates.text_block(result.content)]
        last = await store.append(
            session_id,
            "tool_result",
            transcript.result_body(result, updates.final_view("failed", content)),
        )
    if added:
        log.warning(
            "transcript_repaired_on_load", session_id=session_id, calls=[r.call_id for r in added]
        )
    return fixed, last


def settings_of(entries: list[Entry]) -> Settings:
    """A session's settings: its `settings` entries, in order."""
    return Settings.folded([e.body for e in entries if e.kind == "settings"])


# An update of a replay and the session it is on (a subagent's child session, or the one
# loaded).
Replayed = tuple[str, "acp.SessionUpdate"]


def replay_updates(
    session_id: str, entries: list[Entry], *, subagents: bool = False
) -> list[Replayed]:
    """The updates that show a stored conversation as it looked live (ACP: session/load),
    each message with the id it was shown with (`_message_id`); with `subagents` (the editor
    shows them as child sessions), each subagent as its child session (`_child`)."""
    out: list[Replayed] = []
    plans: dict[str, list[acp.PlanEntry]] = {}  # call id -> the plan an update_plan call set
    children: dict[str, str] = {}  # call id -> its subagent's child session, replayed

    def add(*found: acp.SessionUpdate) -> None:
        out.extend((session_id, update) for update in found)

    for entry in checkpoints.effective(entries):
        body = entry.body
        if entry.kind in ("user", "command"):
            add(*user_chunks(body["prompt"], _message_id(session_id, entry, "user")))
        elif entry.kind in ("compaction", "notice"):
            text = body["notice"] if entry.kind == "compaction" else body["text"]
            message_id = _message_id(session_id, entry, "text")
            add(updates.agent_text(text, message_id))
        elif entry.kind == "assistant":
            add(*_assistant(session_id, entry, plans))
        elif entry.kind == "subagent" and subagents and "entries" in body:
            out.extend(_child(session_id, body))
            children[body["callId"]] = body["sessionId"]
        elif entry.kind == "tool_result":
            add(*_result(body, plans, children.get(body["callId"])))
    return out


def _child(parent: str, body: dict[str, Any]) -> list[Replayed]:
    """A stored subagent as its child session showed it: announced on `parent` (no longer at
    work: no capabilities, no running state), its task from the parent, its own updates, its
    report to the parent, and how its work ended."""
    child = body["sessionId"]
    shown = child_sessions.announcement(child, body["description"], body["prompt"], live=False)
    out: list[Replayed] = [(parent, shown)]

    def message(sender: str, recipient: str, text: str, ids: list[str]) -> None:
        outgoing, incoming = child_sessions.views(sender, recipient, text, (ids[0], ids[1]))
        out.extend(((sender, outgoing), (recipient, incoming)))

    message(parent, child, body["prompt"], body["messageIds"]["prompt"])
    own = [Entry(seq, item["kind"], item["body"], 0.0) for seq, item in enumerate(body["entries"])]
    out.extend(replay_updates(child, own))
    if body["report"]:
        message(child, parent, body["report"], body["messageIds"]["report"])
    ended = child_sessions.idle(body["stopReason"], body.get("error"))
    out.append((parent, child_sessions.state(child, ended)))
    return out


def _message_id(session_id: str, entry: Entry, part: str) -> str:
    """The id message `part` of `entry` ("user", "text" or "thinking") was shown with live;
    for one stored before messages had ids, one made from where it is stored, the same at
    every load."""
    if entry.kind == "assistant":
        found = (entry.body.get("messageIds") or {}).get(part)
    else:
        found = entry.body.get("messageId")
    if isinstance(found, str):
        return found
    return updates.stored_message_id(session_id, entry.seq, part)


def _assistant(
    session_id: str, entry: Entry, plans: dict[str, list[acp.PlanEntry]]
) -> list[acp.SessionUpdate]:
    """A stored model message: its text, its thought and its calls, as they were streamed."""
    out: list[acp.SessionUpdate] = []
    views = entry.body.get("views") or {}
    for part in entry.body["parts"]:
        if part["type"] in ("text", "thinking") and part["text"]:
            kind: updates.ChunkKind = (
                "agent_message_chunk" if part["type"] == "text" else "agent_thought_chunk"
            )
            message_id = _message_id(session_id, entry, part["type"])
            out.append(updates.chunk(kind, updates.text_content(part["text"]), message_id))
        elif part["type"] == "tool_call":
            view = views.get(part["id"]) or {
                "title": part["name"],
                "kind": "other",
                "rawInput": part.get("arguments") or {},
            }
            out.append(updates.tool_call(part["id"], {"name": part["name"], **view}))
            if part["name"] == updates.PLAN_TOOL:
                plans[part["id"]] = (part.get("arguments") or {}).get("entries") or []
    return out


def _result(
    body: dict[str, Any], plans: dict[str, list[acp.PlanEntry]], child: str | None
) -> list[acp.SessionUpdate]:
    """A stored tool result: the call's final update (and the plan an `update_plan` set),
    linked to its subagent's `child` session when that was replayed (else linked to none)."""
    view = body.get("view") or {}
    content = child_sessions.without_references(view.get("content") or [])
    if not content or any(block.get("type") == "terminal" for block in content):
        # a terminal belongs to the connection that ran it (sessions stored before
        # its output was kept): the result the model read holds the output instead
        content = [updates.text_block(body["content"])]
    if child is not None:
        content = [child_sessions.reference(child), *content]
    out: list[acp.SessionUpdate] = [
        updates.tool_call_update(
            body["callId"],
            view.get("status", "failed"),
            content=content,
            locations=view.get("locations"),
        )
    ]
    if body["callId"] in plans and view.get("status") == "completed":
        out.append(updates.plan(plans[body["callId"]]))
    return out


def user_chunks(prompt: list[Any], message_id: str) -> list[acp.SessionUpdate]:
    """A stored prompt's blocks as `user_message_chunk`s. Clients join the chunks of a message
    as they come, so a text block followed by another one ends with a blank line (none is
    added where a line break stands between them already): the blocks stay apart, as the
    model read them, and no block's own text changes otherwise."""
    chunks: list[acp.SessionUpdate] = []
    for block, after in zip(prompt, [*prompt[1:], None], strict=True):
        if _runs_into(block, after):
            block = {**block, "text": block["text"] + BLOCK_SEPARATOR}
        chunks.append(updates.chunk("user_message_chunk", block, message_id))
    return chunks


def _runs_into(block: dict[str, Any], after: dict[str, Any] | None) -> bool:
    """Whether text `block` would run into text `after` when joined."""
    if after is None or block.get("type") != "text" or after.get("type") != "text":
        return False
    text, following = str(block.get("text", "")), str(after.get("text", ""))
    return bool(text and following) and not text.endswith("\n") and not following.startswith("\n")
