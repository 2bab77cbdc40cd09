"""Where a turn runs the user's hooks (`acp_fsm.hooks`, `acp_fsm.hook_runs`): `PreToolUse`
once the calls of a message are classified (it may deny a call, ask for one the mode would
run, or allow one that would ask; a deny or ask rule still holds), `PostToolUse` when a call
succeeded (what it says joins the result the model reads), and `Stop` when the turn would end
(a hook that blocks has the model go on, its reason the next user message). A hook's failure
is shown to the user and changes nothing."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from acp_fsm import config_options, hook_runs, transcript, updates
from acp_fsm.fsm.tool_call import ToolCallState, ToolCallTrigger
from acp_fsm.hooks import CLAUDE_NAMES, Event, Hook
from acp_fsm.providers.types import TextPart
from acp_fsm.tools.base import ToolOutcome
from acp_fsm.turn import storing

if TYPE_CHECKING:
    from acp_fsm.turn.calls import PendingCall
    from acp_fsm.turn.runner import Turn

MAX_GOING_ON: Final = 5  # times Stop hooks may have one turn go on
# acp-fsm's modes by Claude Code's name for them, which a hook reads in `permission_mode`.
PERMISSION_MODES: Final = {
    config_options.ASK: "default",
    config_options.ACCEPT_EDITS: "acceptEdits",
    config_options.PLAN: "plan",
    config_options.FULL_ACCESS: "bypassPermissions",
}


def event(session_id: str, cwd: Path, mode: str, name: Event, **fields: Any) -> dict[str, Any]:
    """The JSON object a hook reads on stdin: its event `name` in a session, and `fields`."""
    return {
        "session_id": session_id,
        "transcript_path": None,
        "cwd": str(cwd),
        "permission_mode": PERMISSION_MODES.get(mode, "default"),
        "hook_event_name": name,
        **fields,
    }


async def _run(turn: Turn, name: Event, hooks: list[Hook], **fields: Any) -> hook_runs.Said:
    """Run the turn's `hooks` of event `name`; what they said for the user is shown."""
    cwd = turn.context.roots[0]
    found = event(turn.context.session_id, cwd, turn.mode, name, **fields)
    said = await hook_runs.run_all(hooks, found, cwd, turn.token)
    for text in said.shown:
        turn.notify(text)
    if said.halt is not None and turn.halted is None:
        turn.halted = said.halt
    return said


def tool_fields(pc: PendingCall, cwd: Path) -> dict[str, Any]:
    """A call as a tool event names it: Claude Code's tool name where there is one (acp-fsm's
    in `acp_fsm_tool`), its input with the absolute `file_path` Claude Code's file tools
    have, and its id."""
    name = pc.call.name
    tool_input = dict(pc.call.arguments)
    if isinstance(path := tool_input.get("path"), str):
        tool_input.setdefault("file_path", os.path.normpath(cwd / os.path.expanduser(path)))
    return {
        "tool_name": CLAUDE_NAMES.get(name, (name,))[0],
        "acp_fsm_tool": name,
        "tool_input": tool_input,
        "tool_use_id": pc.call.id,
    }


async def before_calls(turn: Turn) -> None:
    """`PreToolUse` for each call that may still run, in order."""
    cwd = turn.context.roots[0]
    for pc in turn.calls:
        hooks = turn.hooks.of("PreToolUse", pc.call.name)
        if not hooks or pc.state not in (ToolCallState.PENDING, ToolCallState.ALLOWED):
            continue
        said = await _run(turn, "PreToolUse", hooks, **tool_fields(pc, cwd))
        pc.notes.extend(said.context)
        if said.decision == "deny":
            pc.deny(
                f"The user's PreToolUse hook blocked this {pc.call.name} call, so it was not "
                f"run: {said.reason}"
            )
        elif said.decision == "ask":  # the user's word, asked every time
            pc.held = said.reason
            if pc.state == ToolCallState.ALLOWED:
                pc.fire(ToolCallTrigger.QUESTION)
        elif said.decision == "allow" and pc.state == ToolCallState.PENDING and pc.rule is None:
            pc.fire(ToolCallTrigger.ALLOW)  # an ask rule still asks


async def after_call(turn: Turn, pc: PendingCall, outcome: ToolOutcome) -> ToolOutcome:
    """`PostToolUse` for a call that succeeded: what its hooks say for the model (a block's
    reason, their context) joins the result."""
    hooks = turn.hooks.of("PostToolUse", pc.call.name)
    if hooks and not outcome.is_error:
        fields = tool_fields(pc, turn.context.roots[0])
        said = await _run(
            turn, "PostToolUse", hooks, **fields, tool_response={"output": outcome.output}
        )
        if said.decision == "deny":
            pc.notes.append(f"The user's PostToolUse hook says: {said.reason}")
        pc.notes.extend(said.context)
    if not pc.notes:
        return outcome
    added = "\n\n".join(f"[hook] {note}" for note in pc.notes)
    return replace(outcome, output=f"{outcome.output}\n\n{added}")


async def goes_on(turn: Turn, answer: str) -> bool:
    """`Stop`, when the model's answer would end the turn: True when a hook blocked it and the
    model goes on, its reason stored as the user's next message (at most `MAX_GOING_ON` times
    a turn; a subagent's turn has none)."""
    hooks = turn.hooks.of("Stop")
    if not hooks or turn.context.subagent:
        return False
    active = turn.went_on > 0
    said = await _run(turn, "Stop", hooks, stop_hook_active=active, last_assistant_message=answer)
    if said.decision != "deny" or said.halt is not None:
        return False
    if turn.went_on >= MAX_GOING_ON:
        turn.notify(f"Stop hooks had the model go on {MAX_GOING_ON} times; the turn ends now.")
        return False
    turn.went_on += 1
    text = f"Stop hook feedback:\n{said.reason}"
    part = TextPart(text)
    body = {"prompt": [updates.text_block(text)], "parts": [transcript.part_to_json(part)]}
    await storing.add_user(turn, body, (part,))
    return True
