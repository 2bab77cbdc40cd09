"""The session methods an agent may advertise: each checked only when `initialize` says it is
served (not applicable otherwise). Load and resume are asked of a second agent process, as an
editor does after a restart; load must replay the conversation, resume must not."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import Probe
from acp_fsm.devkit.conformance.reading import Turn, clip, is_update
from acp_fsm.devkit.conformance.script import STREAM_PROMPT
from acp_fsm.devkit.conformance.verdicts import NotApplicable, Violation
from acp_fsm.devkit.editor import Message


async def _talked(ctx: Context, *capability: str) -> tuple[Probe, str, Turn]:
    """An agent that advertises `capability` (NotApplicable otherwise), a session of it and
    the one turn it holds."""
    probe = await ctx.start()
    await probe.initialize()
    if probe.capability(*capability) in (None, False):
        raise NotApplicable(f"agentCapabilities.{'.'.join(capability)} not advertised")
    session_id = await probe.new_session()
    return probe, session_id, await probe.prompt(session_id, STREAM_PROMPT)


async def _reopened(ctx: Context, method: str) -> tuple[list[Message], Turn]:
    """A session with a turn, reopened with `method` in a second agent: the session's updates
    before the response, and the turn."""
    probe, session_id, turn = await _talked(
        ctx, *(("loadSession",) if method == "session/load" else ("sessionCapabilities", "resume"))
    )
    fresh = await ctx.restart(probe)
    start = len(fresh.messages)
    params = {"sessionId": session_id, "cwd": probe.session_cwd, "mcpServers": []}
    response = await fresh.answer(method, params)
    if "result" not in response:
        raise Violation(f"{method} of a session with a turn failed: {clip(json.dumps(response))}")
    end = next(i for i, m in enumerate(fresh.messages) if m is response)
    return [m for m in fresh.messages[start:end] if is_update(m, session_id)], turn


def _killed(ctx: Context) -> str:
    """A note for the reason when the first agent had to be killed to restart it."""
    if "killed" not in ctx.data:
        return ""
    return "; the first agent was killed: it did not exit when its stdin closed"


def _said(updates: list[Message], kind: str) -> str:
    return "".join(
        str(update.get("content", {}).get("text", ""))
        for m in updates
        if (update := m["params"]["update"]).get("sessionUpdate") == kind
        and isinstance(update.get("content"), dict)
    )


async def load(ctx: Context) -> str:
    replay, turn = await _reopened(ctx, "session/load")
    said = (
        ("the user's prompt", "user_message_chunk", STREAM_PROMPT),
        ("the agent's reply", "agent_message_chunk", turn.text()),  # the model's, or its own
    )
    missing = [what for what, kind, text in said if text not in _said(replay, kind)]
    if missing:
        raise Violation(
            f"session/load in a new process did not replay {' and '.join(missing)} "
            f"({len(replay)} update(s) before its response)"
        )
    return f"replayed in {len(replay)} update(s) before the response{_killed(ctx)}"


async def resume(ctx: Context) -> str:
    replay, _ = await _reopened(ctx, "session/resume")
    said = [
        m for m in replay if _said([m], "user_message_chunk") or _said([m], "agent_message_chunk")
    ]
    if said:
        raise Violation(f"session/resume replayed {len(said)} message chunk(s)")
    return f"resumed in a new process, nothing replayed{_killed(ctx)}"


async def list_sessions(ctx: Context) -> str:
    probe, session_id, _ = await _talked(ctx, "sessionCapabilities", "list")
    response = await probe.answer("session/list", {"cwd": probe.session_cwd})
    sessions = (response.get("result") or {}).get("sessions")
    if not isinstance(sessions, list):
        raise Violation(f"session/list gave no sessions: {clip(json.dumps(response))}")
    if session_id not in [s.get("sessionId") for s in sessions if isinstance(s, dict)]:
        raise Violation(f"session/list for its cwd does not hold session {session_id}")
    return f"{len(sessions)} session(s) for the cwd, the one opened among them"


async def close(ctx: Context) -> str:
    probe, session_id, _ = await _talked(ctx, "sessionCapabilities", "close")
    response = await probe.answer("session/close", {"sessionId": session_id})
    if "result" not in response:
        raise Violation(f"session/close failed: {clip(json.dumps(response))}")
    after = await probe.answer(
        "session/prompt",
        {"sessionId": session_id, "prompt": [{"type": "text", "text": STREAM_PROMPT}]},
    )
    if "error" not in after:
        raise Violation(f"a prompt of the closed session was served: {clip(json.dumps(after))}")
    return f"closed; a later prompt of it is refused ({after['error'].get('code')})"


async def fork(ctx: Context) -> str:
    probe, session_id, _ = await _talked(ctx, "sessionCapabilities", "fork")
    params = {"sessionId": session_id, "cwd": probe.session_cwd, "mcpServers": []}
    response = await probe.answer("session/fork", params)
    forked = (response.get("result") or {}).get("sessionId")
    if not isinstance(forked, str) or forked == session_id:
        raise Violation(f"session/fork gave no new session: {clip(json.dumps(response))}")
    return f"forked into {clip(forked, 40)}"


def _check(name: str, run: Callable[[Context], Awaitable[str]], text: str) -> Check:
    return Check(f"advertised.{name}", Rule(f"ACP session/{name} (when advertised)", text), run)


CHECKS: Final[tuple[Check, ...]] = (
    _check(
        "load",
        load,
        "session/load replays the conversation (the user's and the agent's messages) as "
        "session/update notifications before it answers",
    ),
    _check("list", list_sessions, "session/list for a cwd holds the sessions opened there"),
    _check("resume", resume, "session/resume reopens a session without replaying it"),
    _check("close", close, "session/close ends a session: it serves no prompt afterwards"),
    _check("fork", fork, "session/fork (unstable) makes a new session from an existing one"),
)
