"""The domain's errors: what went wrong, named for what happened, raised anywhere below the
method layer. Nothing below it knows a JSON-RPC code: the method layer alone answers each
class with its JSON-RPC error (`acp_fsm.methods.ANSWERS`, one row per class).

Imported on the startup path: no `typing`.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from typing import Any


class DomainError(Exception):
    """A call the agent refuses or cannot carry out. `message` says why in the words the
    editor shows; `data` is what goes beside them (how to log in, a provider's own words)."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class BadRequest(DomainError):
    """A value the editor sent is refused: `field` is its path in the params (`cwd`,
    `prompt[2]`, `mcpServers[0].type`), `why` what is wrong with it."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field


class SessionNotFound(DomainError):
    """No session of that id here: never created, deleted (perhaps by another process), or
    being closed."""


class SessionBusy(DomainError):
    """Another process runs a prompt of the session: the call may be made again once it ends."""


class LoginRequired(DomainError):
    """The provider has no credentials; `data` says every way to log in."""


class NotStored(DomainError):
    """The store refused a write that what the editor is told next depends on."""


class TurnFailed(DomainError):
    """The turn cannot go on: the provider failed (its words in `data`), the configuration
    is wrong, or the agent's own work broke."""
