"""The method registry: one table drives routing, schemas, handshake triggers and capabilities;
another answers the domain's errors.

`ACP` is the protocol's own method index (`schemas/methods.json`): every method that exists in
ACP v1, its direction and the schema definitions of its params and result. `SERVED` lists the
methods this agent implements; `agent_capabilities` is computed from it, so nothing is
advertised that is not served. `ANSWERS` is the one place a domain error (`acp_fsm.errors`)
becomes a JSON-RPC error. Imported on the startup path: no `typing`, no `dataclasses`.
"""

from __future__ import annotations

from acp_fsm import schemas
from acp_fsm.client_prompt import CAPABILITY as CLIENT_PROMPT
from acp_fsm.errors import (
    BadRequest,
    DomainError,
    LoginRequired,
    NotStored,
    SessionBusy,
    SessionNotFound,
    TurnFailed,
)
from acp_fsm.fsm.handshake import HandshakeState, HandshakeTrigger, admission
from acp_fsm.protocol.errors import (
    AuthRequired,
    InternalError,
    InvalidParams,
    InvalidRequest,
    InvalidResult,
    MethodNotFound,
    ResourceNotFound,
    RpcError,
)
from acp_fsm.versions import V2, negotiated

TYPE_CHECKING = False  # the startup path: no `typing`
if TYPE_CHECKING:
    from typing import Any

CLIENT_TO_AGENT = "client_to_agent"
AGENT_TO_CLIENT = "agent_to_client"
BOTH = "both"


class MethodSpec:
    """A method as the protocol defines it."""

    __slots__ = ("direction", "kind", "name", "params_ref", "result_ref")

    def __init__(self, name: str, entry: dict[str, str], schema_file: str) -> None:
        self.name = name
        self.direction: str = entry["direction"]
        self.kind: str = entry["kind"]
        self.params_ref = f"{schema_file}.{entry['params']}"
        self.result_ref = f"{schema_file}.{entry['result']}" if "result" in entry else None

    @property
    def inbound(self) -> bool:
        return self.direction in (CLIENT_TO_AGENT, BOTH)

    def __repr__(self) -> str:
        return f"<MethodSpec {self.name} {self.direction} {self.kind}>"


def index(name: str, schema_file: str) -> dict[str, MethodSpec]:
    return {
        method: MethodSpec(method, entry, schema_file)
        for method, entry in schemas.load_json(name).items()
    }


ACP = index("methods.json", "acp")
ACP_V2 = index("methods_v2.json", "acp_v2")  # ACP v2's (docs/protocol-v2.md)


class Served:
    """A method this agent implements.

    `trigger` is a handshake trigger fired synchronously once params are valid (before any
    other message is read); `advertises` maps paths under `agentCapabilities` to the values
    that advertise it. Which function does the work is the server's own table
    (`AcpServer._bind_handlers`).
    """

    __slots__ = ("advertises", "name", "trigger")

    def __init__(
        self,
        name: str,
        *,
        trigger: HandshakeTrigger | None = None,
        advertises: dict[tuple[str, ...], object] | None = None,
    ) -> None:
        self.name = name
        self.trigger = trigger
        self.advertises = advertises or {}

    def __repr__(self) -> str:
        return f"<Served {self.name}>"

    def fires(self, params: object) -> HandshakeTrigger | None:
        """The trigger a valid call with `params` fires: `initialize`'s is `initialize_v2`
        when it settles ACP v2 (`versions.negotiated`)."""
        if (
            self.trigger is HandshakeTrigger.INITIALIZE
            and isinstance(params, dict)
            and negotiated(params) == V2
        ):
            return HandshakeTrigger.INITIALIZE_V2
        return self.trigger


def _table(specs: dict[str, MethodSpec], *entries: Served) -> dict[str, Served]:
    table: dict[str, Served] = {}
    for entry in entries:
        if entry.name in table:
            raise ValueError(f"method registered twice: {entry.name}")
        if entry.name not in specs or not specs[entry.name].inbound:
            raise ValueError(f"no schema of an inbound method {entry.name}")
        table[entry.name] = entry
    return table


