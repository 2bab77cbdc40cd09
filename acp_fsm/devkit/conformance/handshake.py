"""Handshake: nothing is served before initialize, initialize once, version negotiation."""

from __future__ import annotations

import json
from typing import Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import INITIALIZE
from acp_fsm.devkit.conformance.reading import clip
from acp_fsm.devkit.conformance.verdicts import Blocked, Violation

FUTURE_VERSION: Final = 999  # a protocol version no agent supports yet


async def before_initialize(ctx: Context) -> str:
    probe = await ctx.start()
    response = await probe.answer("session/new", {"cwd": probe.session_cwd, "mcpServers": []})
    if "error" not in response:
        raise Violation(f"session/new before initialize was served: {clip(json.dumps(response))}")
    code = response["error"].get("code")
    try:
        await probe.initialize()
    except Blocked as exc:  # here a failed initialize is the agent's fault
        raise Violation(f"after refusing a request, {exc.reason}") from None
    return f"refused with {code}, then initialize succeeds"


async def second_initialize(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    again = await probe.answer("initialize", INITIALIZE)
    if "error" not in again:
        raise Violation(f"a second initialize was accepted: {clip(json.dumps(again))}")
    return f"refused with {again['error'].get('code')}"


async def version(ctx: Context) -> str:
    answered = []
    for asked in (1, FUTURE_VERSION):
        probe = await ctx.start()
        try:
            result = await probe.initialize({**INITIALIZE, "protocolVersion": asked})
        except Blocked as exc:
            raise Violation(f"protocolVersion {asked}: {exc.reason}") from None
        chosen = result.get("protocolVersion")
        if not isinstance(chosen, int) or isinstance(chosen, bool):
            raise Violation(f"protocolVersion {asked} answered with {json.dumps(chosen)}")
        if asked == 1 and chosen != 1:
            raise Violation(f"protocolVersion 1 answered with {chosen}, not 1")
        if chosen > asked:
            raise Violation(f"protocolVersion {asked} answered with a later one, {chosen}")
        answered.append(f"{asked} → {chosen}")
    return ", ".join(answered)


CHECKS: Final = (
    Check(
        "handshake.before_initialize",
        Rule(
            "acp-fsm spec, handshake state machine (ACP asks the client to initialize first)",
            "before initialize, a request is refused with an error (-32002 here), and the "
            "handshake can still follow",
            required=False,
        ),
        before_initialize,
    ),
    Check(
        "handshake.second_initialize",
        Rule(
            "acp-fsm spec, handshake state machine",
            "once initialized, another initialize is refused as a duplicate",
            required=False,
        ),
        second_initialize,
    ),
    Check(
        "handshake.version",
        Rule(
            "ACP initialization, version negotiation",
            "the agent answers the version asked for when it supports it, else its own latest "
            "(never a later one, never an error)",
        ),
        version,
    ),
)
