"""Schema: every message the agent writes in a short session, validated against the official
ACP schema (a method the stable schema lacks is judged by the unstable one), with the path of
each violation. One check per kind of message, all from one session per check."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.reading import clip
from acp_fsm.devkit.conformance.script import STREAM_PROMPT
from acp_fsm.devkit.conformance.verdicts import Blocked, Violation
from acp_fsm.devkit.editor import NoAnswer, Record
from acp_fsm.devkit.schema_check.official import AGENT

Select = Callable[[Record], bool]


async def _session_records(ctx: Context) -> list[Record]:
    """The agent's messages in: a request before initialize, the handshake, an unknown
    method, session/new and a streamed prompt."""
    probe = await ctx.start()
    try:
        await probe.answer("session/new", {"cwd": probe.session_cwd, "mcpServers": []})
        await probe.initialize()
        await probe.answer("conformance/no_such_method", {})
        session_id = await probe.new_session()
        await probe.prompt(session_id, STREAM_PROMPT)
    except NoAnswer as exc:  # the checks of those steps report it
        raise Blocked(f"the session did not run: {exc}") from None
    return probe.records


def _checker(what: str, select: Select) -> Callable[[Context], Awaitable[str]]:
    async def run(ctx: Context) -> str:
        official = ctx.target.official
        if official is None:
            raise Blocked("no official schema to check against")
        chosen = [r for r in await _session_records(ctx) if select(r)]
        if not chosen:
            raise Blocked(f"the session produced no {what}")
        evidence, failed = [], 0
        for record in chosen:
            problems = official.message_problems(AGENT, record.kind, record.method, record.message)
            if problems:
                failed += 1
                evidence += [f"< {clip(json.dumps(record.message))}"]
                evidence += [f"  {clip(problem)}" for problem in problems[:3]]
        if failed:
            first = evidence[1].strip()
            raise Violation(f"{failed} of {len(chosen)} invalid; {first}", evidence[:20])
        return f"{len(chosen)} valid"

    return run


def _answers(method: str) -> Select:
    return lambda r: r.kind == "result" and r.method == method


RULE_SOURCE: Final = "ACP schema (official schema.json, then schema.unstable.json)"
CHECKS: Final = (
    Check(
        "schema.initialize",
        Rule(RULE_SOURCE, "the initialize result is an InitializeResponse"),
        _checker("initialize result", _answers("initialize")),
    ),
    Check(
        "schema.session_new",
        Rule(RULE_SOURCE, "the session/new result is a NewSessionResponse"),
        _checker("session/new result", _answers("session/new")),
    ),
    Check(
        "schema.session_prompt",
        Rule(RULE_SOURCE, "the session/prompt result is a PromptResponse"),
        _checker("session/prompt result", _answers("session/prompt")),
    ),
    Check(
        "schema.agent_messages",
        Rule(
            RULE_SOURCE,
            "every notification and request the agent sends (session/update above all) is "
            "valid for its method",
        ),
        _checker("notification or request", lambda r: r.kind in ("notification", "request")),
    ),
    Check(
        "schema.errors",
        Rule(RULE_SOURCE, "every error response is a JSON-RPC response with a valid Error"),
        _checker("error response", lambda r: r.kind == "error"),
    ),
)
