"""`awaiting_permission`: `session/request_permission` for each call that waits for the user,
in order, bounded by ACP_PERMISSION_TIMEOUT_MS and the turn's token."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import structlog

from acp_fsm import rule_store, updates
from acp_fsm.blocking import run_blocking
from acp_fsm.fsm.tool_call import ToolCallState, ToolCallTrigger
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.protocol.errors import OutboundCancelled, OutboundError, OutboundTimeout
from acp_fsm.turn.calls import PendingCall, denied, granted, remembered

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.turn.runner import Turn

log = structlog.get_logger("turn")


def options_for(turn: Turn, pc: PendingCall) -> tuple[list[acp.PermissionOption], list[str]]:
    """The options the user is offered for `pc`, and the rules an "Always allow" stores:
    only answers that will be honoured. "Always allow" is offered where rules can say which
    calls it covers (`rule_store.proposed`), labelled with them; never for a call an ask rule
    of the user's decides (it is asked every time), nor for one outside the roots or to the
    user's own network. "Always reject" lasts the session, for the tool."""
    stored: list[str] = []
    tool, args = pc.call.name, pc.call.arguments
    if pc.confined and pc.rule is None and pc.held is None and turn.rules is not None:
        stored = rule_store.proposed(turn.rules, tool, args, turn.context.roots)
    named = ", ".join(f"`{text}`" for text in stored)
    offered = [
        _option("allow_once", "Allow once"),
        *([_option("allow_always", f"Always allow {named} in this project")] if stored else []),
        _option("reject_once", "Reject"),
        _option("reject_always", f"Always reject {tool} in this session"),
    ]
    return offered, stored


def _option(kind: acp.PermissionOptionKind, name: str) -> acp.PermissionOption:
    return {"optionId": kind, "name": name, "kind": kind}


async def ask_permissions(turn: Turn) -> TurnTrigger:
    for pc in turn.calls:
        if pc.state != ToolCallState.PENDING:
            continue
        if pc.rule is None and remembered(turn, pc):
            continue  # "always reject" (an ask rule asks every time)
        if pc.rule is None and pc.held is None and granted(turn, pc):
            continue  # a rule an earlier answer stored (a hook's ask asks every time)
        await _ask(turn, pc)
    return TurnTrigger.PERMISSIONS_SETTLED


async def _ask(turn: Turn, pc: PendingCall) -> None:
    offered, stored = options_for(turn, pc)
    client = turn.effects.client.client
    if client is not None and client.unattended:  # nobody would answer: never a hang
        pc.deny(_unattended(pc, stored))
        return
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
    if kind == "allow_always":
        await _store(turn, stored)
    if kind.startswith("allow"):
        pc.fire(ToolCallTrigger.ALLOW)
    else:
        always = kind == "reject_always"
        if always:
            turn.context.rejected.add(pc.call.name)
        pc.deny(denied(pc.call.name, always=always))


async def _store(turn: Turn, texts: list[str]) -> None:
    """Store the rules of an "Always allow" in the project's local settings; they apply at
    once, to the rest of this turn too. One that cannot be stored is told to the user (the
    call they allowed still runs)."""
    cwd = turn.context.roots[0]
    try:
        stored = await run_blocking(turn.token, rule_store.store, texts, cwd)
    except (OSError, ValueError) as exc:
        turn.notify(
            f"The rules {', '.join(texts)} could not be stored ({exc}): the call runs this "
            "once, and the next such call asks again."
        )
        return
    log.info("permission_rules_stored", rules=texts, path=str(rule_store.local_file(cwd)))
    if turn.rules is not None:
        turn.rules.rules.extend(stored)


def _unattended(pc: PendingCall, stored: list[str]) -> str:
    """What the model reads of a call that would ask with nobody to answer (`acp-fsm run`),
    with the way the user could allow such calls."""
    if pc.held is not None:
        why = f"it is asked about every time: {pc.held}"
    elif pc.rule is not None:
        why = f"the user's permission rule `{pc.rule.text}` asks for it"
    else:
        why = "the session's mode asks for it"
    if pc.held is not None:
        how = "nothing but an editor: run it with one"
    elif pc.rule is not None:
        how = f"a change of that rule (an allow rule does not outrank it) in {pc.rule.source}"
    elif stored:
        allow = " ".join(f"--allow {shlex.quote(text)}" for text in stored)
        how = f"`{allow}` (or {', '.join(stored)} in .claude/settings.local.json)"
    else:
        how = "a permission rule for it, or a mode that does not ask"
    return (
        f"Not run: nobody can be asked to allow this {pc.call.name} call (the agent runs "
        f"without a user) and {why}. The user can allow such calls with {how}. Do not try "
        "to get around it; say what you could not do."
    )


def _unanswered(tool: str, exc: OutboundError) -> str:
    if isinstance(exc, OutboundTimeout):
        return (
            f"No response from the user: the permission request for this {tool} call "
            "timed out, so the call was not run."
        )
    return f"The permission request failed ({exc}), so this {tool} call was not run."
