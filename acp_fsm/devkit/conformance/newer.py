"""ACP newer than the official 2.4.0 schema: checked when the agent advertises it (or, for
what needs no capability, when it sends it), not applicable otherwise. The client's system
prompt reaches the model; message ids keep a thought apart from its answer; a tool call is
named as the model called it; the model endpoint
the client sets gets the next call; a title the client sets is stored; steering with no turn
running leaves the message to the client when asked to."""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import Probe
from acp_fsm.devkit.conformance.reading import Turn, clip, kind_of
from acp_fsm.devkit.conformance.script import STREAM_PROMPT
from acp_fsm.devkit.conformance.verdicts import NotApplicable, Violation

CHUNKS: Final = ("agent_message_chunk", "agent_thought_chunk")


async def _advertising(ctx: Context, *capability: str) -> Probe:
    """An initialized agent that advertises `capability` (NotApplicable otherwise)."""
    probe = await ctx.start()
    await probe.initialize()
    if probe.capability(*capability) in (None, False):
        raise NotApplicable(f"agentCapabilities.{'.'.join(capability)} not advertised")
    return probe


def _model_requests(turn: Turn) -> list[Any]:
    """The model calls that carried the turn's prompt (NotApplicable when none can be
    seen)."""
    if turn.model_requests is None:
        raise NotApplicable("no model server: what the model is sent cannot be seen")
    turn.needs_model()
    return turn.model_requests


async def system_prompt(ctx: Context) -> str:
    probe = await _advertising(ctx, "sessionCapabilities", "systemPrompt")
    marker = f"conformance-system-{secrets.token_hex(4)}"
    params = {
        "cwd": probe.session_cwd,
        "mcpServers": [],
        "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": marker}]},
    }
    response = await probe.answer("session/new", params)
    session_id = (response.get("result") or {}).get("sessionId")
    if not isinstance(session_id, str):
        raise Violation(
            f"session/new with an append systemPrompt failed: {clip(json.dumps(response))}"
        )
    requests = _model_requests(await probe.prompt(session_id, STREAM_PROMPT))
    if not any(marker.encode() in r.raw for r in requests):
        raise Violation("the model was not sent the client's system prompt")
    return "the model was sent it"


async def message_ids(ctx: Context) -> str:
    probe = await ctx.start()
    session_id = await probe.new_session()
    turn = await probe.prompt(session_id, STREAM_PROMPT)
    chunks = [m["params"]["update"] for m in turn.updates if kind_of(m) in CHUNKS]
    with_ids = [c for c in chunks if "messageId" in c]
    if not with_ids:
        raise NotApplicable("the agent sends no messageId")
    if len(with_ids) != len(chunks):
        raise Violation(f"{len(chunks) - len(with_ids)} of {len(chunks)} chunks carry no messageId")
    kinds: dict[str, set[str]] = {}
    for chunk in chunks:
        kinds.setdefault(str(chunk["messageId"]), set()).add(chunk["sessionUpdate"])
    shared = [i for i, of in kinds.items() if len(of) > 1]
    if shared:
        raise Violation(f"a thought and an answer share messageId {clip(shared[0], 60)}")
    return f"{len(chunks)} chunk(s), {len(kinds)} message(s), each of one kind"


async def tool_names(ctx: Context) -> str:
    from acp_fsm.devkit.conformance.delegation import tool_turn
    from acp_fsm.devkit.conformance.script import offered

    done = await tool_turn(ctx)
    calls = [m["params"]["update"] for m in done.turn.updates if kind_of(m) == "tool_call"]
    named = [c["name"] for c in calls if isinstance(c.get("name"), str) and c["name"]]
    if not named:
        raise NotApplicable(f"no tool_call carries a name ({len(calls)} tool call(s))")
    if len(named) != len(calls):
        raise Violation(f"{len(calls) - len(named)} of {len(calls)} tool calls carry no name")
    tools = {name for r in _model_requests(done.turn) for name in offered(r.body)}
    unknown = [name for name in named if name not in tools]
    if unknown:
        raise Violation(f"tool call name {clip(unknown[0], 60)!r} is no tool the model was offered")
    return f"{len(named)} tool call(s), each named as the model called it"


