"""Transport: framing, stdout, notifications, batches, unknown methods, id echo."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

from acp_fsm.devkit.conformance.context import Context, shown
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.output import MESSAGE_LIMIT, MIB
from acp_fsm.devkit.conformance.probe import INITIALIZE, PING
from acp_fsm.devkit.conformance.reading import clip
from acp_fsm.devkit.conformance.script import STREAM_PROMPT
from acp_fsm.devkit.conformance.verdicts import Blocked, Violation

LONG_LINE_BYTES: Final = 1 << 20  # far past the 64 KiB line limit of a default asyncio reader
ECHOED_IDS: Final = ("7", "conformance-id", 0, -1, 2**53 - 1)  # ids of both types, edge values


def _request(msg_id: Any, method: str, params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()


def _is_answer(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "method" not in value
        and ("result" in value or "error" in value)
    )


async def framing(ctx: Context) -> str:
    probe = await ctx.start()
    first = probe.expect(1, "initialize")
    line = _request(1, "initialize", INITIALIZE) + b"\n"
    for piece in (line[:10], line[10:40], line[40:]):  # one line in three writes
        await probe.send_raw(piece, probe=False)
        await asyncio.sleep(0.05)
    await probe.until("answer to an initialize written in three pieces", first.done)
    first.result()  # an answer in the wrong form (Misanswered) fails here
    pending = [probe.expect(msg_id, PING) for msg_id in (2, 3)]
    await probe.send_raw(_request(2, PING, {}) + b"\n" + _request(3, PING, {}) + b"\n", probe=False)
    await probe.until(
        "answers to two requests written in one write", lambda: all(f.done() for f in pending)
    )
    for future in pending:
        future.result()
    return "a line in three writes and two lines in one write are each one message"


async def long_line(ctx: Context) -> str:
    probe = await ctx.start()
    padding = "x" * LONG_LINE_BYTES
    try:
        await probe.initialize({**INITIALIZE, "_meta": {"conformancePadding": padding}})
    except Blocked as exc:  # the long line is what failed
        raise Violation(f"a 1 MiB initialize: {exc.reason}") from None
    await probe.serves("after a 1 MiB line")
    return "a 1 MiB initialize is answered and the agent serves on"


async def stdout_only(ctx: Context) -> str:
    probe = await ctx.start()
    session_id = await probe.new_session()
    await probe.prompt(session_id, STREAM_PROMPT)
    strays = probe.output.strays
    if strays.count:
        overlong = (
            f", {strays.overlong} of them longer than the {MESSAGE_LIMIT // MIB} MiB the tool "
            "reads as one message"
            if strays.overlong
            else ""
        )
        raise Violation(
            f"{strays.count:,} of {probe.output.lines:,} stdout lines ({probe.output.bytes:,} "
            f"bytes in all) are not JSON-RPC 2.0 messages{overlong}",
            [shown(line) for line in strays.shown],
        )
    return f"all {probe.output.lines} stdout lines are JSON-RPC 2.0 messages"


async def notification_unanswered(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    mark = len(probe.values)
    await probe.notify("_conformance/notice", {"note": 1})
    await probe.notify("conformance/no_such_notification", {})
    await probe.notify("session/cancel", {"sessionId": "conformance-no-such-session"})
    await probe.answer(PING, {}, msg_id="after-notifications")
    await asyncio.sleep(probe.settle_s)
    stray = [
        v for v in probe.values[mark:] if _is_answer(v) and v.get("id") != "after-notifications"
    ]
    stray += [v for v in probe.values[mark:] if isinstance(v, list)]
    if stray:
        raise Violation(f"{len(stray)} answer(s) to notifications: {clip(json.dumps(stray[0]))}")
    return "three notifications, none answered"


async def batch(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    mark = len(probe.values)
    await probe.send(
        [
            {"jsonrpc": "2.0", "id": 41, "method": PING, "params": {}},
            {"jsonrpc": "2.0", "method": "_conformance/notice", "params": {}},
            {"jsonrpc": "2.0", "id": 42, "method": PING, "params": {}},
        ]
    )
    answer = await probe.value(
        "answer to the batch",
        lambda v: isinstance(v, list) or (_is_answer(v) and v.get("id") in (None, 41, 42)),
        mark,
    )
    if isinstance(answer, list):
        ids = sorted(str(item.get("id")) for item in answer if isinstance(item, dict))
        if ids != ["41", "42"] or not all(_is_answer(item) for item in answer):
            raise Violation(
                "the batch's array does not answer requests 41 and 42 once each: "
                f"{clip(json.dumps(answer))}"
            )
        verdict = "answered with one array"
    elif answer.get("id") is None and "error" in answer:
        verdict = f"refused with one error ({answer['error'].get('code')})"
    else:
        raise Violation(
            f"the batch was answered item by item, not with one array: {clip(json.dumps(answer))}"
        )
    await probe.serves("after the batch")
    return verdict


async def unknown_method(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    answers = {}
    for method in ("conformance/no_such_method", "_conformance/no_such_method"):
        response = await probe.answer(method, {})
        code = (response.get("error") or {}).get("code")
        answers[method] = (
            code
            if code is not None
            else f"the result {clip(json.dumps(response.get('result')), 60)}"
        )
    wrong = {m: c for m, c in answers.items() if c != -32601}
    if wrong:
        raise Violation(
            f"answered {', '.join(f'{m} with {c}' for m, c in wrong.items())}, not -32601"
        )
    return "both answered -32601"


async def id_echo(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    for msg_id in ECHOED_IDS:
        mark = len(probe.values)
        await probe.send_raw(_request(msg_id, PING, {}) + b"\n", probe=False)
        answer = await probe.value(f"answer to request id {msg_id!r}", _is_answer, mark)
        echoed = answer.get("id")
        if type(echoed) is not type(msg_id) or echoed != msg_id:
            raise Violation(
                f"request id {json.dumps(msg_id)} answered with id {json.dumps(echoed)}"
            )
    return f"ids {', '.join(json.dumps(i) for i in ECHOED_IDS)} echoed exactly"


CHECKS: Final = (
    Check(
        "transport.framing",
        Rule(
            "ACP transport (stdio)",
            "messages are newline-delimited: a message ends at its newline, however the "
            "bytes arrive",
        ),
        framing,
    ),
    Check(
        "transport.long_line",
        Rule("ACP transport (stdio)", "a line has no length limit short of the message's size"),
        long_line,
    ),
    Check(
        "transport.stdout_only",
        Rule(
            "ACP transport (stdio)",
            "stdout carries only JSON-RPC 2.0 messages; logs go to stderr",
        ),
        stdout_only,
    ),
    Check(
        "transport.notification_unanswered",
        Rule("JSON-RPC 2.0 §4.1", "a notification (a message without an id) is never answered"),
        notification_unanswered,
    ),
    Check(
        "transport.batch",
        Rule(
            "JSON-RPC 2.0 §6",
            "a batch is answered with one array holding an answer per request, or refused with "
            "a single error; the agent serves on either way",
        ),
        batch,
    ),
    Check(
        "transport.unknown_method",
        Rule(
            "JSON-RPC 2.0 §5.1; ACP extensibility",
            "a request for a method the agent does not have, `_`-prefixed or not, gets -32601",
        ),
        unknown_method,
    ),
    Check(
        "transport.id_echo",
        Rule(
            "JSON-RPC 2.0 §5",
            "a response carries the id of its request unchanged, of the same type",
        ),
        id_echo,
    ),
)
