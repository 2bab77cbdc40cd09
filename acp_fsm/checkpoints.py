"""Checkpoints and rewinds, as a session's entries record them (docs/rewind.md).

A tool that changes a file stores a `checkpoint` entry first, one per file, committed before
it writes: `{"callId", "path", "before": its text then (None: there was no file), "after":
the digest of the text it writes (None: it deletes the file)}`. Every prompt of the user's
(a `user` entry with a `messageId`) is a point the session can be rewound to: `plan` finds
what restoring the files to that point takes, and a `rewind` entry `{"to": seq, "messageId",
"restored", "commands"}`, stored once the files are restored, takes the conversation back:
the entries from `to` up to it are no longer the session's (`effective`), for the model, a
load, a fork, or a later rewind. Entries are never deleted: another process reading the
session sees the same history.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from acp_fsm.store import Entry

CHECKPOINT: Final = "checkpoint"
REWIND: Final = "rewind"
COMMAND_TOOLS: Final = frozenset({"run_command"})
LABEL_CHARS: Final = 80


def digest(text: str | None) -> str | None:
    """What a checkpoint keeps of the text a call writes: enough to tell it from any other."""
    return (
        None if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    )


def before_fields(before: str | bytes | None) -> dict[str, Any]:
    """How a checkpoint stores a file's content before a change: its text, or the bytes of
    one that is not UTF-8 (base64)."""
    if isinstance(before, bytes):
        return {"before": None, "beforeBytes": base64.b64encode(before).decode()}
    return {"before": before}


def stored_before(body: dict[str, Any]) -> str | bytes | None:
    """A checkpoint's content before its change, as `before_fields` stored it."""
    if "beforeBytes" in body:
        return base64.b64decode(body["beforeBytes"])
    before: str | None = body["before"]
    return before


def effective(entries: list[Entry]) -> list[Entry]:
    """The session's entries as its rewinds left them: without those a rewind took back, nor
    the `rewind` entries themselves."""
    if not any(entry.kind == REWIND for entry in entries):
        return entries
    kept: list[Entry] = []
    for entry in entries:
        if entry.kind == REWIND:
            to = entry.body["to"]
            kept = [e for e in kept if e.seq < to]
        else:
            kept.append(entry)
    return kept


@dataclass(frozen=True, slots=True)
class Point:
    """A prompt of the user's the session can be rewound to (to just before it)."""

    number: int  # 1 for the session's first prompt still in it
    seq: int
    message_id: str
    text: str  # the prompt's text, whole
    files: tuple[str, ...]  # the files changed from here on (by the agent's tools)
    commands: bool  # a command ran in this prompt's turn (its effects are not undone)

    @property
    def label(self) -> str:
        line = " ".join(self.text.split())
        return line if len(line) <= LABEL_CHARS else line[: LABEL_CHARS - 1] + "…"

    def as_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "messageId": self.message_id,
            "prompt": self.text,
            "changedFiles": list(self.files),
            "ranCommands": self.commands,
        }


def points(entries: list[Entry]) -> list[Point]:
    """The points of the session's effective entries, oldest first."""
    kept = effective(entries)
    starts = [i for i, e in enumerate(kept) if e.kind == "user" and "messageId" in e.body]
    found: list[Point] = []
    later: tuple[str, ...] = ()  # the files changed after the turn at hand, in order
    ends = [*starts[1:], len(kept)]
    for number in range(len(starts), 0, -1):  # the last turn first: each read once
        turn = kept[starts[number - 1] : ends[number - 1]]
        body = turn[0].body
        text = "\n".join(
            b.get("text", "") for b in body.get("prompt", ()) if b.get("type") == "text"
        )
        own = (e.body["path"] for e in turn if e.kind == CHECKPOINT)
        later = tuple(dict.fromkeys([*own, *later]))
        ran = _ran_commands(turn)
        found.append(Point(number, turn[0].seq, body["messageId"], text, later, ran))
    return found[::-1]


def _ran_commands(entries: Iterable[Entry]) -> bool:
    """Whether a command ran among `entries`: a call of a command tool whose result does not
    say it never ran (a subagent's calls included)."""
    return _ran((entry.kind, entry.body) for entry in entries)


def _ran(entries: Iterable[tuple[str, dict[str, Any]]]) -> bool:
    calls: set[str] = set()
    for kind, body in entries:
        if kind == "assistant":
            parts = body["parts"]
            calls.update(p["id"] for p in parts if p["type"] == "tool_call" and _command(p))
            continue
        ran = kind == "tool_result" and body["callId"] in calls and body.get("ran", True)
        inner = ((e["kind"], e["body"]) for e in body.get("entries", ()))
        if ran or (kind == "subagent" and _ran(inner)):
            return True
    return False


def _command(part: dict[str, Any]) -> bool:
    return part["name"] in COMMAND_TOOLS


@dataclass
class Plan:
    """What rewinding to `point` restores: each file the agent changed since, to its text
    then (None: it did not exist), with the digest of the text the agent last left in it
    (a file holding anything else was changed outside the agent since)."""

    point: Point
    before: dict[str, str | bytes | None] = field(default_factory=dict)  # path -> what to restore
    left: dict[str, str | None] = field(default_factory=dict)  # path -> digest the agent left
    commands: list[Point] = field(default_factory=list)  # the turns that ran commands


def plan(entries: list[Entry], point: Point) -> Plan:
    """The plan for rewinding to `point` (one of `points(entries)`)."""
    found = Plan(point)
    for entry in effective(entries):
        if entry.seq >= point.seq and entry.kind == CHECKPOINT:
            path = entry.body["path"]
            if path not in found.before:
                found.before[path] = stored_before(entry.body)
            found.left[path] = entry.body["after"]
    found.commands = [p for p in points(entries) if p.seq >= point.seq and p.commands]
    return found


def find(entries: list[Entry], wanted: str) -> Point | None:
    """The point `wanted` names: its number (`3`) or its prompt's message id."""
    found = points(entries)
    if wanted.isdigit():
        return next((p for p in found if p.number == int(wanted)), None)
    return next((p for p in found if p.message_id == wanted), None)
