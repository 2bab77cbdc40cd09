"""structlog to stderr only, configured before anything logs (unconfigured structlog
writes to stdout). Standard-library logging is routed through the same pipeline, and a redaction
step removes secrets by key name and by value."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from acp_fsm import env_vars
from acp_fsm.redact import REDACTED, Secrets, configured, without_pair_values

_SECRET_KEYS = frozenset(
    {"api_key", "apikey", "authorization", "x-api-key", "secret", "password", "token", "bearer"}
)
_SECRET_SUFFIXES = ("_api_key", "_secret", "_password", "_access_token")


class Redactor:
    """A structlog processor that blanks secret fields, secret values and the values of header
    and environment pairs (`redact.SECRET_PAIRS`) anywhere in an event."""

    def __init__(self, secrets: list[str]) -> None:
        self._secrets = Secrets(secrets)

    def __call__(self, _logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
        return {key: self._clean(key, value) for key, value in event.items()}

    def _scrub(self, text: str) -> str:
        """`text` without the secrets given, nor those known now (a key stored later)."""
        return configured().scrub_text(self._secrets.scrub_text(text))

    def _clean(self, key: str, value: Any) -> Any:
        lowered = key.lower()
        if lowered in _SECRET_KEYS or lowered.endswith(_SECRET_SUFFIXES):
            return REDACTED
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, dict):  # an MCP server's headers and env: values, whatever names
            return {k: self._clean(str(k), v) for k, v in without_pair_values(value).items()}
        if isinstance(value, list | tuple):
            return [self._clean("", v) for v in value]
        return value


def configure(level_name: str | None = None) -> None:
    """Configure structlog and stdlib logging from ACP_FSM_LOG_LEVEL / ACP_FSM_LOG_FORMAT
    (`level_name` overrides the level)."""
    level = getattr(logging, (level_name or env_vars.log_level()).upper())
    console = env_vars.log_format() == "console"
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        Redactor(env_vars.secret_values()),
    ]
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        if console
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[*shared, renderer]
        if console
        else [*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # transitions logs an ERROR for every refused trigger; refusals are handled here.
    logging.getLogger("transitions").setLevel(max(level, logging.WARNING))
    logging.getLogger("asyncio").setLevel(max(level, logging.WARNING))
