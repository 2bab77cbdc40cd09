"""Cheaper repeated turns on Anthropic: cache breakpoints after the system prompt, the tools
and the conversation (the scripted server holds Anthropic's rules for them), and the cache
reads and writes in the usage log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.devkit.provider.anthropic_rules import AnthropicRules
from acp_fsm.devkit.provider.rules import Rejection
from acp_fsm.providers.types import Usage
from tests.e2e.support import Launcher

CACHED = {"type": "ephemeral"}
HEADERS = {"anthropic-version": "2023-06-01"}


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request's cache breakpoints stand."""
    where = [f"system.{i}" for i, b in enumerate(body["system"]) if "cache_control" in b]
    where += [f"tools.{t['name']}" for t in body["tools"] if "cache_control" in t]
    where += [
        f"messages.{i}.{j}"
        for i, m in enumerate(body["messages"])
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    return where


async def test_each_turn_marks_the_stable_prefix_and_logs_cache_use(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(
        Reply(text="one", usage=Usage(input_tokens=900, output_tokens=5, cache_write_tokens=800)),
        Reply(text="two", usage=Usage(input_tokens=120, output_tokens=5, cache_read_tokens=800)),
    )

    await agent.prompt(session, "first")
    await agent.prompt(session, "second")

    first, second = (r.body for r in server.requests)
    assert breakpoints(first) == ["system.0", "tools.update_plan", "messages.0.0"]
    assert breakpoints(second) == ["system.0", "tools.update_plan", "messages.2.0"]
    assert first["system"] == second["system"] and first["tools"] == second["tools"]
    logged = [
        (e["cache_read_tokens"], e["cache_write_tokens"])
        for e in agent.log("model_usage")
        if e["call"] == "turn"  # not the title call's
    ]
    assert logged == [(0, 800), (800, 0)]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {"system": [{"type": "text", "text": "s", "cache_control": CACHED}] * 5},
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "thinking",
                                "thinking": "t",
                                "signature": "s",
                                "cache_control": CACHED,
                            }
                        ],
                    },
                    {"role": "user", "content": [{"type": "text", "text": "go"}]},
                ]
            },
            "cache_control cannot be set on thinking blocks",
        ),
        (
            {"tools": [{"name": "t", "input_schema": {}, "cache_control": {"type": "forever"}}]},
            "cache_control.type: Input should be 'ephemeral'",
        ),
    ],
)
def test_the_scripted_server_holds_anthropics_cache_rules(
    body: dict[str, Any], reason: str
) -> None:
    request = {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        **body,
    }
    with pytest.raises(Rejection) as caught:
        AnthropicRules().validate(HEADERS, request)
    assert caught.value.error.message == reason
