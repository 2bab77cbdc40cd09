"""`awaiting_permission`: `session/request_permission` for each call that waits for the user,
in order, bounded by ACP_PERMISSION_TIMEOUT_MS and the turn's token."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_fsm import updates
from acp_fsm.fsm.tool_call import ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.protocol.errors import OutboundCancelled, OutboundError, OutboundTimeout
from acp_fsm.turn.calls import PendingCall, denied, remembered

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.turn.runner import Turn

PERMISSION_OPTIONS: list[acp.PermissionOption] = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
]
# For a call an "always allow" would not cover (`calls.remembered`: one outside the roots, a
# fetch of the user's own network, one an ask rule decides): the next such call is asked
# anyway, so it is not offered.
_NOT_ALWAYS = [option for option in PERMISSION_OPTIONS if option["kind"] != "allow_always"]


def options_for(pc: PendingCall) -> list[acp.PermissionOption]:
    """The options the user is offered for `pc`: only answers that will be honoured (a call
    an ask rule of the user's decides is asked every time)."""
    return PERMISSION_OPTIONS if pc.confined and pc.rule is None else _NOT_ALWAYS


async def ask_permissions(turn: Turn) -> TurnTrigger:
    for pc in turn.calls:
        if pc.state != ToolCallState.PENDING:
            continue
        if pc.rule is None and remembered(turn, pc):  # answered "always"; an ask rule asks
            continue
        await _ask(turn, pc)
    return TurnTrigger.PERMISSIONS_SETTLED


async def _ask(turn: Turn, pc: PendingCall) -> None:
    offered = options_for(pc)
    params = {
        "sessionId": turn.effects.session_id,
        "toolCall": updates.tool_call_fields(
            pc.call.id, updates.view_body(pc.view, pc.call.name), pc.preview
        ),
        "options": offered,
    }
    pc.fire(ToolCallTrigger.ASK)
    try:
        answer = await turn.effects.client.call_client(
            "session/request_permission", params, token=turn.token
        )
    except OutboundCancelled:
        raise Cancelled(turn.token.reason or "cancelled") from None
    except OutboundError as exc:
        pc.deny(_unanswered(pc.call.name, exc))
        return
    outcome = answer["outcome"]
    if outcome["outcome"] == "cancelled":
        if turn.token.is_cancelled:
            raise Cancelled(turn.token.reason or "cancelled")
        pc.deny(
            f"The permission request for this {pc.call.name} call was cancelled by the "
            "client, so the call was not run."
        )
        return
    kind = next((o["kind"] for o in offered if o["optionId"] == outcome["optionId"]), None)
    if kind is None:  # an option it was not offered is no answer either
        pc.deny(f"The client answered with an unknown option {outcome['optionId']!r}.")
        return
    allowed = kind.startswith("allow")
    always = kind.endswith("always")
    if always:
        turn.context.always[pc.call.name] = allowed
    if allowed:
        pc.fire(ToolCallTrigger.ALLOW)
    else:
        pc.deny(denied(pc.call.name, always=always))


def _unanswered(tool: str, exc: OutboundError) -> str:
    if isinstance(exc, OutboundTimeout):
        return (
            f"No response from the user: the permission request for this {tool} call "
            "timed out, so the call was not run."
        )
    return f"The permission request failed ({exc}), so this {tool} call was not run."