async def providers(ctx: Context) -> str:
    probe = await _advertising(ctx, "providers")
    model = ctx.target.model
    if model is None:
        raise NotApplicable("no model server to point the agent at")
    listed = await probe.answer("providers/list", {})
    infos = (listed.get("result") or {}).get("providers")
    if not isinstance(infos, list) or not infos:
        raise Violation(f"providers/list gave no provider: {clip(json.dumps(listed))}")
    info = infos[0]
    supported = info.get("supported") or []
    api_type = next((t for t in ("openai", "anthropic") if t in supported), None)
    if api_type is None:
        raise NotApplicable(f"{info.get('providerId')} takes neither openai nor anthropic")
    token = secrets.token_hex(8)
    base = model.openai_base_url if api_type == "openai" else model.anthropic_base_url
    params = {
        "providerId": info.get("providerId"),
        "apiType": api_type,
        "baseUrl": base,
        "headers": {"x-acp-conformance": token},
    }
    response = await probe.answer("providers/set", params)
    if "result" not in response:
        raise Violation(f"providers/set failed: {clip(json.dumps(response))}")
    session_id = await probe.new_session()
    requests = _model_requests(await probe.prompt(session_id, STREAM_PROMPT))
    if not any(r.headers.get("x-acp-conformance") == token for r in requests):
        raise Violation("the next model call did not go where providers/set said, with its headers")
    if token in json.dumps(await probe.answer("providers/list", {})):
        raise Violation("providers/list shows a header value")
    return f"{api_type} at the model server, with its headers"


async def set_title(ctx: Context) -> str:
    probe = await _advertising(ctx, "sessionCapabilities", "title")
    session_id = await probe.new_session()
    response = await probe.answer(
        "session/set_title", {"sessionId": session_id, "title": "Conformance title"}
    )
    title = (response.get("result") or {}).get("title")
    if not isinstance(title, str) or not title:
        raise Violation(f"session/set_title gave no title: {clip(json.dumps(response))}")
    return f"stored as {clip(title, 40)!r}"


async def steering(ctx: Context) -> str:
    probe = await ctx.start()
    await probe.initialize()
    initialized = probe.initialized or {}
    where = (initialized.get("_meta"), (initialized.get("agentCapabilities") or {}).get("_meta"))
    if not any(isinstance(m, dict) and (m.get("steering") or {}).get("supported") for m in where):
        raise NotApplicable("_meta.steering.supported not advertised")
    session_id = await probe.new_session()
    params = {
        "sessionId": session_id,
        "prompt": [{"type": "text", "text": STREAM_PROMPT}],
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    }
    response = await probe.answer("_session/steering", params)
    outcome = (response.get("result") or {}).get("outcome")
    if outcome != "promptRequired":
        raise Violation(
            f"with no turn running and promptRequired asked for: {clip(json.dumps(response))}"
        )
    return "promptRequired with no turn running"


def _check(name: str, run: Callable[[Context], Awaitable[str]], source: str, text: str) -> Check:
    return Check(f"newer.{name}", Rule(source, text), run)


CHECKS: Final[tuple[Check, ...]] = (
    _check(
        "system_prompt",
        system_prompt,
        "ACP session setup, system prompt (when sessionCapabilities.systemPrompt)",
        "a systemPrompt sent with session/new in append mode reaches the model",
    ),
    _check(
        "message_ids",
        message_ids,
        "ACP prompt turn, message ids (when the agent sends them)",
        "every message chunk carries a messageId, and a thought never shares one with an answer",
    ),
    _check(
        "tool_names",
        tool_names,
        "ACP tool calls, name (when the agent sends it)",
        "every tool_call carries the name of the tool the model called",
    ),
    _check(
        "providers",
        providers,
        "ACP providers/* (unstable; when agentCapabilities.providers)",
        "providers/set sends the next model call to its baseUrl with its headers; "
        "providers/list never shows a header",
    ),
    _check(
        "set_title",
        set_title,
        "ACP session/set_title (unstable; when sessionCapabilities.title)",
        "session/set_title answers the title it stored",
    ),
    _check(
        "steering",
        steering,
        "_session/steering (claude-agent-acp's and codex-acp's extension; when advertised)",
        "with no turn running and idleBehavior promptRequired, nothing starts: promptRequired",
    ),
)
