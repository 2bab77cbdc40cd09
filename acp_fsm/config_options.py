"""What the user steers in a session: the model, the mode and the thought level.

They are ACP session config options (`configOptions`, `session/set_config_option`,
`config_option_update`), and the mode is also served the older way (`modes`,
`session/set_mode`, `current_mode_update`). A session stores its `Settings` as `settings`
entries, the last one wins (docs/settings.md). Pure: no IO here; the model list comes from
`acp_fsm.model_catalog`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, cast

if TYPE_CHECKING:
    from acp_fsm.providers.config import ProviderConfig
    from acp_fsm.schemas import acp_types as acp

from acp_fsm.errors import BadRequest
from acp_fsm.limits import echo

MODEL, MODE, THOUGHT_LEVEL = "model", "mode", "thought_level"

ASK, ACCEPT_EDITS, PLAN, FULL_ACCESS = "ask", "accept_edits", "plan", "full_access"
# id -> (name, description)
MODES: dict[str, tuple[str, str]] = {
    ASK: (
        "Ask",
        "Asks before every change: file writes and edits, commands and tools that "
        "are not read-only.",
    ),
    ACCEPT_EDITS: (
        "Accept edits",
        "File writes and edits inside the project run without "
        "asking; commands and other tools still ask.",
    ),
    PLAN: (
        "Plan",
        "Read-only: the agent investigates and answers with a plan. Nothing is "
        "written or run; only tools that change nothing are offered.",
    ),
    FULL_ACCESS: (
        "Full access",
        "Nothing asks: every file write and edit, inside the project "
        "or not, and every command and tool runs without your approval.",
    ),
}
# Tool kinds that change nothing: the only ones Plan mode offers.
READ_ONLY_KINDS = frozenset({"read", "search", "think"})
# What each mode allows, said at the end of the system prompt (Plan's: `PLAN_NOTE`).
MODE_NOTES: dict[str, str] = {
    ASK: (
        "The session is in Ask mode: every file write and edit, every command and every tool "
        "that is not read-only waits for the user's approval; reading and searching inside "
        "the project do not."
    ),
    ACCEPT_EDITS: (
        "The session is in Accept edits mode: file writes and edits inside the project run "
        "without asking; commands, changes outside the project and other tools still wait "
        "for the user's approval."
    ),
    FULL_ACCESS: (
        "The session is in Full access mode: every call runs without asking, so nobody checks "
        "a command before it runs. Before anything destructive or irreversible (deleting "
        "files, rewriting history, touching what is outside the project), stop and say what "
        "you would do instead of doing it."
    ),
}
PLAN_NOTE = (
    "The session is in Plan mode: only read-only tools are available. Investigate as "
    "needed, then answer with a concrete plan (steps, files to change, risks). Do not "
    "try to write files or run commands; the user switches mode to carry the plan "
    "out."
)
MODE_NOTES[PLAN] = PLAN_NOTE

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
        "low": ("Low", "Reasoning effort low"),
        "medium": ("Medium", "Reasoning effort medium"),
        "high": ("High", "Reasoning effort high"),
    },
}
# Models that take a thinking budget (Anthropic) or a reasoning effort (OpenAI), by id.
_THINKS = {
    "anthropic": r"claude-(3-7|(opus|sonnet|haiku)-4|4)",
    # o1-mini and o1-preview take no reasoning_effort; GPT-5's chat models neither
    # (gpt-5-pro reasons at `high` only, and takes no other level)
    "openai": r"(^|/)(o1(?!-mini|-preview)|o[3-9]|gpt-5(?!.*(chat|-pro))|codex)",
}


# Option id -> (the field of `Settings`, its key in a stored `settings` entry).
FIELDS = {
    MODEL: ("model", "model"),
    MODE: ("mode", "mode"),
    THOUGHT_LEVEL: ("thought_level", "thoughtLevel"),
}


class Settings(NamedTuple):
    """A session's choices; `model` None means the configured one (`ACP_FSM_MODEL`)."""

    model: str | None = None
    mode: str = ASK
    thought_level: str = DEFAULT_LEVEL

    def chosen(self, config_id: str, value: str) -> Settings:
        """These settings with option `config_id` set to `value`."""
        return self._replace(**{FIELDS[config_id][0]: value})

    @classmethod
    def folded(cls, bodies: list[dict[str, Any]]) -> Settings:
        """The settings stored `settings` entries leave, in order (each holds the choices it
        made). Liberal: a value this version does not know is left at its default."""
        result = cls()
        for body in bodies:
            for config_id, (_, key) in FIELDS.items():
                value = body.get(key)
                if isinstance(value, str) and value and (config_id != MODE or value in MODES):
                    result = result.chosen(config_id, value)
        return result


def model_of(chosen: Settings, config: ProviderConfig) -> str:
    """The model calls use: the one chosen, else the default (`model_catalog.CATALOG`)."""
    if chosen.model:
        return chosen.model
    from acp_fsm.model_catalog import CATALOG

    return CATALOG.default_model(config)


def entry_body(config_id: str, value: str) -> dict[str, Any]:
    """The stored form of one choice: only it, so choices made at once (or by two processes)
    never undo each other."""
    return {FIELDS[config_id][1]: value}


def offered(mode: str, kind: str) -> bool:
    """Whether a tool of `kind` is offered to the model in `mode`."""
    return mode != PLAN or kind in READ_ONLY_KINDS


def runs_unasked(mode: str, kind: str, confined: bool) -> bool:
    """Whether a call that would ask the user runs without asking in `mode`."""
    return mode == FULL_ACCESS or (mode == ACCEPT_EDITS and kind == "edit" and confined)


