"""What a client can make the agent hold, store and echo (`acp_fsm.limits`): refused up front
with -32602 naming the limit, never answered as if stored, never echoed in full; and ids are
answered exactly or refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.limits import MAX_DIRECTORIES, MAX_ECHO_CHARS, MAX_NESTING, MAX_PATH_CHARS
from acp_fsm.store import MAX_BODY_BYTES
from tests.e2e.support import Launcher, stored


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("depth", [600, 1000])
async def test_a_prompt_too_deep_to_store_is_refused_not_answered(
    launch: Launcher, server: ScriptedProvider, project: Path, depth: int
) -> None:
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    meta = '{"a":' * depth + "1" + "}" * depth  # deeper than json.dumps can write
    answer = agent.proc.expect("deep", "session/prompt")
    await agent.proc.send_raw(
        f'{{"jsonrpc":"2.0","id":"deep","method":"session/prompt","params":{{"sessionId":'
        f'"{session}","prompt":[{{"type":"text","text":"hi","_meta":{meta}}}]}}}}\n'.encode()
    )

    response = await answer

    assert response["error"]["code"] == -32602
    assert f"deeper than {MAX_NESTING} levels" in response["error"]["message"]
    assert server.requests == [] and stored(launch.home, session) == []
    server.script(Reply(text="fine"))  # the session goes on
    assert (await agent.prompt(session, "a normal one")).stop_reason == "end_turn"


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"cwd": "/" + "x" * 16_000_000}, f"longer than {MAX_PATH_CHARS} characters"),
        (
            {"cwd": "/p", "additionalDirectories": ["/d"] * (MAX_DIRECTORIES + 1)},
            f"more than {MAX_DIRECTORIES} entries",
        ),
        (
            {
                "cwd": "/p",
                "mcpServers": [
                    {
                        "name": "deep",
                        "command": "x",
                        "args": [],
                        "env": [],
                        "_meta": nested(MAX_NESTING + 5),
                    }
                ],
            },
            "deeper than",
        ),
    ],
    ids=["16 MB cwd", "too many directories", "deep mcpServers"],
)
async def test_what_a_session_keeps_is_bounded(
    launch: Launcher, params: dict[str, Any], needle: str
) -> None:
    agent = await launch.start("openai")
    response = await agent.request("session/new", {"mcpServers": [], **params})
    assert response["error"]["code"] == -32602
    assert needle in response["error"]["message"]
    assert len(json.dumps(response)) < 1000
    assert (await agent.result("session/list", {}))["sessions"] == []


async def test_an_unknown_session_id_is_not_echoed_in_full(launch: Launcher) -> None:
    agent = await launch.start("openai")
    huge = "sess_" + "x" * 1_000_000
    response = await agent.request(
        "session/prompt", {"sessionId": huge, "prompt": [{"type": "text", "text": "hi"}]}
    )
    assert response["error"]["code"] == -32002
    assert len(response["error"]["message"]) < MAX_ECHO_CHARS + 40


@pytest.mark.parametrize(
    "raw_id",
    [
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "9007199254740993.0",
        "1.5",
    ],
)
async def test_an_id_that_cannot_be_echoed_exactly_is_refused_not_altered(
    launch: Launcher, raw_id: str
) -> None:
    agent = await launch.start("openai")
    await agent.proc.send_raw(
        f'{{"jsonrpc":"2.0","id":{raw_id},"method":"_acp_fsm/sleep","params":{{"ms":0}}}}\n'.encode()
    )
    answer = await agent.proc.next_other()
    assert answer["id"] is None and answer["error"]["code"] == -32600
    assert "cannot be echoed exactly" in answer["error"]["message"]
    for exact in ("18446744073709551615", "-9223372036854775808"):  # these round-trip
        await agent.proc.send_raw(
            f'{{"jsonrpc":"2.0","id":{exact},"method":"_acp_fsm/sleep","params":{{"ms":0}}}}\n'.encode()
        )
        line = await agent.proc.next_other()
        assert agent.proc.raw_lines[-1].startswith(f'{{"jsonrpc":"2.0","id":{exact},'.encode())
        assert "result" in line


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "x" * (MAX_BODY_BYTES // 2 + 1024)},
        # a link's uri is stored three times: in the block, and twice in the part the model reads
        {"type": "resource_link", "name": "", "uri": "file:///" + "y" * (MAX_BODY_BYTES // 3)},
    ],
    ids=["text", "resource link"],
)
async def test_a_prompt_too_large_to_store_is_refused_not_answered(
    launch: Launcher, server: ScriptedProvider, project: Path, block: dict[str, Any]
) -> None:
    """It fits in a line, but stored with its parts it would not fit in an entry."""
    agent = await launch.start("openai")
    session = await agent.new_session(project)
    response = await agent.proc.request(
        "session/prompt", {"sessionId": session, "prompt": [block]}, wait_s=60
    )
    assert response["error"]["code"] == -32602
    assert "MAX_BODY_BYTES" in response["error"]["message"]
    assert server.requests == [] and stored(launch.home, session) == []
