"""The method registry and what it drives: handlers, schemas, capabilities, routing (pure tier).

Also the small pure pieces next to it: `initialize` results, `ClientInfo`, the client RPC
timeout configuration and log redaction.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, cast

import pytest

from acp_fsm import __version__, env_vars, schemas
from acp_fsm.devkit import debug
from acp_fsm.fsm.handshake import HandshakeTrigger
from acp_fsm.initialize import PROTOCOL_VERSION, ClientInfo, initialize_result
from acp_fsm.logs import Redactor
from acp_fsm.methods import (
    ACP,
    AGENT_TO_CLIENT,
    BOTH,
    CLIENT_TO_AGENT,
    PROTOCOL,
    SERVED,
    Registry,
    Served,
    agent_capabilities,
)
from acp_fsm.protocol.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    RpcError,
    ServerNotInitialized,
)
from acp_fsm.redact import REDACTED
from acp_fsm.schemas import acp_types as acp
from acp_fsm.server import AcpServer

ALL_SPECS = {**ACP, **debug.SPECS}


def debug_server() -> AcpServer:
    """A server serving the devkit's diagnostic methods, as `ACP_FSM_DEBUG_METHODS=1` has it."""
    server = AcpServer()
    debug.install(server)
    return server


@pytest.fixture
def unserved(monkeypatch: pytest.MonkeyPatch) -> str:
    """An inbound ACP request this agent does not serve (today it serves every one: one is
    taken out of the registry for the test)."""
    monkeypatch.delitem(SERVED, "logout")
    return "logout"


VALID_INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


# ------------------------------------------------------------------ registry


# Handlers that do their synchronous part in the reader on purpose: session/prompt takes the
# turn's token before any await; session/cancel fires it inline (NOTES §4); a steered message
# reaches the turn running when it is read.
SYNC_HANDLERS = {"session/prompt", "session/cancel", "_session/steering"}


def test_every_served_method_has_its_handler_bound() -> None:
    server = debug_server()
    assert server._handlers.keys() == server.registry.served.keys()
    assert AcpServer()._handlers.keys() == SERVED.keys()


@pytest.mark.parametrize("name", sorted(SERVED))
def test_handlers_run_in_the_reader_only_where_meant(name: str) -> None:
    handler = AcpServer()._handlers[name]
    assert inspect.iscoroutinefunction(handler) is (name not in SYNC_HANDLERS)


def test_every_handler_is_bound() -> None:
    methods = {name for name in dir(AcpServer) if name.startswith("on_")}
    bound = {handler.__name__ for handler in AcpServer()._handlers.values()}
    assert methods == bound


def test_served_methods_exist_in_the_protocol_and_are_inbound() -> None:
    for name in SERVED:
        assert name in ACP
        assert ACP[name].inbound
    extension = debug_server().registry.served.keys() - SERVED.keys()
    assert extension == debug.SPECS.keys()
    for name in extension:
        assert name.startswith("_acp_fsm/")
        assert name not in ACP
        assert debug.SPECS[name].inbound


def test_an_extension_may_not_redefine_a_method() -> None:
    with pytest.raises(ValueError, match="redefines"):
        PROTOCOL.extend({"initialize": ACP["initialize"]}, ())
    with pytest.raises(ValueError, match="inbound"):
        PROTOCOL.extend({}, (Served("session/update"),))


def test_only_initialize_fires_the_initialize_trigger() -> None:
    served = debug_server().registry.served
    triggers = {name: entry.trigger for name, entry in served.items() if entry.trigger}
    assert triggers == {"initialize": HandshakeTrigger.INITIALIZE}


@pytest.mark.parametrize("name", sorted(ALL_SPECS))
def test_every_method_has_existing_schemas(name: str) -> None:
    spec = ALL_SPECS[name]
    assert spec.name == name
    assert spec.direction in (CLIENT_TO_AGENT, AGENT_TO_CLIENT, BOTH)
    assert spec.kind in ("request", "notification")
    schemas.validator(spec.params_ref)  # KeyError when the definition does not exist
    if spec.kind == "request":
        assert spec.result_ref is not None
        schemas.validator(spec.result_ref)
    else:
        assert spec.result_ref is None


def test_acp_index_has_the_core_methods() -> None:
    assert ACP["initialize"].direction == CLIENT_TO_AGENT
    assert ACP["session/update"].direction == AGENT_TO_CLIENT
    assert ACP["session/update"].kind == "notification"
    assert ACP["session/request_permission"].kind == "request"
    assert ACP["$/cancel_request"].direction == BOTH
    assert not ACP["fs/read_text_file"].inbound


