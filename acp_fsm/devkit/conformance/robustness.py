"""Robustness: a malformed line is answered -32700 and the agent serves on; closing stdin
ends the agent."""

from __future__ import annotations

import asyncio
import json
from typing import Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.reading import clip
from acp_fsm.devkit.conformance.verdicts import Violation

MALFORMED: Final = b'{"jsonrpc": "2.0", "id": 1, "method": \n'


async def parse_error(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    mark = len(probe.values)
    await probe.send_raw(MALFORMED)
    answer = await probe.value(
        "answer to a malformed line",
        lambda v: isinstance(v, dict) and "method" not in v,
        mark,
    )
    code = (answer.get("error") or {}).get("code")
    if code != -32700 or answer.get("id") is not None:
        raise Violation(f"answered {clip(json.dumps(answer))}, not -32700 with id null")
    await probe.serves("after the parse error")
    return "-32700 with id null, and the agent serves on"


async def stdin_eof(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    assert probe.proc is not None and probe.proc.stdin is not None
    probe.proc.stdin.close()
    try:
        code = await asyncio.wait_for(probe.proc.wait(), probe.wait_s)
    except TimeoutError:
        raise Violation(f"still running {probe.wait_s:g} s after its stdin closed") from None
    return f"exited with status {code}"


CHECKS: Final = (
    Check(
        "robustness.parse_error",
        Rule(
            "JSON-RPC 2.0 §5.1",
            "a line that is not JSON is answered -32700 with id null, and the agent serves on",
        ),
        parse_error,
    ),
    Check(
        "robustness.stdin_eof",
        Rule("ACP transport (stdio)", "the client ends the agent by closing its stdin: it exits"),
        stdin_eof,
    ),
)