SERVED = _table(
    ACP,
    Served("initialize", trigger=HandshakeTrigger.INITIALIZE),
    Served("authenticate"),
    Served("logout", advertises={("auth", "logout"): {}}),
    Served(
        "session/new",
        advertises={
            ("sessionCapabilities", "additionalDirectories"): {},
            ("sessionCapabilities", "systemPrompt"): CLIENT_PROMPT,
        },
    ),
    Served(
        "session/prompt",
        advertises={
            ("promptCapabilities", "image"): True,
            ("promptCapabilities", "embeddedContext"): True,
            # A prompt sent while a turn runs is queued, not refused: said as the adapters of
            # Claude Code say it, and under our own name.
            ("_meta", "promptQueueing"): True,
            ("_meta", "claudeCode", "promptQueueing"): True,
        },
    ),
    Served("session/cancel"),
    Served("session/load", advertises={("loadSession",): True}),
    Served("session/resume", advertises={("sessionCapabilities", "resume"): {}}),
    Served("session/list", advertises={("sessionCapabilities", "list"): {}}),
    Served("session/close", advertises={("sessionCapabilities", "close"): {}}),
    Served("session/fork", advertises={("sessionCapabilities", "fork"): {}}),
    Served("session/set_model"),
    Served("session/delete", advertises={("sessionCapabilities", "delete"): {}}),
    Served("session/set_mode"),
    Served("session/set_config_option"),
    Served("session/set_title", advertises={("sessionCapabilities", "title"): {}}),
    Served("_session/steering"),  # advertised beside agentCapabilities (`initialize_result`)
    Served("_session/checkpoints"),  # likewise (`acp_fsm.checkpoints`)
    Served("_session/rewind"),
    Served("providers/list", advertises={("providers",): {}}),
    Served("providers/set"),
    Served("providers/disable"),
)


# ACP v2's methods (docs/protocol-v2.md): its `session` baseline (new, list, resume, close,
# prompt, cancel), v1's optional methods it kept, its auth, and the agent's extensions.
SERVED_V2 = _table(
    ACP_V2,
    Served("initialize", trigger=HandshakeTrigger.INITIALIZE),
    Served("auth/login"),
    Served("auth/logout"),
    Served(
        "session/new",
        advertises={
            ("session", "additionalDirectories"): {},
            ("session", "systemPrompt"): CLIENT_PROMPT,
        },
    ),
    Served(
        "session/prompt",
        advertises={
            ("session", "prompt", "image"): {},
            ("session", "prompt", "embeddedContext"): {},
            ("_meta", "promptQueueing"): True,
        },
    ),
    Served("session/cancel"),
    Served("session/resume"),
    Served("session/list"),
    Served("session/close"),
    Served("session/fork", advertises={("session", "fork"): {}}),
    Served("session/delete", advertises={("session", "delete"): {}}),
    Served("session/set_config_option"),
    Served("session/set_title", advertises={("session", "title"): {}}),
    Served("_session/steering"),
    Served("_session/checkpoints"),
    Served("_session/rewind"),
)


