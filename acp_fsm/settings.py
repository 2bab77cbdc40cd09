"""What the user steers in a session: the model, the mode and the thought level.

They are ACP session config options (`configOptions`, `session/set_config_option`,
`config_option_update`), and the mode is also served the older way (`modes`,
`session/set_mode`, `current_mode_update`). A session stores its `Settings` as `settings`
entries, the last one wins (docs/settings.md). Pure: no IO here; the model list comes from
`acp_fsm.models`.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from acp_fsm.limits import echo
from acp_fsm.protocol.errors import InvalidParams

MODEL, MODE, THOUGHT_LEVEL = "model", "mode", "thought_level"

ASK, ACCEPT_EDITS, PLAN, FULL_ACCESS = "ask", "accept_edits", "plan", "full_access"
# id -> (name, description)
MODES: dict[str, tuple[str, str]] = {
    ASK: ("Ask", "Asks before every change: file writes and edits, commands and tools that "
          "are not read-only."),
    ACCEPT_EDITS: ("Accept edits", "File writes and edits inside the project run without "
                   "asking; commands and other tools still ask."),
    PLAN: ("Plan", "Read-only: the agent investigates and answers with a plan. Nothing is "
           "written or run; only tools that change nothing are offered."),
    FULL_ACCESS: ("Full access", "Nothing asks: every file write and edit, inside the project "
                  "or not, and every command and tool runs without your approval."),
}
# Tool kinds that change nothing: the only ones Plan mode offers.
READ_ONLY_KINDS = frozenset({"read", "search", "think"})
PLAN_NOTE = ("The session is in Plan mode: only read-only tools are available. Investigate as "
             "needed, then answer with a concrete plan (steps, files to change, risks). Do not "
             "try to write files or run commands; the user switches mode to carry the plan "
             "out.")

DEFAULT_LEVEL = "default"
# provider -> level id -> (name, description)
THOUGHT_LEVELS: dict[str, dict[str, tuple[str, str]]] = {
    "anthropic": {
        DEFAULT_LEVEL: ("Off", "No extended thinking"),
        "low": ("Low", "Extended thinking, up to 4k tokens"),
        "medium": ("Medium", "Extended thinking, up to 12k tokens"),
        "high": ("High", "Extended thinking, up to 20k tokens"),
    },
    "openai": {
        DEFAULT_LEVEL: ("Default", "The model's own reasoning effort"),
        "low": ("Low", "reasoning_effort low"),
        "medium": ("Medium", "reasoning_effort medium"),
        "high": ("High", "reasoning_effort high"),
    },
}
# Models that take a thinking budget (Anthropic) or a reasoning effort (OpenAI), by id.
_THINKS = {
    "anthropic": re.compile(r"claude-(3-7|(opus|sonnet|haiku)-4|4)"),
    "openai": re.compile(r"(^|/)(o[1-9]|gpt-5)(?!.*chat)"),
}


class Settings(NamedTuple):
    """A session's choices; `model` None means the configured one (`ACP_FSM_MODEL`)."""

    model: str | None = None
    mode: str = ASK
    thought_level: str = DEFAULT_LEVEL

    def to_body(self) -> dict[str, Any]:
        return {"model": self.model, "mode": self.mode, "thoughtLevel": self.thought_level}

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Settings:
        """Liberal: a value this version does not know falls back to its default."""
        model = body.get("model")
        mode = body.get("mode")
        level = body.get("thoughtLevel")
        return cls(model if isinstance(model, str) and model else None,
                   mode if mode in MODES else ASK,
                   level if isinstance(level, str) else DEFAULT_LEVEL)


def offered(mode: str, kind: str) -> bool:
    """Whether a tool of `kind` is offered to the model in `mode`."""
    return mode != PLAN or kind in READ_ONLY_KINDS


def runs_unasked(mode: str, kind: str, confined: bool) -> bool:
    """Whether a call that would ask the user runs without asking in `mode`."""
    return mode == FULL_ACCESS or (mode == ACCEPT_EDITS and kind == "edit" and confined)


def thinks(provider: str, model: str) -> bool:
    """Whether `model` of `provider` takes a thought level."""
    pattern = _THINKS.get(provider)
    return pattern is not None and pattern.search(model) is not None


def thought_level(settings: Settings, provider: str, model: str) -> str | None:
    """The level a model call uses: None when off, or when the model takes none."""
    levels = THOUGHT_LEVELS.get(provider, {})
    level = settings.thought_level
    if level == DEFAULT_LEVEL or level not in levels or not thinks(provider, model):
        return None
    return level


def _select(option_id: str, name: str, category: str, description: str, current: str,
            values: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {"id": option_id, "name": name, "description": description, "category": category,
            "type": "select", "currentValue": current,
            "options": [{"value": value, "name": label, "description": about}
                        for value, label, about in values]}


def config_options(settings: Settings, provider: str, model: str,
                   models: list[str]) -> list[dict[str, Any]]:
    """The session's ACP `configOptions`: mode, model and, for a model that thinks, the
    thought level. `model` is the one in use, `models` those the provider offers."""
    listed = models if model in models else [model, *models]
    options = [
        _select(MODE, "Mode", MODE, "How much the agent may do without asking", settings.mode,
                [(mode_id, name, about) for mode_id, (name, about) in MODES.items()]),
        _select(MODEL, "Model", MODEL, f"The {provider} model the next model call uses", model,
                [(m, m, "") for m in listed]),
    ]
    levels = THOUGHT_LEVELS.get(provider)
    if levels and thinks(provider, model):
        current = settings.thought_level if settings.thought_level in levels else DEFAULT_LEVEL
        options.append(_select(THOUGHT_LEVEL, "Thinking", THOUGHT_LEVEL,
                               "How much the model reasons before it answers", current,
                               [(level, name, about) for level, (name, about) in
                                levels.items()]))
    for option in options:
        for value in option["options"]:
            if not value["description"]:
                del value["description"]
    return options


def modes(settings: Settings) -> dict[str, Any]:
    """The same choice of mode as ACP's older `modes` (a `SessionModeState`)."""
    return {"currentModeId": settings.mode,
            "availableModes": [{"id": mode_id, "name": name, "description": about}
                               for mode_id, (name, about) in MODES.items()]}


def changed(settings: Settings, options: list[dict[str, Any]], config_id: str,
            value: object) -> Settings:
    """`settings` with `config_id` set to `value`, checked against `options` (the session's
    current `configOptions`); `InvalidParams` names what is allowed otherwise."""
    option = next((o for o in options if o["id"] == config_id), None)
    if option is None:
        known = ", ".join(o["id"] for o in options)
        raise InvalidParams(f"Invalid params: configId: unknown option {echo(config_id)}; this "
                            f"session has {known}")
    allowed = [v["value"] for v in option["options"]]
    if not isinstance(value, str) or value not in allowed:
        raise InvalidParams(f"Invalid params: value: {echo(value)} is not a value of "
                            f"{config_id!r}; expected one of {', '.join(allowed)}")
    field = {MODEL: "model", MODE: "mode", THOUGHT_LEVEL: "thought_level"}[config_id]
    return settings._replace(**{field: value})
