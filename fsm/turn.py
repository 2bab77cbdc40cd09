"""The turn machine: one `session/prompt` from the prompt to its stop reason.

    idle --start--> streaming --model_done--> done
    streaming --model_done [steered]--> streaming    (the user steered meanwhile: one more call)
    idle --compact--> compacting --compacted [on_demand]--> done      (the /compact command)
    idle --report--> reporting --reported--> done     (/status, /mcp: the agent answers)
    streaming --compact--> compacting --compacted--> streaming       (the context is nearly full)
    streaming --tools_requested [needs_permission]--> awaiting_permission
    streaming --tools_requested--> running_tools
    awaiting_permission --permissions_settled--> running_tools
    running_tools --tools_done--> streaming          (the results feed the next model call)
    running_tools --limit_reached--> done            (ACP_FSM_MAX_TURN_REQUESTS model calls)
    running_tools --halted--> done                   (a hook said stop: `continue: false`)
    streaming --go_on--> streaming                   (a Stop hook has the model go on)
    streaming | compacting | reporting | awaiting_permission | running_tools --cancel--> draining
    draining --drained--> cancelled
    idle --cancel--> cancelled                       (a cancel before the turn started)
    any working state --fail--> failed               (the transition first, then its effects:
                                                      the open calls get their results)

Each state names the work done while in it (`state_docs`); that work returns the trigger it
ends with, and the runner (`acp_fsm.turn.runner`) alone fires it: nothing is done inside a
transition, so a cancel can interrupt any work. The diagram draws the five working states as
one (`working`), with one `cancel` and one `fail` edge.
"""

from __future__ import annotations

from enum import StrEnum

from acp_fsm.fsm.machine import Guard, MachineSpec, Row


class TurnState(StrEnum):
    IDLE = "idle"
    STREAMING = "streaming"
    COMPACTING = "compacting"
    REPORTING = "reporting"
    AWAITING_PERMISSION = "awaiting_permission"
    RUNNING_TOOLS = "running_tools"
    DRAINING = "draining"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"


class TurnTrigger(StrEnum):
    START = "start"
    COMPACT = "compact"
    COMPACTED = "compacted"
    REPORT = "report"
    REPORTED = "reported"
    TOOLS_REQUESTED = "tools_requested"
    PERMISSIONS_SETTLED = "permissions_settled"
    TOOLS_DONE = "tools_done"
    LIMIT_REACHED = "limit_reached"
    MODEL_DONE = "model_done"
    GO_ON = "go_on"
    HALTED = "halted"
    CANCEL = "cancel"
    DRAINED = "drained"
    FAIL = "fail"


S, T = TurnState, TurnTrigger

# States in which a cancel interrupts work (phase 1: the stream; phase 2: client requests and
# running tools), and states whose work is still under way for `fail`.
CANCELLABLE = (S.STREAMING, S.COMPACTING, S.REPORTING, S.AWAITING_PERMISSION, S.RUNNING_TOOLS)
FINAL = (S.CANCELLED, S.DONE, S.FAILED)

NEEDS_PERMISSION = Guard("needs_permission", "some call waits for the user's answer")
ON_DEMAND = Guard("on_demand", "the user asked for it (/compact), so the turn ends")
STEERED = Guard("steered", "a message the user steered the turn with waits for the model")

TURN = MachineSpec(
    name="turn",
    states=TurnState,
    triggers=TurnTrigger,
    initial=S.IDLE,
    final=FINAL,
    groups={"working": CANCELLABLE},
    rows=(
        Row(T.START, S.IDLE, S.STREAMING),
        Row(T.COMPACT, S.IDLE, S.COMPACTING, doc="the prompt is the /compact command"),
        Row(
            T.COMPACT,
            S.STREAMING,
            S.COMPACTING,
            doc="before a model call that would not fit the context window, or after the "
            "provider said it did not",
        ),
        Row(T.COMPACTED, S.COMPACTING, S.DONE, guard=ON_DEMAND),
        Row(T.COMPACTED, S.COMPACTING, S.STREAMING),
        Row(T.REPORT, S.IDLE, S.REPORTING, doc="the prompt is /status or /mcp"),
        Row(T.REPORTED, S.REPORTING, S.DONE),
        Row(T.CANCEL, S.IDLE, S.CANCELLED, doc="cancelled before it started: nothing to drain"),
        Row(T.TOOLS_REQUESTED, S.STREAMING, S.AWAITING_PERMISSION, guard=NEEDS_PERMISSION),
        Row(T.TOOLS_REQUESTED, S.STREAMING, S.RUNNING_TOOLS),
        Row(T.PERMISSIONS_SETTLED, S.AWAITING_PERMISSION, S.RUNNING_TOOLS),
        Row(T.TOOLS_DONE, S.RUNNING_TOOLS, S.STREAMING),
        Row(T.LIMIT_REACHED, S.RUNNING_TOOLS, S.DONE),
        Row(
            T.HALTED,
            S.RUNNING_TOOLS,
            S.DONE,
            doc="a hook of the user's said the turn stops (`continue: false`)",
        ),
        Row(
            T.GO_ON,
            S.STREAMING,
            S.STREAMING,
            doc="the answer would end the turn, but a Stop hook of the user's has the model "
            "go on (its reason is the next user message)",
        ),
        Row(
            T.MODEL_DONE,
            S.STREAMING,
            S.STREAMING,
            guard=STEERED,
            doc="the answer ended the turn, but the user's steered message has not been read",
        ),
        Row(T.MODEL_DONE, S.STREAMING, S.DONE),
        Row(T.CANCEL, CANCELLABLE, S.DRAINING),
        Row(T.DRAINED, S.DRAINING, S.CANCELLED),
        Row(T.FAIL, (*CANCELLABLE, S.DRAINING), S.FAILED),
    ),
    state_docs={
        S.IDLE: "the prompt is stored; nothing runs yet",
        S.STREAMING: "one model call: deltas become agent_message_chunk / agent_thought_chunk "
        "updates, complete tool calls become tool_call (pending)",
        S.COMPACTING: "one model call summarises the older part of the conversation; the "
        "summary and the latest turns, tool calls with their results, replace it (stored)",
        S.REPORTING: "the agent answers the command itself (no model call); the answer is "
        "stored, so a reload shows it",
        S.AWAITING_PERMISSION: "session/request_permission for each call that needs it, bounded "
        "by ACP_PERMISSION_TIMEOUT_MS and the turn's token",
        S.RUNNING_TOOLS: "approved calls run in order (in_progress, then completed or failed); "
        "refused ones get a result saying so; every result is stored as it arrives",
        S.DRAINING: "calls without a result get a synthetic one and a final failed update; "
        "the cut assistant message is stored with stopReason cancelled",
        S.CANCELLED: "the prompt is answered with stopReason cancelled",
        S.DONE: "the prompt is answered with the model's stop reason (or max_turn_requests)",
        S.FAILED: "the prompt is answered with a JSON-RPC error; the transcript stays valid",
    },
)
