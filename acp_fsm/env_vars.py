"""Configuration from the environment. Every variable is read where it is used, so tests and
editors can set them per process; bad values fall back to the default with a warning."""

from __future__ import annotations

import os
import sys

DEFAULT_CLIENT_RPC_TIMEOUT_MS = 30_000
PERMISSION_METHOD = "session/request_permission"
ELICITATION_METHOD = "elicitation/create"  # a question to the user: waits like a permission
ASKING_USER = (PERMISSION_METHOD, ELICITATION_METHOD)  # requests a person answers


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
        if value < 0:
            raise ValueError
    except ValueError:
        print(f"acp-fsm: ignoring {name}={raw!r}: expected a whole number >= 0", file=sys.stderr)
        return default
    return value


def client_rpc_timeout_ms(method: str | None = None) -> int:
    """Time limit for an agent→client request, in ms; 0 means wait until cancelled.

    `ACP_CLIENT_RPC_TIMEOUT_MS` (default 30000) bounds every request; for permission prompts
    and questions `ACP_PERMISSION_TIMEOUT_MS` overrides it, because a person may need longer.
    """
    timeout = _int_env("ACP_CLIENT_RPC_TIMEOUT_MS", DEFAULT_CLIENT_RPC_TIMEOUT_MS)
    if method in ASKING_USER and os.environ.get("ACP_PERMISSION_TIMEOUT_MS"):
        return _int_env("ACP_PERMISSION_TIMEOUT_MS", timeout)
    return timeout


def mcp_startup_timeout_ms() -> int:
    """How long an MCP server may take to start and list its tools (`session/new` waits at
    most this long for all of them together): `ACP_FSM_MCP_STARTUP_TIMEOUT_MS`, default 10 s."""
    return _int_env("ACP_FSM_MCP_STARTUP_TIMEOUT_MS", 10_000)


def mcp_call_timeout_ms() -> int:
    """Time limit of one MCP tool call: `ACP_FSM_MCP_CALL_TIMEOUT_MS`, default 10 minutes;
    0 means wait until cancelled."""
    return _int_env("ACP_FSM_MCP_CALL_TIMEOUT_MS", 600_000)


def strict_schemas() -> bool:
    """`ACP_FSM_STRICT_SCHEMAS=1` makes an invalid outbound message fatal (exit 70).
    The test suite sets it: a message we cannot send is our bug."""
    return os.environ.get("ACP_FSM_STRICT_SCHEMAS", "") == "1"


def protocol_v2() -> bool:
    """`ACP_FSM_PROTOCOL_V2=1` lets a client that asks for ACP v2 (a Preview) speak it; off,
    every connection speaks v1 (docs/protocol-v2.md). On by default once v2 is stable."""
    return os.environ.get("ACP_FSM_PROTOCOL_V2", "") == "1"


def log_level() -> str:
    level = os.environ.get("ACP_FSM_LOG_LEVEL", "info").strip().lower()
    aliases = {"warn": "warning", "fatal": "critical"}
    level = aliases.get(level, level)
    if level not in ("debug", "info", "warning", "error", "critical"):
        print(f"acp-fsm: ignoring ACP_FSM_LOG_LEVEL={level!r}", file=sys.stderr)
        return "info"
    return level


def log_format() -> str:
    """`json` or `console`; default console when stderr is a terminal, else json."""
    fmt = os.environ.get("ACP_FSM_LOG_FORMAT", "").strip().lower()
    if fmt in ("json", "console"):
        return fmt
    if fmt:
        print(f"acp-fsm: ignoring ACP_FSM_LOG_FORMAT={fmt!r}", file=sys.stderr)
    return "console" if sys.stderr.isatty() else "json"


DEFAULT_SUBAGENT_MAX_STEPS = 50