def test_extensions_are_known_only_where_installed() -> None:
    assert PROTOCOL.spec_of("_acp_fsm/sleep") is None
    assert "_acp_fsm/sleep" not in PROTOCOL.served
    extended = debug_server().registry
    assert extended.spec_of("_acp_fsm/sleep") is debug.SPECS["_acp_fsm/sleep"]
    assert extended.spec_of("initialize") is ACP["initialize"]


def test_a_method_not_served_is_known_but_not_routed(unserved: str) -> None:
    assert PROTOCOL.spec_of(unserved) is ACP[unserved]
    assert unserved not in debug_server().registry.served


# ------------------------------------------------------------------ capabilities

# Capability path -> the method it promises.
CAPABILITY_METHODS: dict[tuple[str, ...], str] = {
    ("loadSession",): "session/load",
    ("sessionCapabilities", "list"): "session/list",
    ("sessionCapabilities", "delete"): "session/delete",
    ("sessionCapabilities", "resume"): "session/resume",
    ("sessionCapabilities", "close"): "session/close",
    ("sessionCapabilities", "fork"): "session/fork",
    ("sessionCapabilities", "additionalDirectories"): "session/new",
    ("auth", "logout"): "logout",
}


def lookup(node: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def test_capabilities_validate() -> None:
    capabilities = agent_capabilities()
    assert schemas.validate("acp.AgentCapabilities", capabilities) is None


@pytest.mark.parametrize(("path", "method"), list(CAPABILITY_METHODS.items()))
def test_capability_advertised_iff_method_served(path: tuple[str, ...], method: str) -> None:
    value = lookup(agent_capabilities(), path)
    advertised = value is True or isinstance(value, dict)
    assert advertised == (method in SERVED), (path, value)


def test_load_session_follows_session_load() -> None:
    assert agent_capabilities()["loadSession"] is ("session/load" in SERVED)


def test_prompt_content_not_advertised_without_session_prompt() -> None:
    capabilities = agent_capabilities()
    if "session/prompt" not in SERVED:
        assert capabilities["promptCapabilities"] == {
            "image": False,
            "audio": False,
            "embeddedContext": False,
        }
    assert capabilities["mcpCapabilities"] == {"http": True, "sse": True}


def test_capabilities_are_a_fresh_copy() -> None:
    second = agent_capabilities()
    first = agent_capabilities()
    first["loadSession"] = True
    first["promptCapabilities"]["image"] = True
    first["sessionCapabilities"]["extra"] = {}
    assert agent_capabilities() == second
    assert "extra" not in agent_capabilities()["sessionCapabilities"]


def test_initialize_result() -> None:
    result = initialize_result()
    assert schemas.validate("acp.InitializeResponse", result) is None
    assert result["protocolVersion"] == 1 == PROTOCOL_VERSION
    assert result["agentCapabilities"] == agent_capabilities()
    assert [m["id"] for m in result["authMethods"]] == ["api-key"]
    assert "type" not in result["authMethods"][0]  # agent-handled: through `authenticate`


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ({"terminal": True}, ["terminal"]),
        ({"terminal": False}, [None]),
        (None, [None]),
        ("yes", [None]),
        ({"terminal": "true"}, [None]),
    ],
)
def test_the_terminal_login_is_offered_only_to_a_client_that_can_run_it(
    auth: object, expected: list[str | None]
) -> None:
    result = initialize_result({"protocolVersion": 1, "clientCapabilities": {"auth": auth}})
    assert schemas.validate("acp.InitializeResponse", result) is None
    assert [m.get("type") for m in result["authMethods"]] == expected
    if expected == ["terminal"]:
        terminal = cast("acp.AuthMethodTerminalVariant", result["authMethods"][0])
        assert terminal["args"] == ["login"]


@pytest.mark.parametrize(
    ("meta", "expected"),
    [({"terminal-auth": True}, "terminal"), ({"terminal-auth": "yes"}, None), (None, None)],
)
def test_the_older_terminal_auth_flag_counts_too(meta: object, expected: str | None) -> None:
    result = initialize_result(
        {"protocolVersion": 1, "clientCapabilities": {"terminal": True, "_meta": meta}}
    )
    assert [m.get("type") for m in result["authMethods"]] == [expected]
    assert result["agentInfo"] == {"name": "acp-fsm", "title": "acp-fsm", "version": __version__}


