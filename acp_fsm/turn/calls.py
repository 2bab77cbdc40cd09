"""The tool calls of the model's message, each moved by its own machine (`fsm/tool_call.py`):
what a new call is (`classify`), a remembered "always" answer (`remembered`), and its result,
stored and then shown (`answer`, `close_open`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from acp_fsm import compaction, config_options, permission_rules, results, updates
from acp_fsm.fsm.tool_call import ACP_STATUS, OPEN, TOOL_CALL, ToolCallState, ToolCallTrigger
from acp_fsm.providers.types import ToolCallPart, ToolResultPart
from acp_fsm.tools.base import Tool, ToolCallView, ToolOutcome
from acp_fsm.turn import storing
from acp_fsm.turn.model_call import window

if TYPE_CHECKING:
    from acp_fsm.permission_rules import Rule
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")

S, T = ToolCallState, ToolCallTrigger


@dataclass(slots=True)
class PendingCall:
    """One tool call of the current assistant message, on its way to a result."""

    call: ToolCallPart
    tool: Tool | None
    view: ToolCallView
    state: ToolCallState = S.PENDING  # moved by `fire` only
    reason: str = ""  # why a denied call does not run: its result's text
    confined: bool = False  # inside the session's roots (see `Tool.confined`)
    preview: tuple[acp.ToolCallContent, ...] = ()  # the change it will make, shown before asking
    rule: Rule | None = None  # the user's permission rule that decides it, if one does
    held: str | None = None  # why it is asked every time (a hook of the user's, a protected path)
    notes: list[str] = field(default_factory=list)  # the hooks' words for the model's result
    result: ToolResultPart | None = None

    @property
    def is_open(self) -> bool:
        return self.state in OPEN

    def fire(self, trigger: ToolCallTrigger) -> None:
        """The call's transition by its table (`IllegalTransition` where it has no row)."""
        before = self.state
        self.state = ToolCallState(TOOL_CALL.step(self.state, trigger))
        log.debug(
            "tool_call_transition",
            call=self.call.id,
            trigger=trigger.value,
            source=before.value,
            dest=self.state.value,
        )

    def deny(self, reason: str) -> None:
        self.fire(T.DENY)
        self.reason = reason


def classify(turn: Turn, call: ToolCallPart) -> PendingCall:
    """The call as the turn takes it: denied at once when it cannot run (invalid arguments, an
    unknown tool, Plan mode), allowed when nobody needs to be asked, else pending the user."""
    tool = turn.tools.get(call.name)
    generic = ToolCallView(title=call.name or "tool call", kind="other", raw_input=call.arguments)
    if call.error is not None:
        return _denied_call(
            call,
            tool,
            generic,
            f"Invalid arguments for {call.name}: {call.error}. Call it again "
            "with a JSON object that matches the tool's schema.",
        )
    mode = turn.mode
    if tool is None:
        offered = [name for name, t in turn.tools.items() if config_options.offered(mode, t.kind)]
        return _denied_call(
            call,
            None,
            generic,
            f"Unknown tool {call.name!r}. Available tools: {', '.join(offered)}.",
        )
    env = turn.env(call.id)
    try:
        problem = tool.validate(call.arguments)
        if problem is None:
            view = tool.view(call.arguments, env)
            asks = tool.needs_permission(call.arguments, env)
            confined = tool.confined(call.arguments, env)
    except Exception as exc:  # a tool bug on odd arguments is the model's error to see
        log.exception("tool_arguments_failed", tool=call.name)
        problem = f"the arguments could not be used ({type(exc).__name__}: {exc})"
    if problem is not None:
        return _denied_call(call, tool, generic, f"Invalid arguments for {call.name}: {problem}")
    rule = turn.rules.judge(call.name, call.arguments, env.cwd) if turn.rules else None
    if rule is not None and rule.verdict == "deny":  # in every mode, Full access included
        return _denied_call(call, tool, view, ruled_out(call.name, rule))
    if not config_options.offered(mode, tool.kind):
        return _denied_call(call, tool, view, _planning(call.name, turn.read_only))
    pending = PendingCall(call, tool, view, confined=confined, rule=rule)
    if (protected := permission_rules.protected(call.name, call.arguments, env.cwd)) is not None:
        pending.held = f"it changes {protected}"  # in every mode, whatever a rule allows
        return pending
    if rule is not None:  # the user's word for such calls: asked every time, or never
        if rule.verdict == "allow":
            pending.fire(T.ALLOW)
        return pending
    if tool.always_asks(call.arguments, env):
        return pending  # in every mode, whatever was answered "always"
    if not remembered(turn, pending) and (
        not asks or config_options.runs_unasked(mode, tool.kind, confined)
    ):
        pending.fire(T.ALLOW)
    return pending


