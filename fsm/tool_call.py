"""A tool call's machine: one call of the model's message, from its announcement to its result.

    pending --allow--> allowed --start--> running --succeed--> completed
    pending --ask--> asked --allow--> allowed      (the user's answer, or a remembered one)
    allowed --question--> pending                  (a PreToolUse hook asks for the user's word)
    pending | asked | allowed --deny--> denied     (the user, the mode, the arguments, a
                                                    preview that shows it cannot work)
    running --error--> failed                      (the tool's own error result)
    denied --refuse--> failed                      (its result says why it did not run)
    any open state --cancel--> cancelled           (the turn was cancelled first)
    any open state --abandon--> failed             (the turn failed first)

The editor sees `pending` until the call runs (`in_progress`), then `completed` or `failed`;
a cancelled call is shown `failed` with a result that says it was interrupted or never
started. Every state but `completed`, `failed` and `cancelled` is open: a turn that ends
closes each open call (a synthetic result), so the model never sees a call without one.
"""

from __future__ import annotations

from enum import StrEnum

from acp_fsm.fsm.machine import MachineSpec, Row

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallStatus


class ToolCallState(StrEnum):
    PENDING = "pending"
    ASKED = "asked"
    ALLOWED = "allowed"
    DENIED = "denied"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ToolCallTrigger(StrEnum):
    ASK = "ask"
    QUESTION = "question"
    ALLOW = "allow"
    DENY = "deny"
    START = "start"
    SUCCEED = "succeed"
    ERROR = "error"
    REFUSE = "refuse"
    CANCEL = "cancel"
    ABANDON = "abandon"


S, T = ToolCallState, ToolCallTrigger

CLOSED = (S.COMPLETED, S.FAILED, S.CANCELLED)
OPEN = (S.PENDING, S.ASKED, S.ALLOWED, S.DENIED, S.RUNNING)
# ACP's `ToolCallStatus` the editor is shown in each state.
ACP_STATUS: dict[ToolCallState, ToolCallStatus] = {
    S.PENDING: "pending",
    S.ASKED: "pending",
    S.ALLOWED: "pending",
    S.DENIED: "pending",
    S.RUNNING: "in_progress",
    S.COMPLETED: "completed",
    S.FAILED: "failed",
    # v2's own status; v1, which has none for it, says "failed" (`acp_fsm.dialects`)
    S.CANCELLED: "cancelled",  # type: ignore[dict-item]  # not in v1's ToolCallStatus
}

TOOL_CALL = MachineSpec(
    name="tool_call",
    states=ToolCallState,
    triggers=ToolCallTrigger,
    initial=S.PENDING,
    final=CLOSED,
    groups={"open": OPEN},
    rows=(
        Row(T.ASK, S.PENDING, S.ASKED, doc="the call needs the user's answer"),
        Row(T.ALLOW, (S.PENDING, S.ASKED), S.ALLOWED),
        Row(T.QUESTION, S.ALLOWED, S.PENDING, doc="a PreToolUse hook of the user's asks for it"),
        Row(T.DENY, (S.PENDING, S.ASKED, S.ALLOWED), S.DENIED),
        Row(T.START, S.ALLOWED, S.RUNNING),
        Row(T.SUCCEED, S.RUNNING, S.COMPLETED),
        Row(T.ERROR, S.RUNNING, S.FAILED),
        Row(T.REFUSE, S.DENIED, S.FAILED),
        Row(T.CANCEL, OPEN, S.CANCELLED),
        Row(T.ABANDON, OPEN, S.FAILED),
    ),
    state_docs={
        S.PENDING: "announced (tool_call, pending); its arguments and tool checked",
        S.ASKED: "session/request_permission is out, bounded by ACP_PERMISSION_TIMEOUT_MS",
        S.ALLOWED: "will run: allowed by the user, a rule, a hook or the mode",
        S.DENIED: "will not run: refused by the user, a rule, a hook or the mode, or it cannot "
        "work",
        S.RUNNING: "running (in_progress): the tool's progress is shown as it comes",
        S.COMPLETED: "its result is stored, then shown (completed)",
        S.FAILED: "its error result is stored, then shown (failed)",
        S.CANCELLED: "the turn was cancelled first: a result says so (shown failed)",
    },
)