def subagent_max_steps() -> int:
    """Model calls a subagent (`task`) may make: `ACP_FSM_SUBAGENT_MAX_STEPS`, default 50
    (0 is taken as the default)."""
    return _int_env("ACP_FSM_SUBAGENT_MAX_STEPS", DEFAULT_SUBAGENT_MAX_STEPS) or (
        DEFAULT_SUBAGENT_MAX_STEPS
    )


def subagent_model() -> str | None:
    """The model subagents use: `ACP_FSM_SUBAGENT_MODEL`, else None (the session's)."""
    return os.environ.get("ACP_FSM_SUBAGENT_MODEL", "").strip() or None


def prices_file() -> str | None:
    """The JSON file of model prices that replace and add to genai-prices' (`ACP_FSM_PRICES`,
    schemas/prices.json), else None."""
    path = os.environ.get("ACP_FSM_PRICES", "").strip()
    return os.path.expanduser(path) if path else None


def title_model() -> str | None:
    """The model that makes session titles: `ACP_FSM_TITLE_MODEL`, else None (the
    session's)."""
    return os.environ.get("ACP_FSM_TITLE_MODEL", "").strip() or None


EDIT_TOOLS = ("replace", "patch", "both")
TOOL_CALLS = ("native", "text", "auto")
TOOL_SETS = ("lean", "full", "auto")
_warned: set[str] = set()


def _choice(name: str, choices: tuple[str, ...]) -> str | None:
    """The variable `name` when it is one of `choices` (any case); None when unset, and when
    it is something else (said once on stderr)."""
    raw = os.environ.get(name, "").strip().lower()
    if raw in choices:
        return raw
    if raw and f"{name}={raw}" not in _warned:
        _warned.add(f"{name}={raw}")
        expected = ", ".join(choices[:-1]) + f" or {choices[-1]}"
        print(f"acp-fsm: ignoring {name}={raw!r}: expected {expected}", file=sys.stderr)
    return None


def edit_tools() -> str | None:
    """Which edit tools the model is given: `ACP_FSM_EDIT_TOOLS` = `replace` (edit_file and
    multi_edit), `patch` (apply_patch) or `both`; None (unset or unknown: the model decides)."""
    return _choice("ACP_FSM_EDIT_TOOLS", EDIT_TOOLS)


def tool_calls() -> str:
    """How a compatible server's model calls tools (docs/text-calls.md): `ACP_FSM_TOOL_CALLS`
    = `native` (the server's tool_calls only), `text` (written in its answer) or `auto` (the
    default: decided from its first answers)."""
    return _choice("ACP_FSM_TOOL_CALLS", TOOL_CALLS) or "auto"


def tool_set() -> str:
    """Which tools a model is shown (docs/local-servers.md): `ACP_FSM_TOOLS` = `lean` (the
    few a small model needs, in few words), `full`, or `auto` (the default: lean on a
    compatible server until the model has shown it calls tools natively in a large window)."""
    return _choice("ACP_FSM_TOOLS", TOOL_SETS) or "auto"


SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
# Shorter values are not treated as secrets: the dummy keys local servers accept ("sk-x")
# would match ordinary text.
MIN_SECRET_CHARS = 8
# Variables commands started by the agent never see: the provider settings and acp-fsm's own.
PRIVATE_VARIABLES = frozenset(
    {
        *SECRET_VARIABLES,
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "ACP_CLIENT_RPC_TIMEOUT_MS",
        "ACP_PERMISSION_TIMEOUT_MS",
    }
)
PRIVATE_PREFIX = "ACP_FSM_"


def is_private(name: str) -> bool:
    """Whether `name` is acp-fsm's configuration or a provider credential."""
    return name in PRIVATE_VARIABLES or name.startswith(PRIVATE_PREFIX)


def secret_values() -> list[str]:
    """Values that must never leave the process (API keys and the like)."""
    names = set(SECRET_VARIABLES)
    names.update(n for n in os.environ if n.endswith(("_API_KEY", "_TOKEN", "_SECRET")))
    return [v for n in names if len(v := os.environ.get(n, "")) >= MIN_SECRET_CHARS]
