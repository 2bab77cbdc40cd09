"""`initialize`: version negotiation, capabilities, agent info (ACP: Initialization).

Pure and cheap to import: the startup path answers `initialize` with it before the event loop
and the heavier modules are loaded.
"""

from __future__ import annotations

from acp_fsm import __version__
from acp_fsm.methods import agent_capabilities, capabilities_v2
from acp_fsm.versions import V1, V2, negotiated

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final, cast

    from acp_fsm.schemas import acp_types as acp
else:

    def cast(_type: object, value: object) -> object:  # the startup path: no `typing`
        return value


# The version a v1 connection answers, whatever older one the client sent (ACP v1: answer the
# client's version if supported, else our latest; never fail on a version).
PROTOCOL_VERSION = V1

AGENT_INFO: acp.Implementation = {"name": "acp-fsm", "title": "acp-fsm", "version": __version__}

# How a user logs in (docs/auth.md): in a terminal the editor opens (`acp-fsm login`), where
# the editor can run one; else by what the agent explains, then `authenticate`.
TERMINAL_LOGIN: acp.AuthMethodTerminalVariant = {
    "type": "terminal",
    "id": "acp-fsm-login",
    "name": "Log in with an API key",
    "description": "Runs `acp-fsm login`: choose Anthropic, OpenAI (Chat Completions or "
    "the Responses API) or an OpenAI-compatible server and paste a key; it is checked "
    "with the provider and stored for the agent.",
    "args": ["login"],
}
API_KEY_LOGIN: acp.AuthMethodAgent = {
    "id": "api-key",
    "name": "API key",
    "description": "Run `acp-fsm login` in a terminal, or set ANTHROPIC_API_KEY or "
    "OPENAI_API_KEY (with OPENAI_BASE_URL for a compatible server) in the "
    "agent's environment in your editor's settings; then authenticate again.",
}


def runs_terminal_login(capabilities: object) -> bool:
    """Whether a client with these capabilities said it can run a terminal login
    (`auth.terminal`: v1's `true`, v2's object; or `_meta["terminal-auth"]` as clients said
    it before ACP had the capability, the registry's own check among them)."""
    if not isinstance(capabilities, dict):
        return False
    auth, meta = capabilities.get("auth"), capabilities.get("_meta")
    terminal = auth.get("terminal") if isinstance(auth, dict) else None
    return (terminal is True or isinstance(terminal, dict)) or (
        isinstance(meta, dict) and meta.get("terminal-auth") is True
    )


def auth_methods(params: Mapping[str, Any], version: int) -> list[acp.AuthMethod]:
    """The login the client can offer: in a terminal only if it can run one."""
    terminal = runs_terminal_login(_capabilities(params, version))
    return [TERMINAL_LOGIN.copy() if terminal else API_KEY_LOGIN.copy()]


def _capabilities(params: Mapping[str, Any], version: int) -> object:
    """The client's capabilities in ACP `version`: v2's `capabilities`, v1's
    `clientCapabilities` (either read for the other: liberal in what we accept)."""
    if version == V2:
        return params.get("capabilities", params.get("clientCapabilities"))
    return params.get("clientCapabilities", params.get("capabilities"))


# The extension methods a client that shows checkpoints calls (docs/rewind.md).
CHECKPOINTS: Final = {"list": "_session/checkpoints", "rewind": "_session/rewind"}


def initialize_result(
    params: Mapping[str, Any] | None = None, *, shared: bool = False
) -> acp.InitializeResponse:
    """The `initialize` result for the client's `params`, in the version they settle: what
    this agent supports, computed from the method registry, and how to log in. `shared`:
    for one of several connections of a process, whose provider is not set per connection
    (`providers` not advertised)."""
    params = params or {}
    # `_session/steering` (acp_fsm.steering), where claude-agent-acp and codex-acp say it:
    # the result's own `_meta`, beside the capabilities; checkpoints and rewind
    # (`acp_fsm.checkpoints`) beside it.
    meta = {"steering": {"supported": True}, "checkpoints": CHECKPOINTS.copy()}
    version = negotiated(params)
    if version == V2:
        return cast(
            "acp.InitializeResponse",
            {
                "protocolVersion": V2,
                "info": AGENT_INFO.copy(),
                "capabilities": capabilities_v2(),
                "authMethods": [login_v2(m) for m in auth_methods(params, version)],
                "_meta": meta,
            },
        )
    capabilities = agent_capabilities()
    if shared:
        del capabilities["providers"]
    return {
        "protocolVersion": PROTOCOL_VERSION,
        # built from the registry's paths (`methods.agent_capabilities`), so typed as a whole
        "agentCapabilities": cast("acp.AgentCapabilities", capabilities),
        "authMethods": auth_methods(params, version),
        "agentInfo": AGENT_INFO.copy(),
        "_meta": meta,
    }


