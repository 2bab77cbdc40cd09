"""The tool calls an agent ran in a turn, read from the client's side, against the calls the
model meant: shared by the benchmarks of calls written as text (text_calls, local_model).

A `tool_call` update gives a call's id and its arguments (`rawInput`), not its tool: a call the
server returned natively is named by the model's answer (the call's id is the model's); a
call the model wrote as text is named by the agent's `written_calls` log line (its tools, in
the order the calls are announced).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

WRITTEN_LOG = "written_calls"


class Intended(NamedTuple):
    """A call the model meant: its tool and its arguments."""

    name: str
    arguments: Any


class Ran(NamedTuple):
    """A tool call the agent announced, as the editor saw it."""

    call_id: str
    name: str | None  # None when neither the answer nor the log names it
    arguments: Any  # its rawInput
    status: str  # the last status it was given


class Tally(NamedTuple):
    """Calls intended, run, run right (the intended tool with the intended arguments) and
    false (run beyond what was intended: where the model meant none, or more than it meant)."""

    intended: int = 0
    run: int = 0
    right: int = 0
    false: int = 0

    def __add__(self, other: tuple[Any, ...]) -> Tally:
        return Tally(*(a + b for a, b in zip(self, other, strict=True)))

    @property
    def wrong(self) -> int:
        """Run where one was meant, but not as it was meant."""
        return self.run - self.right - self.false


def ran_calls(
    updates: Iterable[Mapping[str, Any]], native: Mapping[str, str], written: Sequence[str]
) -> list[Ran]:
    """The calls a turn's `session/update` payloads announce, in order, with their last
    status: named by `native` (the model's call ids -> tools), the others in turn by
    `written` (the tools of the agent's `written_calls` log lines, in order)."""
    found: dict[str, Ran] = {}
    unnamed = iter(written)
    for update in updates:
        kind = update.get("sessionUpdate")
        call_id = update.get("toolCallId")
        if kind == "tool_call" and isinstance(call_id, str) and call_id not in found:
            name = native.get(call_id) or next(unnamed, None)
            status = str(update.get("status", "pending"))
            found[call_id] = Ran(call_id, name, update.get("rawInput"), status)
        elif kind == "tool_call_update" and call_id in found and "status" in update:
            found[call_id] = found[call_id]._replace(status=str(update["status"]))
    return list(found.values())


def written_tools(log_lines: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tools of the agent's `written_calls` log lines, in order."""
    return [str(t) for line in log_lines if line.get("event") == WRITTEN_LOG for t in line["tools"]]


def tally(intended: Sequence[Intended], ran: Sequence[Ran], done: bool = False) -> Tally:
    """How the calls run compare with those intended: each intended call is matched by at
    most one run of the same tool with equal arguments (and, with `done`, that completed)."""
    left = list(intended)
    right = 0
    for call in ran:
        meant = Intended(call.name or "", call.arguments)
        if meant in left and (not done or call.status == "completed"):
            left.remove(meant)
            right += 1
    return Tally(len(intended), len(ran), right, max(0, len(ran) - len(intended)))
