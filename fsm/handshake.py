"""The connection's handshake machine (docs/machines.md).

    uninitialized --initialize--> initialized --close--> closing --finish--> closed
          \\-----------------------close-------------------^
    uninitialized --initialize_v2--> initialized            (the client settled ACP v2)

Before `initialize` only `initialize` is served; after it, a second `initialize` is refused.
`initialize` fires `initialize`, or `initialize_v2` when it settles ACP v2 (`versions`): the
version is the connection's for its life, held with what the client said (`ClientInfo`).
Input EOF or a lost output moves any open state to `closing`, where running work is cancelled
and persisted, and `finish` ends the process.

Flagged rule outside the table: `admission` decides per (state, method) whether a message is
dispatched or which error answers it. It cannot be a table row because it depends on whether
the method exists in ACP at all (-32601 in every state) rather than on the state alone.
"""

from __future__ import annotations

from enum import StrEnum

from acp_fsm.fsm.machine import MachineSpec, Row
from acp_fsm.protocol.errors import InternalError, MethodNotFound, RpcError, ServerNotInitialized


class HandshakeState(StrEnum):
    UNINITIALIZED = "uninitialized"
    INITIALIZED = "initialized"
    CLOSING = "closing"
    CLOSED = "closed"


class HandshakeTrigger(StrEnum):
    INITIALIZE = "initialize"
    INITIALIZE_V2 = "initialize_v2"
    CLOSE = "close"
    FINISH = "finish"


S, T = HandshakeState, HandshakeTrigger

HANDSHAKE = MachineSpec(
    name="handshake",
    states=HandshakeState,
    triggers=HandshakeTrigger,
    initial=S.UNINITIALIZED,
    final=(S.CLOSED,),
    rows=(
        Row(T.INITIALIZE, S.UNINITIALIZED, S.INITIALIZED, doc="valid initialize request (v1)"),
        Row(T.INITIALIZE_V2, S.UNINITIALIZED, S.INITIALIZED, doc="one that settles ACP v2"),
        Row(T.CLOSE, (S.UNINITIALIZED, S.INITIALIZED), S.CLOSING, doc="stdin EOF or stdout lost"),
        Row(T.FINISH, S.CLOSING, S.CLOSED, doc="work cancelled and persisted"),
    ),
    state_docs={
        S.UNINITIALIZED: "serves only `initialize`; other ACP methods get -32002",
        S.INITIALIZED: "dispatches every registered method; a second `initialize` gets -32002",
        S.CLOSING: "cancels running turns, persists them and flushes output",
        S.CLOSED: "the process exits 0",
    },
)

INITIALIZE_METHOD = "initialize"


class Handshake:
    """The connection's place in the handshake: its `state`, moved by `fire` alone, on the
    startup path (the fast `initialize`) and at run time alike."""

    state: str

    def __init__(self) -> None:
        self.state = HANDSHAKE.initial.value

    def __repr__(self) -> str:
        return f"<Handshake {self.state}>"

    def fire(self, trigger: HandshakeTrigger) -> None:
        """The transition by the table (`IllegalTransition` where it has no row)."""
        self.state = HANDSHAKE.step(self.state, trigger).value


def admission(state: HandshakeState, method: str, *, known: bool) -> RpcError | None:
    """None when `method` may be dispatched in `state`, else the error that answers it.

    `known` says whether the method exists in ACP (served by us or not): unknown methods are
    -32601 in every state, as JSON-RPC requires.
    """
    if not known:
        return MethodNotFound(f"Method not found: {method}")
    if state == HandshakeState.UNINITIALIZED:
        if method == INITIALIZE_METHOD:
            return None
        return ServerNotInitialized("Server not initialized: call initialize first")
    if state == HandshakeState.INITIALIZED:
        if method == INITIALIZE_METHOD:
            return ServerNotInitialized("Server already initialized: initialize may be called once")
        return None
    return InternalError(f"Server is {state}; not accepting {method}")
