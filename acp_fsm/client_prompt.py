"""The client's system prompt (ACP: `systemPrompt` on session/new, load, resume and fork,
stable 2026-11-06): what the editor asks the model to be told at system level, checked,
stored with the session, and applied to the agent's own instructions.

`append` puts the client's text after the agent's instructions (its guidance, the
environment, the project's instruction files, the skills); `override` puts it in place of the
agent's guidance, keeping the rest. The mode's note (what the mode allows) and the tools are
never the client's to replace: they follow, whatever the mode (`turn.model_call`).

acp-fsm sends the system prompt as text, which every wire format it speaks takes there (and
only text: Anthropic's `system`, a Chat Completions system message, the Responses API's
`instructions`). So a text block is applied as it is, an embedded text resource as its text
under its URI, and anything else (an image, audio, a link to fetch, a type this version does
not know) is refused, naming the block: the session is not made without it."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, cast

from acp_fsm import limits
from acp_fsm.errors import BadRequest

FIELD = "systemPrompt"
ENTRY = "system_prompt"  # the stored entry's kind: the latest one is in force
Mode = Literal["append", "override"]
MODES: tuple[Mode, ...] = ("append", "override")
# What the agent advertises at `initialize`, under `sessionCapabilities`.
CAPABILITY: dict[str, object] = {"mode": {"override": {}}}


class ClientPrompt(NamedTuple):
    mode: Mode
    text: str  # the content, as the model reads it


def parse(value: object) -> ClientPrompt | None:
    """The client prompt of a session setup request's `systemPrompt` (None: absent or null),
    or `BadRequest` naming what cannot be applied."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest(FIELD, "expected an object with mode and content")
    mode = value.get("mode")
    if mode not in MODES:
        raise BadRequest(
            f"{FIELD}.mode",
            f"unknown mode {limits.echo(mode)}; this agent applies {' and '.join(MODES)}",
        )
    content = value.get("content")
    if not isinstance(content, list) or not content:
        raise BadRequest(f"{FIELD}.content", "expected a non-empty array of content blocks")
    texts = [_text(block, f"{FIELD}.content[{i}]") for i, block in enumerate(content)]
    prompt = ClientPrompt(cast("Mode", mode), "\n\n".join(t for t in texts if t))
    limits.check_stored(FIELD, to_body(prompt))
    return prompt


def _text(block: object, where: str) -> str:
    """A content block's text as the model is to read it, or `BadRequest`."""
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(text := cast("dict[str, Any]", block).get("text"), str):
        return text
    if kind == "resource":
        resource = cast("dict[str, Any]", block).get("resource")
        if isinstance(resource, dict) and isinstance(resource.get("text"), str):
            uri = resource.get("uri")
            return f"{uri}:\n\n{resource['text']}" if uri else str(resource["text"])
        raise BadRequest(where, "a binary resource; the system prompt takes text only")
    if kind in ("image", "audio"):
        raise BadRequest(
            where,
            f"an {kind} block; the system prompt goes to the model as text, and no wire "
            f"format this agent speaks takes {'images' if kind == 'image' else 'audio'} there",
        )
    if kind == "resource_link":
        raise BadRequest(where, "a resource link; the system prompt takes its text inline")
    raise BadRequest(where, f"a block of type {limits.echo(kind)}, which this agent cannot apply")


def to_body(prompt: ClientPrompt | None) -> dict[str, Any]:
    """The stored form (an entry of kind `ENTRY`); None is stored as cleared."""
    return {"mode": prompt.mode, "text": prompt.text} if prompt is not None else {}


def stored(entries: list[Any]) -> ClientPrompt | None:
    """The client prompt in force in stored `entries`: the latest one. Liberal: one this
    version cannot read counts as none."""
    for entry in reversed(entries):
        if entry.kind == ENTRY:
            body = entry.body
            mode, text = body.get("mode"), body.get("text")
            return ClientPrompt(mode, text) if mode in MODES and isinstance(text, str) else None
    return None


def applied(prompt: ClientPrompt | None, agents: str, guidance: str) -> str:
    """The agent's instructions `agents` (opening with its `guidance`) with the client's
    prompt applied."""
    if prompt is None:
        return agents
    if prompt.mode == "append":
        return f"{agents}\n\n{prompt.text}"
    rest = agents[len(guidance) :] if agents.startswith(guidance) else f"\n\n{agents}"
    return prompt.text + rest


def overrides(prompt: ClientPrompt | None) -> bool:
    """Whether the client's prompt stands in for the agent's guidance (none of the agent's
    openings, the brief one included, is sent)."""
    return prompt is not None and prompt.mode == "override"
