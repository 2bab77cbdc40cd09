"""What the scripted session saw (`SessionRun`): every record, the responses by step, the
turns with their updates, the replay, the exit codes and what went wrong on either side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_fsm.devkit.editor import Editor, Record, Sent
from acp_fsm.devkit.schema_check.coverage import update_kinds
from acp_fsm.devkit.schema_check.session_script import scripted_editor


@dataclass
class Turn:
    """A prompt turn: the response, and the session's updates written before it."""

    response: dict[str, Any]
    updates: list[dict[str, Any]]


@dataclass
class SessionRun:
    """Everything the scripted session saw."""

    records: list[Record] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> the response
    turns: dict[str, Turn] = field(default_factory=dict)
    replay: list[dict[str, Any]] = field(default_factory=list)  # updates of session/load
    editor: Editor = field(default_factory=scripted_editor)
    exit_codes: list[int] = field(default_factory=list)
    bad_lines: list[bytes] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # failures of the scripted editor
    schema_violations: list[dict[str, Any]] = field(default_factory=list)  # the agent's logs

    @property
    def update_kinds(self) -> set[str]:
        return update_kinds(self.records)
