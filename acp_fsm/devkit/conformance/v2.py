"""ACP v2 (Preview): an agent that settles version 2 when asked for it is held to v2's rules;
one that answers 1 is not applicable (v2 is optional while it is a Preview). The prompt,
cancel and resume checks drive the agent through a client that speaks v2 on the wire and
reads it in v1's words (`acp_fsm.devkit.editor.v1_view`), and judge what was on the wire:
every message against v2's definitions (schemas/acp_v2.json, as the pages give them)."""

from __future__ import annotations

import json
from typing import Any, Final

from acp_fsm import __version__, schemas
from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import Probe
from acp_fsm.devkit.conformance.reading import clip
from acp_fsm.devkit.conformance.script import HANG_PROMPT, STREAM_PROMPT
from acp_fsm.devkit.conformance.verdicts import Blocked, NotApplicable, Violation
from acp_fsm.devkit.editor.v1_view import V1View
from acp_fsm.devkit.schema_check.v2 import refused

INITIALIZE_V2: Final = {
    "protocolVersion": 2,
    "info": {"name": "acp-fsm-conformance", "version": __version__},
    "capabilities": {},
}


async def _speaking(ctx: Context) -> Probe:
    """A fresh agent that settled v2 (NotApplicable when it answers another version), seen
    through the v1 view."""
    probe = await ctx.start(view=V1View())
    result = await probe.initialize(INITIALIZE_V2)  # said as v2 says it (the view)
    if result.get("protocolVersion") != 2:
        raise NotApplicable(f"the agent answered version {result.get('protocolVersion')} to 2")
    return probe


def _valid(probe: Probe) -> None:
    found = refused(probe.records)
    if found:
        raise Violation(f"{len(found)} message(s) not valid ACP v2: {clip(found[0], 300)}")


def _updates(probe: Probe, session: str) -> list[dict[str, Any]]:
    return [
        r.payload["update"]
        for r in probe.records
        if r.method == "session/update" and r.payload.get("sessionId") == session
    ]


async def negotiation(ctx: Context) -> str:
    probe = await ctx.start()
    response = await probe.answer("initialize", INITIALIZE_V2)
    result = response.get("result")
    if not isinstance(result, dict):
        raise Violation(f"initialize with version 2 failed: {clip(json.dumps(response))}")
    if result.get("protocolVersion") != 2:
        raise NotApplicable(f"the agent answered version {result.get('protocolVersion')} to 2")
    violation = schemas.validate("acp_v2.InitializeResponse", result)
    if violation is not None:
        raise Violation(f"the initialize result is not v2's: {violation}")
    baseline = "session" in (result.get("capabilities") or {})
    return f"version 2, info and capabilities{' with the session baseline' if baseline else ''}"


async def prompt(ctx: Context) -> str:
    probe = await _speaking(ctx)
    session = await probe.new_session()
    turn = await probe.prompt(session, STREAM_PROMPT)  # answered in v1's words: at its idle
    acknowledged = next(
        (r for r in probe.records if r.method == "session/prompt" and r.kind == "result"), None
    )
    if acknowledged is None or not isinstance(acknowledged.payload.get("messageId"), str):
        raise Violation("session/prompt was not answered with the stored message's id")
    updates = _updates(probe, session)
    idle = [u for u in updates if u.get("state") == "idle" and "stopReason" in u]
    if not idle:
        raise Violation("no state_update idle with a stopReason ended the turn")
    order = [r.payload.get("update", {}).get("sessionUpdate", r.method) for r in probe.records]
    answered = probe.records.index(acknowledged)
    if "agent_message_chunk" in order[:answered]:
        raise Violation("the turn streamed before its prompt was answered")
    _valid(probe)
    return f"messageId, then the turn, idle with {turn.stop_reason}; every message valid v2"


async def cancel(ctx: Context) -> str:
    probe = await _speaking(ctx)
    session = await probe.new_session()
    turn = await probe.prompt(session, HANG_PROMPT, cancel=True)
    if turn.cancel_ms is None:
        turn.needs_model()
        raise Blocked("nothing streamed before the cancel")
    idle = [u for u in _updates(probe, session) if u.get("state") == "idle"]
    if not idle or idle[-1].get("stopReason") != "cancelled":
        raise Violation(f"after session/cancel the last idle is {clip(json.dumps(idle[-1:]))}")
    _valid(probe)
    return f"idle with stopReason cancelled, {turn.cancel_ms:.0f} ms after session/cancel"


async def resume(ctx: Context) -> str:
    probe = await _speaking(ctx)
    session = await probe.new_session()
    await probe.prompt(session, STREAM_PROMPT)
    fresh = await _speaking(ctx)
    start = len(fresh.records)
    response = await fresh.answer(
        "session/load", {"sessionId": session, "cwd": probe.session_cwd, "mcpServers": []}
    )  # a resume replaying from the start (the view)
    if "result" not in response:
        raise Violation(f"session/resume with replay failed: {clip(json.dumps(response))}")
    before = [r for r in fresh.records[start:] if r.kind == "notification"]
    states = [
        r for r in before if r.payload.get("update", {}).get("sessionUpdate") == "state_update"
    ]
    if not states:
        raise Violation("no state_update snapshot came before the resume's answer")
    shown = sum(r.payload["update"]["sessionUpdate"] == "agent_message_chunk" for r in before)
    _valid(fresh)
    return (
        f"{len(before)} update(s) replayed ({shown} of the answer), then the state, then the answer"
    )


RULE: Final = "ACP v2 (Preview)"
CHECKS: Final = (
    Check(
        "v2.negotiation",
        Rule(
            f"{RULE}, initialization",
            "asked for version 2, an agent that speaks it answers 2 with `info` and "
            "`capabilities` in v2's shape",
        ),
        negotiation,
    ),
    Check(
        "v2.prompt",
        Rule(
            f"{RULE}, prompt lifecycle",
            "session/prompt is answered with the stored message's id before the turn streams; "
            "the turn ends with a state_update idle and its stop reason",
        ),
        prompt,
    ),
    Check(
        "v2.cancel",
        Rule(f"{RULE}, cancellation", "after session/cancel the session goes idle, cancelled"),
        cancel,
    ),
    Check(
        "v2.resume",
        Rule(
            f"{RULE}, session resume",
            "session/resume with replayFrom start replays the history and sends a state_update "
            "snapshot before its answer",
        ),
        resume,
    ),
)
