"""The first line takes a fast path (`initialize` is answered before the heavy imports). Any
line must get the same answer there as from the normal path, and the agent must carry on:
hostile first lines (nesting deep enough to exhaust a recursive parser, invalid UTF-8, odd
numbers, batches) are answered exactly as the same line is after a blank first line, which the
normal path skips."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.harness import agent_command, agent_env

INIT = b'{"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":1}}'


def initialize_with_meta(depth: int) -> bytes:
    meta = '{"a":' * depth + "1" + "}" * depth
    return (
        '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,'
        f'"_meta":{meta}}}}}'
    ).encode()


HOSTILE = {
    "deep array": b"[" * 5000 + b"]" * 5000,
    "deep object": b'{"a":' * 3000 + b"1" + b"}" * 3000,
    "initialize, _meta 900 deep": initialize_with_meta(900),
    "initialize, _meta 3000 deep": initialize_with_meta(3000),
    "initialize, _meta 1100 deep": initialize_with_meta(1100),
    "arrays 1100 deep in _meta": b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":'
    b'{"protocolVersion":1,"_meta":{"a":' + b"[" * 1100 + b"]" * 1100 + b"}}}",
    "float id": b'{"jsonrpc":"2.0","id":1e-05,"method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "array 900 deep in params": b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":'
    + b"[" * 900
    + b"]" * 900
    + b"}",
    "batch of initialize": b"[" + INIT + b"]",
    "empty batch": b"[]",
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":0,"method":"\xff\xfe"}',
    "NaN": b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":NaN}}',
    "huge number id": b'{"jsonrpc":"2.0","id":1e400,"method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "no params": b'{"jsonrpc":"2.0","id":0,"method":"initialize"}',
    "lone surrogate": b'{"jsonrpc":"2.0","id":"\\ud800","method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "id beyond 64 bits": b'{"jsonrpc":"2.0","id":123456789012345678901234567890,'
    b'"method":"initialize","params":{"protocolVersion":1}}',
    "id below -2**63": b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "surrogate pair": b'{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "escaped backslash before u": b'{"jsonrpc":"2.0","id":"\\\\ud800","method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "byte order mark": b'\xef\xbb\xbf{"jsonrpc":"2.0","id":0,"method":"initialize",'
    b'"params":{"protocolVersion":1}}',
    "array id": b'{"jsonrpc":"2.0","id":[],"method":"initialize","params":{"protocolVersion":1}}',
    "not an object": b'"initialize"',
    "null": b"null",
    "truncated": b'{"jsonrpc":"2.0","id":0,"method":"initia',
}


async def answers(first_lines: bytes) -> tuple[int, list[bytes]]:
    proc = await asyncio.create_subprocess_exec(
        *agent_command(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=agent_env(),
        limit=1 << 24,
    )
    out, err = await asyncio.wait_for(proc.communicate(first_lines + b"\n" + INIT + b"\n"), 30)
    assert b"Traceback" not in err, err.decode(errors="replace")[-2000:]
    # byte for byte; JSON-RPC answers in completion order, so in any order
    return proc.returncode or 0, sorted(out.splitlines())


@pytest.mark.parametrize("line", HOSTILE.values(), ids=HOSTILE.keys())
async def test_a_first_line_is_answered_as_any_later_line(line: bytes) -> None:
    fast, normal = await asyncio.gather(answers(line), answers(b"\n" + line))
    assert fast == normal
    code, lines = fast
    assert code == 0
    replies = [json.loads(line) for line in lines]
    assert any(isinstance(r, dict) and r["id"] == "again" for r in replies)  # it carried on
