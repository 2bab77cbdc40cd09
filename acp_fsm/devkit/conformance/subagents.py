"""Subagents as child sessions (ACP: protocol/v1/subagents), checked when the agent exposes
one to a client that opts in (`clientCapabilities.subagents`): every child is announced on
its parent before anything names it, what a tool call links is an announced session, and its
work ends idle; a `session/cancel` of a running child that advertises `cancel` stops that
child alone. `Children` follows the notifications as a client does (tests use it too)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import CLIENT_CAPABILITIES, INITIALIZE, Probe
from acp_fsm.devkit.conformance.reading import clip
from acp_fsm.devkit.conformance.script import delegate_prompt
from acp_fsm.devkit.conformance.verdicts import NotApplicable, Violation

Message = dict[str, Any]


@dataclass
class Children:
    """What a client knows of the child sessions under `parent`, from the `session/update`s it
    was sent: each child's announced fields (patched), the states it went through, the
    updates on its own id; and every rule the notifications broke."""

    parent: str
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    updates: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def follow(self, notifications: list[Message]) -> Children:
        """Read `notifications` (JSON-RPC messages, in order); returns itself."""
        for message in notifications:
            if message.get("method") != "session/update":
                continue
            on = message["params"]["sessionId"]
            update = message["params"]["update"]
            if on != self.parent and on not in self.fields:
                self.problems.append(f"an update on {clip(on, 60)} before it was announced")
                continue
            if on != self.parent:
                self.updates.setdefault(on, []).append(update)
            if update.get("sessionUpdate") == "subagent_update":
                self._patch(update)
            self._check_names(update)
        return self

    def known(self, session_id: Any) -> bool:
        return session_id == self.parent or session_id in self.fields

    def _patch(self, update: dict[str, Any]) -> None:
        """A `subagent_update` (on the parent, or on a child of its own): the child's fields
        patched, its state kept."""
        held = self.fields.setdefault(update["sessionId"], {})
        held.update({k: v for k, v in update.items() if k != "sessionUpdate"})
        if update.get("state") is not None:
            self.states.setdefault(update["sessionId"], []).append(update["state"])

    def _check_names(self, update: dict[str, Any]) -> None:
        """A message or a session content block names only announced sessions."""
        named: list[Any] = []
        if update.get("sessionUpdate") == "session_message":
            named += [update[k] for k in ("senderSessionId", "recipientSessionId") if k in update]
        content = update.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "session":
                named.append(block.get("sessionId"))
        self.problems += [
            f"{clip(str(n), 60)} named before it was announced" for n in named if not self.known(n)
        ]


async def _delegating(ctx: Context, *, hang: bool) -> tuple[Probe, str, int, Any]:
    """A client that opts into child sessions, its session, and a prompt that hands work to
    a subagent, started: the index of the first message after it, the prompt's future."""
    probe = await ctx.start()
    capabilities: dict[str, Any] = {**CLIENT_CAPABILITIES, "subagents": {}}
    await probe.initialize({**INITIALIZE, "clientCapabilities": capabilities})
    session_id = await probe.new_session()
    start = len(probe.messages)
    prompt = [{"type": "text", "text": delegate_prompt(hang=hang)}]
    _, future = await probe.start_request(
        "session/prompt", {"sessionId": session_id, "prompt": prompt}
    )
    return probe, session_id, start, future


def _followed(probe: Probe, session_id: str, start: int) -> Children:
    """The child sessions of `session_id` as the messages since `start` show them; a
    Violation at the first rule they break."""
    seen = Children(session_id).follow(probe.messages[start:])
    if seen.problems:
        raise Violation(seen.problems[0])
    return seen


async def child_sessions(ctx: Context) -> str:
    probe, session_id, start, future = await _delegating(ctx, hang=False)
    await probe.until("answer to session/prompt", future.done)
    await asyncio.sleep(probe.settle_s)
    seen = _followed(probe, session_id, start)
    if not seen.fields:
        raise NotApplicable("no subagent_update: the agent exposed no child session")
    ended = [c for c in seen.fields if (seen.states.get(c) or [{}])[-1].get("state") == "idle"]
    if len(ended) != len(seen.fields):
        raise Violation("a child's work never ended idle on its parent's subagent_update")
    traffic = sum(len(u) for u in seen.updates.values())
    return f"{len(seen.fields)} child session(s) announced first, {traffic} update(s) on them"


async def child_cancel(ctx: Context) -> str:
    probe, session_id, start, future = await _delegating(ctx, hang=True)
    child: list[str] = []

    def cancellable() -> bool:
        seen = _followed(probe, session_id, start)
        child[:] = [c for c, f in seen.fields.items() if _cancel(f) and seen.updates.get(c)][:1]
        return bool(child) or future.done()

    await probe.until("a running child session that can be cancelled", cancellable)
    if not child:
        raise NotApplicable("no running child session advertised cancel")
    await probe.notify("session/cancel", {"sessionId": child[0]})

    def stopped() -> bool:
        states = _followed(probe, session_id, start).states.get(child[0]) or [{}]
        return states[-1].get("state") == "idle"

    await probe.until("the cancelled child's idle state", stopped)
    [last] = (_followed(probe, session_id, start).states[child[0]])[-1:]
    await probe.until("answer to session/prompt", future.done)
    stop = (future.result().get("result") or {}).get("stopReason")
    if stop == "cancelled":
        raise Violation("a cancel of the child cancelled its parent's prompt too")
    if last.get("stopReason") != "cancelled":
        raise Violation(f"the cancelled child went idle with {clip(json.dumps(last))}")
    return f"the child went idle cancelled, its parent's prompt ended {stop}"


def _cancel(fields: dict[str, Any]) -> bool:
    """Whether a child advertises the `cancel` capability."""
    capabilities = fields.get("capabilities")
    return isinstance(capabilities, dict) and isinstance(capabilities.get("cancel"), dict)


def _check(name: str, run: Any, text: str) -> Check:
    return Check(f"subagents.{name}", Rule(SOURCE, text), run)


SOURCE: Final = "ACP subagents (when clientCapabilities.subagents and the agent exposes a child)"
CHECKS: Final[tuple[Check, ...]] = (
    _check(
        "child_sessions",
        child_sessions,
        "each child is announced on its parent before any update, message or session content "
        "names it, and its work ends idle",
    ),
    _check(
        "child_cancel",
        child_cancel,
        "session/cancel of a running child with the cancel capability stops that child alone",
    ),
)