def test_initialize_result_is_not_shared_state() -> None:
    changed = initialize_result()["agentInfo"]
    assert changed is not None
    changed["name"] = "changed"
    fresh = initialize_result()["agentInfo"]
    assert fresh is not None and fresh["name"] == "acp-fsm"


# ------------------------------------------------------------------ route


def refused(
    state: str,
    method: str,
    params: object,
    *,
    request: bool = True,
    registry: Registry = PROTOCOL,
) -> RpcError:
    with pytest.raises(RpcError) as caught:
        registry.route(state, method, params, request=request)
    return caught.value


def test_route_initialize() -> None:
    entry = PROTOCOL.route("uninitialized", "initialize", VALID_INITIALIZE, request=True)
    assert entry is SERVED["initialize"]
    assert entry.trigger == HandshakeTrigger.INITIALIZE


@pytest.mark.parametrize("method", ["session/new", "session/prompt", "authenticate", "logout"])
def test_route_before_initialize_is_server_not_initialized(method: str) -> None:
    error = refused("uninitialized", method, {})
    assert type(error) is ServerNotInitialized
    assert error.code == -32002


def test_route_second_initialize() -> None:
    error = refused("initialized", "initialize", VALID_INITIALIZE)
    assert type(error) is ServerNotInitialized
    assert error.code == -32002


@pytest.mark.parametrize("state", ["uninitialized", "initialized", "closing", "closed"])
@pytest.mark.parametrize(
    "method", ["no/such", "_vendor/ext", "_acp_fsm/sleep", "session/update", "fs/read_text_file"]
)
def test_route_unknown_or_outbound_method_is_method_not_found(state: str, method: str) -> None:
    error = refused(state, method, {})
    assert type(error) is MethodNotFound
    assert error.code == -32601
    assert method in error.message


def test_route_known_but_unserved_method(unserved: str) -> None:
    error = refused("initialized", unserved, {})
    assert type(error) is MethodNotFound
    assert error.code == -32601
    assert "not supported" in error.message


@pytest.mark.parametrize(
    "params", [{}, {"protocolVersion": "1"}, {"protocolVersion": -1}, {"protocolVersion": None}]
)
def test_route_bad_initialize_params_names_the_field(params: dict[str, Any]) -> None:
    error = refused("uninitialized", "initialize", params)
    assert type(error) is InvalidParams
    assert error.code == -32602
    assert "protocolVersion" in error.message
    assert error.message.startswith("Invalid params")


@pytest.mark.parametrize("params", [None, [], "x"])
def test_route_initialize_params_must_be_an_object(params: object) -> None:
    error = refused("uninitialized", "initialize", params)
    assert type(error) is InvalidParams
    assert "object" in error.message


def test_route_nested_params_error_names_the_path() -> None:
    params = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": "yes"}}}
    error = refused("uninitialized", "initialize", params)
    assert type(error) is InvalidParams
    assert "clientCapabilities.fs.readTextFile" in error.message


def test_route_request_method_sent_as_notification() -> None:
    error = refused("uninitialized", "initialize", VALID_INITIALIZE, request=False)
    assert type(error) is InvalidRequest
    assert error.code == -32600
    assert "initialize" in error.message


def test_route_notification_method_sent_as_request() -> None:
    error = refused("initialized", "session/cancel", {"sessionId": "s"}, request=True)
    assert type(error) is InvalidRequest
    assert error.code == -32600


@pytest.mark.parametrize("state", ["closing", "closed"])
def test_route_while_closing(state: str) -> None:
    error = refused(state, "initialize", VALID_INITIALIZE)
    assert type(error) is InternalError
    assert error.code == -32603


def test_route_debug_methods_only_when_installed() -> None:
    registry = debug_server().registry
    entry = registry.route("initialized", "_acp_fsm/sleep", {"ms": 1}, request=True)
    assert entry is registry.served["_acp_fsm/sleep"]
    assert type(refused("initialized", "_acp_fsm/sleep", {"ms": 1})) is MethodNotFound
    error = refused("initialized", "_acp_fsm/sleep", {"ms": "1"}, registry=registry)
    assert type(error) is InvalidParams
    assert "ms" in error.message


def test_route_authenticate_params() -> None:
    error = refused("initialized", "authenticate", {})
    assert type(error) is InvalidParams
    assert "methodId" in error.message
    entry = PROTOCOL.route("initialized", "authenticate", {"methodId": "x"}, request=True)
    assert entry is SERVED["authenticate"]