def ruled_out(tool: str, rule: Rule) -> str:
    """What the model reads of a call a deny rule of the user's refused."""
    return (
        f"The user's permission rule `{rule.text}` (in {rule.source}) denies this {tool} "
        "call, so it was not run. Do not try to get around it; say what you could not do."
    )


def _denied_call(
    call: ToolCallPart, tool: Tool | None, view: ToolCallView, reason: str
) -> PendingCall:
    pending = PendingCall(call, tool, view)
    pending.deny(reason)
    return pending


def remembered(turn: Turn, pc: PendingCall) -> bool:
    """Apply the user's "always reject" answer for the call's tool in this session; True
    when one applied. (An "always allow" is stored as rules: `rule_store`.)"""
    if pc.call.name in turn.context.rejected:
        pc.deny(denied(pc.call.name, always=True))
        return True
    return False


def granted(turn: Turn, pc: PendingCall) -> bool:
    """Allow the call when a rule stored by an earlier answer of this turn's allows it; True
    when one did."""
    if turn.rules is None:
        return False
    ruling = turn.rules.judge(pc.call.name, pc.call.arguments, turn.context.roots[0])
    if ruling is None or ruling.verdict != "allow":
        return False
    pc.rule = ruling
    pc.fire(T.ALLOW)
    return True


async def answer(
    turn: Turn,
    pc: PendingCall,
    outcome: ToolOutcome,
    trigger: ToolCallTrigger,
    *,
    wait: bool = True,
) -> acp.SessionUpdateToolCallUpdate:
    """Close the call with `outcome` by `trigger`: committed, then told in its final update
    (commit, then tell: a crash one instant later must not lose what the editor was shown as
    done). Without `wait` the result is only queued and the update returned, not sent: the
    caller sends it once the store has caught up (`close_open`). A result too large for the
    store or the window is cut down first (`results.bounded`)."""
    closed = ToolCallState(TOOL_CALL.step(pc.state, trigger))  # refused here if illegal
    most = compaction.result_chars(window(turn), turn.config().max_tokens)
    outcome = results.bounded(outcome, int(most / turn.budget.scale))
    output = outcome.output or "(no output)"
    status = ACP_STATUS[closed]
    content = list(outcome.content) or [updates.text_block(output)]
    locations = list(outcome.locations) if outcome.locations is not None else None
    result = ToolResultPart(pc.call.id, output, outcome.is_error)
    stored = content if outcome.replay is None else list(outcome.replay)
    view = updates.final_view(status, stored, locations)
    await storing.add_result(turn, result, view, wait=wait, ran=pc.state == S.RUNNING)
    pc.fire(trigger)
    pc.result = result
    # With a `replay`, the editor keeps its view (an editor's terminal), but for the content
    # the outcome gives as well (a terminal of the agent's, and the command's status)
    live = content if outcome.replay is None or outcome.content else None
    update = updates.tool_call_update(pc.call.id, status, content=live, locations=locations)
    if wait:
        turn.update(update)
    return update


async def close_open(
    turn: Turn, wording: Callable[[PendingCall], str], trigger: ToolCallTrigger
) -> None:
    """Give every open call a synthetic result (a cancel, a failure) by `trigger`: all queued
    at once, then told together once committed (one wait, not one per call)."""
    told = [
        await answer(turn, pc, ToolOutcome(wording(pc), is_error=True), trigger, wait=False)
        for pc in turn.calls
        if pc.is_open
    ]
    if told:
        await turn.entries.settle()
    for update in told:
        turn.update(update)


def denied(tool: str, *, always: bool) -> str:
    """The result of a call the user rejected."""
    if always:
        return (
            f"Denied by the user: they chose to always reject {tool} in this session, so "
            "the call was not run."
        )
    return (
        f"Denied by the user: they rejected this {tool} call, so it was not run. Do not "
        "retry it unless they ask."
    )


def _planning(tool: str, reviewing: bool) -> str:
    if reviewing:
        return (
            f"Not run: this turn is a /review, where only read-only tools are available, so "
            f"this {tool} call was refused. Report the change as a finding instead."
        )
    return (
        f"Not run: the session is in Plan mode, where only read-only tools are available, "
        f"so this {tool} call was refused. Answer with a plan instead; the user switches "
        "mode to carry it out."
    )