def thinks(provider: str, model: str) -> bool:
    """Whether `model` of `provider` takes a thought level."""
    pattern = _THINKS.get(provider)
    return pattern is not None and re.search(pattern, model) is not None  # cached by `re`


def thought_level(settings: Settings, provider: str, model: str) -> str | None:
    """The level a model call uses: None when off, or when the model takes none."""
    levels = THOUGHT_LEVELS.get(provider, {})
    level = settings.thought_level
    if level == DEFAULT_LEVEL or level not in levels or not thinks(provider, model):
        return None
    return level


def level_option(settings: Settings, provider: str, model: str) -> str | None:
    """The thought level the session's `thought_level` option shows, None when the model
    has no such option (`config_options` offers none for it)."""
    levels = THOUGHT_LEVELS.get(provider)
    if not levels or not thinks(provider, model):
        return None
    return settings.thought_level if settings.thought_level in levels else DEFAULT_LEVEL


def _select(
    option_id: str,
    name: str,
    category: str,
    description: str,
    current: str,
    values: list[tuple[str, str, str]],
) -> acp.SessionConfigOptionSelect:
    options: list[acp.SessionConfigSelectOption] = []
    for value, label, about in values:
        entry: acp.SessionConfigSelectOption = {"value": value, "name": label}
        if about:
            entry["description"] = about
        options.append(entry)
    return {
        "id": option_id,
        "name": name,
        "description": description,
        "category": category,
        "type": "select",
        "currentValue": current,
        "options": options,
    }


RESPONSES_ONLY = "Responses API only"  # a model whose calls go to OpenAI's Responses API


def config_options(
    settings: Settings,
    provider: str,
    model: str,
    models: list[str],
    elsewhere: set[str] | frozenset[str] = frozenset(),
) -> list[acp.SessionConfigOption]:
    """The session's ACP `configOptions`: mode, model and, for a model that thinks, the
    thought level. `model` is the one in use, `models` those the provider offers (`elsewhere`
    those served on the Responses API only, whose calls go there, described so); without a
    `provider` (no usable configuration), the mode only. The same choices give the same list,
    made once (a thousand idle sessions keep one, not a thousand): it is never changed."""
    return _config_options(settings, provider, model, tuple(models), frozenset(elsewhere))


@lru_cache(maxsize=256)
def _config_options(
    settings: Settings,
    provider: str,
    model: str,
    models: tuple[str, ...],
    elsewhere: frozenset[str],
) -> list[acp.SessionConfigOption]:
    options: list[acp.SessionConfigOption] = [
        _select(
            MODE,
            "Mode",
            MODE,
            "How much the agent may do without asking",
            settings.mode,
            [(mode_id, name, about) for mode_id, (name, about) in MODES.items()],
        ),
    ]
    if not provider:
        return options  # no usable provider configuration: the first prompt says why
    listed = models if model in models else (model, *models)
    options.append(
        _select(
            MODEL,
            "Model",
            MODEL,
            f"The {provider} model the next model call uses",
            model,
            [(m, m, RESPONSES_ONLY if m in elsewhere else "") for m in listed],
        )
    )
    current = level_option(settings, provider, model)
    if current is not None:
        options.append(
            _select(
                THOUGHT_LEVEL,
                "Thinking",
                THOUGHT_LEVEL,
                "How much the model reasons before it answers",
                current,
                [(level, name, about) for level, (name, about) in THOUGHT_LEVELS[provider].items()],
            )
        )
    return options


def for_session(settings: Settings, config: ProviderConfig | None) -> list[acp.SessionConfigOption]:
    """`config_options` of a session with `settings` working with `config` (the provider
    configuration as read; None when it is not usable, and only the mode is offered: the
    first prompt names the configuration error), its models those known now
    (`model_catalog.CATALOG`)."""
    if config is None:
        return config_options(settings, "", "", [])
    from acp_fsm.model_catalog import CATALOG
    from acp_fsm.providers.config import api_of

    models, model = CATALOG.models(config), model_of(settings, config)
    return config_options(
        settings,
        config.provider,
        model,
        models,
        elsewhere={m for m in (*models, model) if api_of(config, m) != config.api},
    )


def setup_result(settings: Settings, config: ProviderConfig | None) -> acp.LoadSessionResponse:
    """What `session/new`, `load` and `resume` answer besides the id: the options, and the
    mode the older way."""
    return {"configOptions": for_session(settings, config), "modes": modes(settings)}


def modes(settings: Settings) -> acp.SessionModeState:
    """The same choice of mode as ACP's older `modes` (a `SessionModeState`)."""
    return {
        "currentModeId": settings.mode,
        "availableModes": [
            {"id": mode_id, "name": name, "description": about}
            for mode_id, (name, about) in MODES.items()
        ],
    }


def check_choice(options: list[acp.SessionConfigOption], config_id: str, value: object) -> str:
    """The current value of option `config_id`, once `value` is known to be one of its values
    (in `options`, the session's `configOptions`); `BadRequest` names what is allowed
    otherwise."""
    option = next((o for o in options if o["id"] == config_id), None)
    if option is None:
        known = ", ".join(o["id"] for o in options)
        raise BadRequest("configId", f"unknown option {echo(config_id)}; this session has {known}")
    # this agent's options are selects of a flat list of values (`_select`)
    values = cast("list[acp.SessionConfigSelectOption]", option.get("options", []))
    allowed = [v["value"] for v in values]
    if not isinstance(value, str) or value not in allowed:
        raise BadRequest(
            "value",
            f"{echo(value)} is not a value of {config_id!r}; expected one of {', '.join(allowed)}",
        )
    return str(option["currentValue"])
