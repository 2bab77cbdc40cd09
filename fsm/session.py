"""A session's machine: its prompts, one turn at a time, from its opening to its close.

    idle --prompt--> running --finish--> idle
    running | queued --prompt--> queued           (a prompt sent while a turn runs waits)
    queued --finish [one_waiting]--> running      (the first waiting prompt begins its turn)
    queued --finish--> queued                     (... and others still wait)
    queued --withdraw [one_waiting]--> running    (a waiting prompt leaves unrun: cancelled,
    queued --withdraw--> queued                    or its request dropped)
    idle --close--> stopping
    running --close--> closing --finish--> stopping --stopped--> closed
    closing --stopped--> closed                   (the turn outlived the grace: it ends alone)
    closed --finish--> closed                     (... and then ends)

`session/close`, `session/delete` and the connection's end close a session: its waiting
prompts are withdrawn and its turn cancelled first (so `close` comes from `idle` or
`running` only), then the turn drains for a bounded grace, then the session's MCP servers,
background commands and title call stop. From `closing` on no prompt is taken.

`acp_fsm.session.lifecycle.Lifecycle` alone moves it; the waiting prompts are its queue, whose
length the `one_waiting` guard reads.
"""

from __future__ import annotations

from enum import StrEnum

from acp_fsm.fsm.machine import Guard, MachineSpec, Row


class SessionState(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    QUEUED = "queued"
    CLOSING = "closing"
    STOPPING = "stopping"
    CLOSED = "closed"


class SessionTrigger(StrEnum):
    PROMPT = "prompt"
    FINISH = "finish"
    WITHDRAW = "withdraw"
    CLOSE = "close"
    STOPPED = "stopped"


S, T = SessionState, SessionTrigger

# States that take a prompt (the others answer it "not found": the session is being closed).
OPEN = (S.IDLE, S.RUNNING, S.QUEUED)
# States in which a turn runs (a cancel reaches it).
BUSY = (S.RUNNING, S.QUEUED)

ONE_WAITING = Guard("one_waiting", "the prompt leaving the queue is the only one waiting")

SESSION = MachineSpec(
    name="session",
    states=SessionState,
    triggers=SessionTrigger,
    initial=S.IDLE,
    final=(S.CLOSED,),
    rows=(
        Row(T.PROMPT, S.IDLE, S.RUNNING, doc="its turn begins at once"),
        Row(T.PROMPT, BUSY, S.QUEUED, doc="it waits for the turns before it"),
        Row(T.FINISH, S.RUNNING, S.IDLE, doc="the turn ended, and nothing waits"),
        Row(T.FINISH, S.QUEUED, S.RUNNING, guard=ONE_WAITING),
        Row(T.FINISH, S.QUEUED, S.QUEUED, doc="the first waiting prompt begins its turn"),
        Row(T.WITHDRAW, S.QUEUED, S.RUNNING, guard=ONE_WAITING),
        Row(T.WITHDRAW, S.QUEUED, S.QUEUED, doc="a waiting prompt was cancelled or dropped"),
        Row(T.CLOSE, S.IDLE, S.STOPPING, doc="session/close, session/delete, the connection's end"),
        Row(T.CLOSE, S.RUNNING, S.CLOSING, doc="its turn cancelled, the waiting prompts withdrawn"),
        Row(T.FINISH, S.CLOSING, S.STOPPING, doc="the cancelled turn drained"),
        Row(T.STOPPED, (S.CLOSING, S.STOPPING), S.CLOSED),
        Row(T.FINISH, S.CLOSED, S.CLOSED, doc="a turn that outlived the grace ended"),
    ),
    state_docs={
        S.IDLE: "no turn runs: a prompt begins its turn at once",
        S.RUNNING: "one prompt's turn runs; session/cancel fires its token",
        S.QUEUED: "a turn runs and prompts wait, in order; session/cancel answers them cancelled",
        S.CLOSING: "closed while a turn ran: no prompt is taken; the cancelled turn drains, for "
        "a bounded grace",
        S.STOPPING: "its MCP servers, background commands and title call stop",
        S.CLOSED: "no longer open in this process",
    },
)
