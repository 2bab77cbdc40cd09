"""Sessions: session/new, a streamed prompt whose updates all come before its response, and
the end_turn it ends with. What the model streams and how its turn ends do not apply to an
agent that does not call the model it was pointed at."""

from __future__ import annotations

import json
from typing import Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.reading import Turn, clip, kind_of
from acp_fsm.devkit.conformance.script import STREAM_PROMPT, STREAMED_TEXT
from acp_fsm.devkit.conformance.verdicts import Violation


async def _turn(ctx: Context) -> Turn:
    probe = await ctx.start()
    return await probe.prompt(await probe.new_session(), STREAM_PROMPT)


async def new(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    response = await probe.open_session()
    session_id = (response.get("result") or {}).get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise Violation(f"session/new gave no sessionId: {clip(json.dumps(response))}")
    return f"session {clip(session_id, 40)}"


async def prompt_streams(ctx: Context) -> str:
    turn = await _turn(ctx)
    chunks = sum(kind_of(m) == "agent_message_chunk" for m in turn.updates)
    if STREAMED_TEXT not in turn.text():
        turn.needs_model()
        raise Violation(
            f"the model's reply ({STREAMED_TEXT!r}) did not reach the client before the "
            f"response: {chunks} agent_message_chunk update(s) with {clip(turn.text(), 80)!r}"
        )
    return f"the model's reply in {chunks} agent_message_chunk update(s)"


async def updates_precede_response(ctx: Context) -> str:
    turn = await _turn(ctx)
    if turn.late:
        raise Violation(f"the prompt was answered, then {turn.late_kinds()}")
    return f"{len(turn.updates)} update(s), all before the response"


async def end_turn(ctx: Context) -> str:
    turn = await _turn(ctx)
    if turn.stop_reason != "end_turn":
        turn.needs_model()
        raise Violation(f"the turn ended with {clip(json.dumps(turn.response))}, not end_turn")
    return "stopReason end_turn"


PROMPT_TURN: Final = "ACP prompt turn"
CHECKS: Final = (
    Check(
        "sessions.new",
        Rule("ACP session setup", "session/new with a cwd and no MCP servers gives a session id"),
        new,
    ),
    Check(
        "sessions.prompt_streams",
        Rule(PROMPT_TURN, "the model's output reaches the client as agent_message_chunk updates"),
        prompt_streams,
    ),
    Check(
        "sessions.updates_precede_response",
        Rule(
            PROMPT_TURN,
            "every session/update of a turn (message and thought chunks, tool calls, plans) "
            "comes before the session/prompt response",
        ),
        updates_precede_response,
    ),
    Check(
        "sessions.end_turn",
        Rule(PROMPT_TURN, "a turn the model finishes is answered with stopReason end_turn"),
        end_turn,
    ),
)
