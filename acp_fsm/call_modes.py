"""How a model calls tools: through the API's `tool_calls`, or by writing its calls in its
answer's text (docs/text-calls.md, "Modes").

The providers' own APIs are native. On a compatible server (llama.cpp, Ollama, vLLM, LM
Studio) `ACP_FSM_TOOL_CALLS` decides (`native`, `text`), or by default (`auto`) the model's
first answers do: the first that calls a tool natively makes it native, the first whose
calls were written as text makes it text. The decision is remembered per server and model in
`$ACP_FSM_HOME/call-modes.json`, so the next session starts in it. In text mode the model is
taught one call syntax (`providers.written_form`): its family's where its name tells, else the
one it wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from acp_fsm import env_vars
from acp_fsm.providers.text_call_args import CallFormat
from acp_fsm.providers.written_form import HERMES, JSON, LLAMA3, MISTRAL, QWEN3, family_of

if TYPE_CHECKING:
    from collections.abc import Iterable

    from acp_fsm.providers.config import ProviderConfig

NATIVE, TEXT, AUTO = env_vars.TOOL_CALLS
FILE = "call-modes.json"

# The syntax a model showed it writes, by the format its calls came in.
_SYNTAX = {
    CallFormat.FENCED_JSON: JSON,
    CallFormat.BARE_JSON: JSON,
    CallFormat.HERMES: HERMES,
    CallFormat.QWEN3_XML: QWEN3,
    CallFormat.FUNCTION_TAG: QWEN3,
    CallFormat.MISTRAL: MISTRAL,
    CallFormat.MISTRAL_ARGS: MISTRAL,
    CallFormat.PYTHON_TAG: LLAMA3,
}


class CallMode(NamedTuple):
    """A model's mode: `kind` (NATIVE, TEXT or AUTO: not decided yet), the syntax it is
    taught in text mode, and what decided it (`official`, `setting`, `answers`, or
    `undecided`)."""

    kind: str
    syntax: str | None
    source: str

    @property
    def reads_text(self) -> bool:
        """Whether its answers are read for calls written as text: always but where the user
        said the server's calls are the only ones (a native decision keeps reading: a model
        that called natively may still write a call now and then)."""
        return self.source != "setting" or self.kind != NATIVE

    def describe(self) -> str:
        """The mode in words, for `/status`."""
        if self.kind == AUTO:
            return "not decided yet (read from the model's first calls)"
        how = {NATIVE: "native (the server's tool calls)", TEXT: f"text ({self.syntax} syntax)"}
        why = {
            "official": "the provider's API",
            "setting": "ACP_FSM_TOOL_CALLS",
            "answers": "decided from this model's answers",
        }
        return f"{how[self.kind]}, {why[self.source]}"


class CallModes:
    """The modes decided, per server and model, kept in a file of the agent's home."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._decided: dict[str, dict[str, tuple[str, str | None]]] | None = None

    def mode(self, config: ProviderConfig, model: str) -> CallMode:
        """`model`'s mode on the configured server now."""
        if config.official:
            return CallMode(NATIVE, None, "official")
        chosen = env_vars.tool_calls()
        if chosen != AUTO:
            return CallMode(chosen, _taught(model, None) if chosen == TEXT else None, "setting")
        found = self._load().get(_server(config), {}).get(model)
        if found is None:
            return CallMode(AUTO, None, "undecided")
        kind, seen = found
        return CallMode(kind, _taught(model, seen) if kind == TEXT else None, "answers")

    def observe(
        self, config: ProviderConfig, model: str, native: bool, written: Iterable[CallFormat]
    ) -> str | None:
        """An answer of `model` undecided yet called tools `native`ly or wrote calls in
        `written` formats: the mode now decided (kept in memory; `save` writes it), or None."""
        formats = list(written)
        if self.mode(config, model).kind != AUTO or not (native or formats):
            return None
        kind = NATIVE if native else TEXT
        seen = None if native else _SYNTAX[formats[0]]
        self._load().setdefault(_server(config), {})[model] = (kind, seen)
        return kind

    def save(self) -> None:
        """Write the decisions down (file IO: off the event loop)."""
        from acp_fsm.system.atomic_write import atomic_write

        path = self._file()
        data = {
            server: {
                model: {"mode": kind, "syntax": seen} for model, (kind, seen) in models.items()
            }
            for server, models in self._load().items()
        }
        atomic_write(path, json.dumps(data, indent=1))

    def _load(self) -> dict[str, dict[str, tuple[str, str | None]]]:
        if self._decided is None:
            self._decided = {}
            try:
                data = json.loads(self._file().read_text(encoding="utf-8"))
                for server, models in data.items():
                    for model, entry in models.items():
                        kind, seen = entry["mode"], entry.get("syntax")
                        if kind in (NATIVE, TEXT) and (seen is None or isinstance(seen, str)):
                            self._decided.setdefault(server, {})[model] = (kind, seen)
            except (OSError, ValueError, TypeError, KeyError, AttributeError):
                pass  # none yet, or unreadable: decided again
        return self._decided

    def _file(self) -> Path:
        if self._path is None:
            from acp_fsm.sessions_db import default_path

            self._path = default_path().with_name(FILE)
        return self._path


def _server(config: ProviderConfig) -> str:
    return f"{config.provider} {config.base_url}"


def _taught(model: str, seen: str | None) -> str:
    """The syntax a text-mode model is taught: its family's, where its name tells; else the
    one it wrote; else Hermes'."""
    return family_of(model) or seen or HERMES


CALL_MODES = CallModes()
