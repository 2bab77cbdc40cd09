"""Conformance: every message the agent writes, validated against the official ACP v1 schema.

Messages come from two places: everything the other end-to-end tests recorded (this module is
ordered last by conftest.py), and a scripted session here that touches every served method and
every kind of agent→client request, so the module is meaningful when run alone too.
Each message is checked twice against the official schema: whole, against the schema's root
(the union of all ACP messages), and its params/result against the definition of its method
(found through the official `x-method` annotations). The schema path comes from `ACP_SCHEMA`,
else `../shared/acp-schema/schema.json` beside the checkout; without it the module is skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.harness import RECORDED, AgentProcess, agent_env

DEFAULT_SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "acp-schema" / "schema.json"
SCHEMA_PATH = Path(os.environ.get("ACP_SCHEMA") or DEFAULT_SCHEMA)

pytestmark = pytest.mark.skipif(
    not SCHEMA_PATH.exists(),
    reason=f"official ACP schema not found at {SCHEMA_PATH} (set ACP_SCHEMA to its path)",
)

# Agent→client requests the scripted session makes, with the client's answers.
CLIENT_CALLS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("fs/read_text_file", {"sessionId": "s", "path": "/w/a.py", "line": 3, "limit": 10},
     {"content": "x = 1\n"}),
    ("fs/write_text_file", {"sessionId": "s", "path": "/w/a.py", "content": "y = 2\n"}, {}),
    ("terminal/create", {"sessionId": "s", "command": "pytest", "args": ["-q"],
                         "env": [{"name": "CI", "value": "1"}], "cwd": "/w",
                         "outputByteLimit": 65536}, {"terminalId": "t1"}),
    ("terminal/output", {"sessionId": "s", "terminalId": "t1"},
     {"output": "ok\n", "truncated": False, "exitStatus": {"exitCode": 0, "signal": None}}),
    ("terminal/wait_for_exit", {"sessionId": "s", "terminalId": "t1"},
     {"exitCode": 0, "signal": None}),
    ("terminal/kill", {"sessionId": "s", "terminalId": "t1"}, {}),
    ("terminal/release", {"sessionId": "s", "terminalId": "t1"}, {}),
    ("session/request_permission", {
        "sessionId": "s",
        "toolCall": {"toolCallId": "call_1", "title": "Edit a.py", "kind": "edit",
                     "status": "pending"},
        "options": [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject_always", "name": "Always reject", "kind": "reject_always"},
        ]}, {"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
]


@cache
def official() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@cache
def method_defs() -> dict[tuple[str, str], str]:
    """(method, "params" | "result") → official definition name, from `x-method`."""
    defs: dict[tuple[str, str], str] = {}
    for name, definition in official()["$defs"].items():
        method = definition.get("x-method")
        if method is not None:
            part = "result" if name.endswith("Response") else "params"
            defs[(method, part)] = name
    return defs


@cache
def validator_for(name: str | None) -> Draft202012Validator:
    """A validator for definition `name`, or for the whole-message root when None."""
    schema = dict(official())
    if name is not None:
        schema = {"$schema": schema["$schema"], "$defs": schema["$defs"],
                  "$ref": f"#/$defs/{name}"}
    return Draft202012Validator(schema)


def violations(kind: str, method: str | None, payload: Any, message: dict[str, Any]) -> list[str]:
    """What is wrong with one recorded message under the official schema."""
    if isinstance(message.get("id"), float):
        # JSON-RPC lets a client pick a fractional id and requires it echoed; ACP's RequestId
        # admits only integers, so judge the rest of the message with an integer in its place.
        message = {**message, "id": 0}
    problems = [f"root: {e.message}" for e in validator_for(None).iter_errors(message)]
    if kind == "error":
        name: str | None = "Error"
    elif method is None or method.startswith("_"):
        name = None  # a response to an extension method: only the root applies
    else:
        name = method_defs().get((method, "result" if kind == "result" else "params"))
        if name is None:
            problems.append(f"no official definition for {method} {kind}")
    if name is not None:
        problems.extend(f"{name}: {e.message}" for e in validator_for(name).iter_errors(payload))
    return problems


async def scripted_session() -> None:
    """Touch every served method and every agent→client request once."""
    agent = await AgentProcess.start(agent_env())
    try:
        await agent.request("session/new", {"cwd": "/w", "mcpServers": []})  # -32002
        await agent.initialize()
        await agent.request("initialize", {"protocolVersion": 1})  # -32002 again
        await agent.request("authenticate", {"methodId": "none"})  # -32602
        await agent.request("no/such_method", {})  # -32601
        await agent.send_raw(b"{broken\n")  # -32700
        await agent.next_other()
        for method, params, answer in CLIENT_CALLS:
            call = agent.expect(method, "_acp_fsm/call_client")
            await agent.send({"jsonrpc": "2.0", "id": method, "method": "_acp_fsm/call_client",
                              "params": {"method": method, "params": params}})
            request = await agent.next_request()
            await agent.respond(request, answer)
            assert (await call)["result"]["outcome"] == "result"
        call = agent.expect("timeout", "_acp_fsm/call_client")
        await agent.send({"jsonrpc": "2.0", "id": "timeout", "method": "_acp_fsm/call_client",
                          "params": {"method": "fs/read_text_file", "timeoutMs": 10,
                                     "params": {"sessionId": "s", "path": "/w/b"}}})
        await call  # leaves a $/cancel_request notification behind
        assert await agent.close() == 0
    finally:
        await agent.kill()


def test_every_written_message_conforms_to_the_official_schema() -> None:
    asyncio.run(scripted_session())
    failures: list[str] = []
    checked: Counter[tuple[str, str]] = Counter()
    failed: Counter[tuple[str, str]] = Counter()
    for kind, method, payload, message in RECORDED:
        key = (method or "?", kind)
        checked[key] += 1
        problems = violations(kind, method, payload, message)
        if problems:
            failed[key] += 1
            failures.append(f"{kind} {method}: {problems[:3]} in {json.dumps(message)[:300]}")
    table = "\n".join(
        f"  {method:<32} {kind:<12} {count:>6} {failed[(method, kind)]:>6}"
        for (method, kind), count in sorted(checked.items())
    )
    print(f"\n  {'method':<32} {'kind':<12} {'checked':>6} {'failed':>6}\n{table}")
    expected = {(m, "request") for m, _, _ in CLIENT_CALLS} | {
        ("initialize", "result"), ("initialize", "error"), ("authenticate", "error"),
        ("$/cancel_request", "notification"),
    }
    assert expected <= set(checked), sorted(expected - set(checked))
    assert failures == [], "\n".join(failures[:20])


def test_the_checker_rejects_a_non_conforming_message() -> None:
    """The check can fail: a wrong update and a wrong result are reported."""
    bad_update = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
    assert violations("notification", "session/update", bad_update,
                      {"jsonrpc": "2.0", "method": "session/update", "params": bad_update})
    bad_result = {"protocolVersion": "1"}
    assert violations("result", "initialize", bad_result,
                      {"jsonrpc": "2.0", "id": 1, "result": bad_result})