class Registry:
    """The methods one connection knows (`specs`) and serves (`served`): ACP's, and those of
    any extension added with `extend` (the devkit's diagnostic methods, `_acp_fsm/*`)."""

    __slots__ = ("served", "specs")

    def __init__(self, specs: dict[str, MethodSpec], served: dict[str, Served]) -> None:
        self.specs = specs
        self.served = served

    def extend(self, specs: dict[str, MethodSpec], served: tuple[Served, ...]) -> Registry:
        """This registry with the extension methods `specs` known and `served` served."""
        clash = specs.keys() & self.specs.keys()
        if clash:
            raise ValueError(f"an extension redefines {sorted(clash)}")
        known = {**self.specs, **specs}
        return Registry(known, {**self.served, **_table(known, *served)})

    def spec_of(self, method: str) -> MethodSpec | None:
        """The definition of `method`, or None when no schema of this registry has it."""
        return self.specs.get(method)

    def route(
        self,
        state: str,
        method: str,
        params: object,
        *,
        request: bool,
        params_checked: bool = False,
    ) -> Served:
        """Decide, purely, whether an inbound call is served: the handshake's admission rule,
        the registry, then the params schema (unless the caller has `params_checked`). Raises
        the `RpcError` that answers it otherwise."""
        spec = self.specs.get(method)
        known = spec is not None and spec.inbound
        refusal = admission(HandshakeState(state), method, known=known)
        if refusal is not None:
            raise refusal
        assert spec is not None
        if (spec.kind == "request") != request:
            expected = "a request (with an id)" if spec.kind == "request" else "a notification"
            raise InvalidRequest(f"Invalid Request: {method} must be sent as {expected}")
        entry = self.served.get(method)
        if entry is None:
            raise MethodNotFound(f"Method not found: {method} is not supported by this agent")
        violation = None if params_checked else schemas.validate(spec.params_ref, params)
        if violation is not None:
            raise InvalidParams(f"Invalid params: {violation}")
        return entry

    def outbound_ref(self, method: str, kind: str) -> tuple[str | None, str]:
        """The schema of what we send as `kind` (request, notification, result) of `method`,
        or None and why nothing may be sent so."""
        spec = self.spec_of(method)
        if spec is None:
            return None, f"no schema for method {method}"
        if kind == "result":
            if spec.result_ref is None:
                return None, f"{method} is a notification and has no result"
            return spec.result_ref, ""
        if spec.direction not in (AGENT_TO_CLIENT, BOTH) or spec.kind != kind:
            return None, f"{method} is not an agent-to-client {kind}"
        return spec.params_ref, ""

    def outbound_violation(self, method: str, kind: str, payload: object) -> str | None:
        """Why `payload` may not be sent as `kind` of `method`, or None when it may."""
        ref, refusal = self.outbound_ref(method, kind)
        if ref is None:
            return refusal
        violation = schemas.validate(ref, payload)
        return None if violation is None else str(violation)

    def empty_result(self, method: str) -> bool:
        """Whether a result of our `method` request may carry nothing (`{}` is valid)."""
        spec = self.spec_of(method)
        ref = None if spec is None else spec.result_ref
        return ref is not None and schemas.validate(ref, {}) is None

    def checked_result(self, method: str, result: object) -> object:
        """The peer's `result` to our `method` request; `InvalidResult` when the method's
        schema refuses it."""
        spec = self.spec_of(method)
        if spec is None or spec.result_ref is None:
            return result
        violation = schemas.validate(spec.result_ref, result)
        if violation is not None:
            raise InvalidResult(f"the editor's answer to {method} is not valid ACP: {violation}")
        return result


PROTOCOL = Registry(ACP, SERVED)  # what every connection of ACP v1 serves
PROTOCOL_V2 = Registry(ACP_V2, SERVED_V2)  # ... and of v2

# What the editor is answered for each domain error: the JSON-RPC error of its code, and the
# words the domain's message follows (JSON-RPC's and ACP's own names of the code; a turn's
# failure says its own). Its `data` goes as it is.
ANSWERS: dict[type[DomainError], tuple[type[RpcError], str]] = {
    BadRequest: (InvalidParams, "Invalid params: "),
    SessionNotFound: (ResourceNotFound, "Session not found: "),
    SessionBusy: (InvalidRequest, "Invalid Request: "),
    LoginRequired: (AuthRequired, "Authentication required: "),
    NotStored: (InternalError, "Internal error: "),
    TurnFailed: (InternalError, ""),
}


def answer(error: DomainError) -> RpcError:
    """The JSON-RPC error that answers `error` (its class's row of `ANSWERS`)."""
    kind, words = ANSWERS[type(error)]
    return kind(words + error.message, data=error.data)


def agent_capabilities() -> dict[str, Any]:
    """`agentCapabilities` in ACP's shape, advertising exactly what `SERVED` implements."""
    capabilities: dict[str, Any] = {
        "loadSession": False,
        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
        "mcpCapabilities": {"http": True, "sse": True},
        "sessionCapabilities": {},
    }
    return _advertised(capabilities, SERVED)


def capabilities_v2() -> dict[str, Any]:
    """ACP v2's `capabilities`: the `session` baseline (its presence says the agent has
    `session/new`, `list`, `resume`, `close`, `prompt`, `cancel`), the MCP transports it
    connects to, and exactly what `SERVED_V2` implements besides."""
    capabilities: dict[str, Any] = {"session": {"prompt": {}, "mcp": {"stdio": {}, "http": {}}}}
    return _advertised(capabilities, SERVED_V2)


def _advertised(capabilities: dict[str, Any], served: dict[str, Served]) -> dict[str, Any]:
    for entry in served.values():
        for (*parents, leaf), value in entry.advertises.items():
            node = capabilities
            for key in parents:
                node = node.setdefault(key, {})
            node[leaf] = value
    return capabilities
