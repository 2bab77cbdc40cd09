"""The method registry: one table drives routing, schemas, handshake triggers and capabilities.

`ACP` is the protocol's own method index (`schemas/methods.json`): every method that exists in
ACP v1, its direction and the schema definitions of its params and result. `SERVED` lists the
methods this agent implements; `agent_capabilities` is computed from it, so nothing is
advertised that is not served. Imported on the startup path: no `typing`, no `dataclasses`.
"""

from __future__ import annotations

from acp_fsm import schemas
from acp_fsm.fsm.handshake import HandshakeState, HandshakeTrigger, admission
from acp_fsm.protocol.errors import InvalidParams, InvalidRequest, MethodNotFound

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


def _index(name: str, schema_file: str) -> dict[str, MethodSpec]:
    return {
        method: MethodSpec(method, entry, schema_file)
        for method, entry in schemas.load_json(name).items()
    }


ACP = _index("methods.json", "acp")
DEBUG = _index("acp_fsm_methods.json", "acp_fsm")


class Served:
    """A method this agent implements.

    `handler` is the name of the server's method that does the work; `trigger` a handshake
    trigger fired synchronously once params are valid (before any other message is read);
    `advertises` maps paths under `agentCapabilities` to the values that advertise it.
    """

    __slots__ = ("advertises", "handler", "name", "trigger")

    def __init__(
        self,
        name: str,
        *,
        trigger: HandshakeTrigger | None = None,
        advertises: dict[tuple[str, ...], object] | None = None,
    ) -> None:
        self.name = name
        self.handler = "on_" + name.strip("_").replace("acp_fsm/", "debug_").replace("/", "_")
        self.trigger = trigger
        self.advertises = advertises or {}

    def __repr__(self) -> str:
        return f"<Served {self.name} -> {self.handler}>"


def _table(*entries: Served) -> dict[str, Served]:
    table: dict[str, Served] = {}
    for entry in entries:
        if entry.name in table:
            raise ValueError(f"method registered twice: {entry.name}")
        if entry.name not in ACP and entry.name not in DEBUG:
            raise ValueError(f"no schema for method {entry.name}")
        table[entry.name] = entry
    return table


SERVED = _table(
    Served("initialize", trigger=HandshakeTrigger.INITIALIZE),
    Served("authenticate"),
    Served("logout", advertises={("auth", "logout"): {}}),
    Served("session/new"),
    Served("session/prompt", advertises={
        ("promptCapabilities", "image"): True,
        ("promptCapabilities", "embeddedContext"): True,
    }),
    Served("session/cancel"),
    Served("session/load", advertises={("loadSession",): True}),
    Served("session/resume", advertises={("sessionCapabilities", "resume"): {}}),
    Served("session/list", advertises={("sessionCapabilities", "list"): {}}),
    Served("session/close", advertises={("sessionCapabilities", "close"): {}}),
    Served("session/delete", advertises={("sessionCapabilities", "delete"): {}}),
    Served("session/set_mode"),
    Served("session/set_config_option"),
)

DEBUG_SERVED = _table(
    Served("_acp_fsm/call_client"),
    Served("_acp_fsm/sleep"),
    Served("_acp_fsm/stray_output"),
    Served("_acp_fsm/stream_updates"),
)


def spec_of(method: str, *, debug: bool = False) -> MethodSpec | None:
    """The protocol definition of `method` (extension methods only when `debug`)."""
    spec = ACP.get(method)
    if spec is None and debug:
        spec = DEBUG.get(method)
    return spec


def served(method: str, *, debug: bool = False) -> Served | None:
    entry = SERVED.get(method)
    if entry is None and debug:
        entry = DEBUG_SERVED.get(method)
    return entry


def agent_capabilities() -> dict[str, Any]:
    """`agentCapabilities` in ACP's shape, advertising exactly what `SERVED` implements."""
    capabilities: dict[str, Any] = {
        "loadSession": False,
        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
        "mcpCapabilities": {"http": True, "sse": True},
        "sessionCapabilities": {},
    }
    for entry in SERVED.values():
        for (*parents, leaf), value in entry.advertises.items():
            node = capabilities
            for key in parents:
                node = node.setdefault(key, {})
            node[leaf] = value
    return capabilities


def route(state: str, method: str, params: object, *, request: bool, debug: bool,
          params_checked: bool = False) -> Served:
    """Decide, purely, whether an inbound call is served: the handshake's admission rule, the
    registry, then the params schema (unless the caller has `params_checked`). Raises the
    `RpcError` that answers it otherwise."""
    spec = spec_of(method, debug=debug)
    known = spec is not None and spec.inbound
    refusal = admission(HandshakeState(state), method, known=known)
    if refusal is not None:
        raise refusal
    assert spec is not None
    if (spec.kind == "request") != request:
        expected = "a request (with an id)" if spec.kind == "request" else "a notification"
        raise InvalidRequest(f"Invalid Request: {method} must be sent as {expected}")
    entry = served(method, debug=debug)
    if entry is None:
        raise MethodNotFound(f"Method not found: {method} is not supported by this agent")
    violation = None if params_checked else schemas.validate(spec.params_ref, params)
    if violation is not None:
        raise InvalidParams(f"Invalid params: {violation}")
    return entry
