"""`initialize`: version negotiation, capabilities, agent info (ACP: Initialization).

Pure and cheap to import: the startup path answers `initialize` with it before the event loop
and the heavier modules are loaded.
"""

from __future__ import annotations

from acp_fsm import __version__
from acp_fsm.methods import agent_capabilities

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from typing import Any

# The only ACP major version there is. ACP: answer the client's version if supported, else our
# latest; never fail on a version. So the answer is 1 whatever the client sent.
PROTOCOL_VERSION = 1

AGENT_INFO = {"name": "acp-fsm", "title": "acp-fsm", "version": __version__}


def initialize_result() -> dict[str, Any]:
    """The `initialize` result: what this agent supports, computed from the method registry."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": agent_capabilities(),
        "authMethods": [],
        "agentInfo": dict(AGENT_INFO),
    }


class ClientInfo:
    """What the client told us in `initialize`, kept for the rest of the connection."""

    __slots__ = ("capabilities", "info", "protocol_version")

    def __init__(self, params: dict[str, Any]) -> None:
        self.protocol_version: int = params["protocolVersion"]
        self.capabilities: dict[str, Any] = params.get("clientCapabilities") or {}
        self.info: dict[str, Any] | None = params.get("clientInfo")

    def _flag(self, *path: str) -> bool:
        node: object = self.capabilities
        for key in path:
            if not isinstance(node, dict):
                return False
            node = node.get(key)
        return node is True

    def allows(self, method: str) -> bool:
        """Whether the client advertised the capability that `method` needs (ACP: fs/* and
        terminal/* may only be called when advertised); other methods need none."""
        if method.startswith("terminal/"):
            return self.has_terminal
        if method == "fs/read_text_file":
            return self.can_read_files
        if method == "fs/write_text_file":
            return self.can_write_files
        return True

    @property
    def can_read_files(self) -> bool:
        return self._flag("fs", "readTextFile")

    @property
    def can_write_files(self) -> bool:
        return self._flag("fs", "writeTextFile")

    @property
    def has_terminal(self) -> bool:
        return self._flag("terminal")

    def __repr__(self) -> str:
        name = (self.info or {}).get("name", "?")
        return (
            f"<ClientInfo {name} v{self.protocol_version} read={self.can_read_files} "
            f"write={self.can_write_files} terminal={self.has_terminal}>"
        )