# ------------------------------------------------------------------ ClientInfo


def test_client_info_flags() -> None:
    client = ClientInfo(
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": False},
                "terminal": True,
            },
            "clientInfo": {"name": "zed", "version": "1"},
        }
    )
    assert client.protocol_version == 1
    assert client.can_read_files is True
    assert client.can_write_files is False
    assert client.has_terminal is True
    assert client.info == {"name": "zed", "version": "1"}
    assert repr(client) == "<ClientInfo zed v1 read=True write=False terminal=True>"


def test_client_info_defaults_and_odd_shapes() -> None:
    bare = ClientInfo({"protocolVersion": 1})
    assert (bare.can_read_files, bare.can_write_files, bare.has_terminal) == (False, False, False)
    assert bare.capabilities == {}
    assert bare.info is None
    assert repr(bare) == "<ClientInfo ? v1 read=False write=False terminal=False>"
    null_caps = ClientInfo({"protocolVersion": 1, "clientCapabilities": None})
    assert null_caps.capabilities == {}
    # Only a literal true counts.
    odd = ClientInfo({"protocolVersion": 1, "clientCapabilities": {"fs": True, "terminal": "yes"}})
    assert (odd.can_read_files, odd.can_write_files, odd.has_terminal) == (False, False, False)
    truthy = ClientInfo(
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": 1}, "terminal": 1}}
    )
    assert (truthy.can_read_files, truthy.has_terminal) == (False, False)


# ------------------------------------------------------------------ config


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("ACP_CLIENT_RPC_TIMEOUT_MS", raising=False)
    monkeypatch.delenv("ACP_PERMISSION_TIMEOUT_MS", raising=False)
    return monkeypatch


PERMISSION = "session/request_permission"


def test_timeout_default(clean_env: pytest.MonkeyPatch) -> None:
    assert env_vars.client_rpc_timeout_ms() == 30000
    assert env_vars.client_rpc_timeout_ms("fs/read_text_file") == 30000
    assert env_vars.client_rpc_timeout_ms(PERMISSION) == 30000