def login_v2(method: acp.AuthMethod) -> dict[str, Any]:
    """A login method as v2 says it: its id is a `methodId`, its `type` said."""
    said = {("methodId" if key == "id" else key): value for key, value in method.items()}
    said.setdefault("type", "agent")
    return said


class ClientInfo:
    """What the client told us in `initialize`, kept for the rest of the connection."""

    __slots__ = ("capabilities", "info", "protocol_version", "version")

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.protocol_version: int = params["protocolVersion"]  # as the client asked
        self.version = negotiated(params)  # as the connection speaks (`versions`)
        found = _capabilities(params, self.version)
        self.capabilities: dict[str, Any] = found if isinstance(found, dict) else {}
        info = params.get("info", params.get("clientInfo"))
        self.info: dict[str, Any] | None = info if isinstance(info, dict) else None

    def _present(self, *path: str) -> bool:
        """The capability at `path` is an object (ACP's way of saying "supported")."""
        node: object = self.capabilities
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        return isinstance(node, dict)

    def _flag(self, *path: str) -> bool:
        node: object = self.capabilities
        for key in path:
            if not isinstance(node, dict):
                return False
            node = node.get(key)
        return node is True

    def allows(self, method: str) -> bool:
        """Whether the client advertised the capability that `method` needs (ACP: fs/* and
        terminal/* may only be called when advertised, and v2 has neither); other methods
        need none."""
        if method.startswith("terminal/"):
            return self.has_terminal
        if method == "fs/read_text_file":
            return self.can_read_files
        if method == "fs/write_text_file":
            return self.can_write_files
        if method == "elicitation/create":
            return self.shows_forms
        return True

    @property
    def can_read_files(self) -> bool:
        return self.version == V1 and self._flag("fs", "readTextFile")

    @property
    def can_write_files(self) -> bool:
        return self.version == V1 and self._flag("fs", "writeTextFile")

    @property
    def has_terminal(self) -> bool:
        return self.version == V1 and self._flag("terminal")

    @property
    def shows_terminals(self) -> bool:
        """It follows the agent's own terminals as display-only output (v2's
        `terminal_update`, `terminal_output_chunk`): every v2 client."""
        return self.version == V2

    @property
    def shows_notices(self) -> bool:
        """It advertised `session.notices` (v2's clients need not): agent notices go as
        `notice` updates."""
        return self.version == V2 or self._present("session", "notices")

    @property
    def follows_compaction(self) -> bool:
        """It advertised `session.compaction` (v2's clients need not): compactions go as
        `compaction_update`s."""
        return self.version == V2 or self._present("session", "compaction")

    @property
    def shows_subagents(self) -> bool:
        """It advertised `subagents` (v2's clients need not): each subagent is a child
        session (`child_sessions`)."""
        return self.version == V2 or self._present("subagents")

    @property
    def shows_forms(self) -> bool:
        """It advertised `elicitation.form` (an object: ACP's capabilities are present or not)."""
        return self._present("elicitation", "form")

    @property
    def unattended(self) -> bool:
        """Nobody answers its permission requests (`acp-fsm run`): it said
        `clientCapabilities._meta.acpFsm.unattended: true`."""
        return self._flag("_meta", "acpFsm", "unattended")

    @property
    def offers_terminal_login(self) -> bool:
        """`initialize` offered it the terminal login (`acp-fsm login`), not the other."""
        return runs_terminal_login(self.capabilities)

    def __repr__(self) -> str:
        name = (self.info or {}).get("name", "?")
        return (
            f"<ClientInfo {name} v{self.protocol_version} read={self.can_read_files} "
            f"write={self.can_write_files} terminal={self.has_terminal}>"
        )