def test_timeout_override(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", "1500")
    assert env_vars.client_rpc_timeout_ms("fs/read_text_file") == 1500
    assert env_vars.client_rpc_timeout_ms(PERMISSION) == 1500


def test_permission_timeout_only_for_permission_requests(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", "1500")
    clean_env.setenv("ACP_PERMISSION_TIMEOUT_MS", "600000")
    assert env_vars.client_rpc_timeout_ms(PERMISSION) == 600000
    assert env_vars.client_rpc_timeout_ms("fs/read_text_file") == 1500
    assert env_vars.client_rpc_timeout_ms("terminal/create") == 1500
    assert env_vars.client_rpc_timeout_ms() == 1500


def test_zero_means_no_limit_and_is_allowed(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", "0")
    assert env_vars.client_rpc_timeout_ms("fs/read_text_file") == 0
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", "100")
    clean_env.setenv("ACP_PERMISSION_TIMEOUT_MS", "0")
    assert env_vars.client_rpc_timeout_ms(PERMISSION) == 0
    assert env_vars.client_rpc_timeout_ms("fs/read_text_file") == 100


@pytest.mark.parametrize("raw", ["abc", "-5", "1.5", "10ms", "0x10"])
def test_garbage_timeout_falls_back_with_a_warning(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raw: str
) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", raw)
    assert env_vars.client_rpc_timeout_ms("fs/read_text_file") == 30000
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "ACP_CLIENT_RPC_TIMEOUT_MS" in captured.err


@pytest.mark.parametrize("raw", ["", "   "])
def test_blank_timeout_is_the_default(clean_env: pytest.MonkeyPatch, raw: str) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", raw)
    assert env_vars.client_rpc_timeout_ms() == 30000


def test_garbage_permission_timeout_falls_back_to_client_timeout(
    clean_env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", "2500")
    clean_env.setenv("ACP_PERMISSION_TIMEOUT_MS", "forever")
    assert env_vars.client_rpc_timeout_ms(PERMISSION) == 2500
    assert "ACP_PERMISSION_TIMEOUT_MS" in capsys.readouterr().err


def test_whitespace_around_a_number_is_accepted(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ACP_CLIENT_RPC_TIMEOUT_MS", " 750 ")
    assert env_vars.client_rpc_timeout_ms() == 750


# ------------------------------------------------------------------ redaction

SECRET = "sk-live-0123456789abcdef"


def redact(event: dict[str, Any], secrets: list[str] | None = None) -> dict[str, Any]:
    return Redactor([SECRET] if secrets is None else secrets)(None, "info", event)


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apikey",
        "Authorization",
        "x-api-key",
        "X-API-Key",
        "secret",
        "password",
        "token",
        "bearer",
        "OPENAI_API_KEY",
        "client_secret",
        "db_password",
        "github_access_token",
    ],
)
def test_secret_keys_are_redacted(key: str) -> None:
    assert redact({"event": "e", key: "anything"}) == {"event": "e", key: REDACTED}


def test_secret_keys_redacted_whatever_the_value_type() -> None:
    assert redact({"password": {"nested": 1}, "token": 12345}) == {
        "password": REDACTED,
        "token": REDACTED,
    }


def test_secret_values_are_redacted_in_text() -> None:
    event = {"event": f"calling with {SECRET} now", "url": f"https://x/?k={SECRET}&k2={SECRET}"}
    assert redact(event) == {
        "event": f"calling with {REDACTED} now",
        "url": f"https://x/?k={REDACTED}&k2={REDACTED}",
    }


def test_nested_secrets_are_redacted() -> None:
    event = {
        "event": "request",
        "body": {
            "headers": {"Authorization": "Bearer abc", "Accept": "json"},
            "messages": [{"content": f"key is {SECRET}"}, ("x", {"api_key": "k"})],
            "max_tokens": 100,
        },
    }
    assert redact(event) == {
        "event": "request",
        "body": {
            "headers": {"Authorization": REDACTED, "Accept": "json"},
            "messages": [{"content": f"key is {REDACTED}"}, ["x", {"api_key": REDACTED}]],
            "max_tokens": 100,
        },
    }


def test_innocent_keys_are_left_alone() -> None:
    event = {
        "event": "usage",
        "max_tokens": 4096,
        "request_id": "req-1",
        "input_tokens": 12,
        "token_count": 3,
        "session_id": "s-1",
    }
    assert redact(event) == event


def test_empty_and_no_secrets_redact_nothing() -> None:
    event = {"event": "x", "text": "plain"}
    assert redact(event, secrets=[""]) == event
    assert redact(event, secrets=[]) == event


def test_secret_values_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-abcdefgh")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-12345678")
    monkeypatch.setenv("SHORT_SECRET", "abc")  # too short to be worth matching
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    values = set(env_vars.secret_values())
    assert {"sk-openai-abcdefgh", "tok-12345678"} <= values
    assert "abc" not in values


async def test_the_handshake_machine_gates_a_closing_connection() -> None:
    """Once the connection closes, the machine (not a flag beside it) refuses every message:
    a request is answered -32603 naming the state, a notification is dropped."""
    import json as json_module

    from acp_fsm.fsm.handshake import Handshake
    from acp_fsm.protocol.connection import Connection
    from acp_fsm.server import AcpServer

    written: list[bytes] = []
    server = AcpServer(Handshake())
    conn = Connection(server, written.append)
    server.attach(conn)
    conn.feed(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n')
    for _ in range(5):
        await asyncio.sleep(0)
    assert server.state == "initialized"
    conn.terminate("SIGTERM")
    assert server.state == "closing"
    conn.feed(
        b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}\n'
    )
    for _ in range(5):
        await asyncio.sleep(0)
    answers = [json_module.loads(line) for line in written]
    assert answers[-1] == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32603, "message": "Server is closing; not accepting session/list"},
    }
    assert len(answers) == 2  # the initialize answer, and that one
    server.finish()
    assert server.state == "closed"


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        (
            "session/new",
            {"cwd": "/w", "mcpServers": [{"type": "http", "name": "a", "url": 5, "headers": []}]},
            "Invalid params: mcpServers[0].url: expected string, got integer",
        ),
        (
            "session/new",
            {"cwd": "/w", "mcpServers": [{"name": "a", "command": ["x"], "args": [], "env": []}]},
            "Invalid params: mcpServers[0].command: expected string, got array",
        ),
        (
            "session/prompt",
            {
                "sessionId": "s",
                "prompt": [{"type": "resource", "resource": {"uri": "file:///a", "text": 5}}],
            },
            "Invalid params: prompt[0].resource.text: expected string, got integer",
        ),
    ],
)
def test_a_union_without_a_tag_on_every_branch_still_names_the_field(
    method: str, params: dict[str, Any], message: str
) -> None:
    assert refused("initialized", method, params).message == message
