"""AcpServer: the ACP side of the stdio connection (docs/architecture.md).

It owns the handshake machine and the client's capabilities, routes each inbound call through
its method registry (`acp_fsm.methods.Registry.route`), validates what goes out against the
schemas, and makes agent→client requests bounded by `client_rpc_timeout_ms` and a cancellation
token. The registry and the handlers are ACP's, plus any extension (`extend`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast

import structlog

from acp_fsm import (
    child_sessions,
    client_prompt,
    credentials,
    env_vars,
    limits,
    steering,
    updates,
    warm,
)
from acp_fsm.dialects import DIALECTS, Dialect
from acp_fsm.errors import BadRequest, DomainError
from acp_fsm.fsm.handshake import Handshake, HandshakeState, HandshakeTrigger
from acp_fsm.initialize import API_KEY_LOGIN, TERMINAL_LOGIN, ClientInfo, initialize_result
from acp_fsm.llm_providers import EDITOR
from acp_fsm.methods import (
    PROTOCOL,
    PROTOCOL_V2,
    MethodSpec,
    Registry,
    Served,
    answer,
)
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.connection import Connection
from acp_fsm.protocol.dispatcher import OutboundKind
from acp_fsm.protocol.errors import (
    CapabilityMissing,
    InternalError,
    InvalidParams,
)
from acp_fsm.protocol.jsonrpc import Notification, Request
from acp_fsm.schemas import plain
from acp_fsm.session.core import Session
from acp_fsm.session.registry import Sessions
from acp_fsm.versions import V1, V2

if TYPE_CHECKING:
    from acp_fsm.early_session import FirstSession
    from acp_fsm.schemas import acp_types as acp

log = structlog.get_logger("acp")

# The work of one inbound method: its params in, the coroutine that answers it (a request's
# result) or None (a notification handled at once). Each takes its method's generated request
# type (`acp.PromptRequest`, ...), held here as `Any`: `dispatch` gives it the params only once
# `route` validated them against that method's schema, which makes them of that type (the one
# cast of the editor's params).
Handler = Callable[[Any], Coroutine[Any, Any, Any] | None]


class AcpServer:
    """Routes ACP calls for one connection and makes requests to its client."""

    def __init__(
        self,
        handshake: Handshake | None = None,
        *,
        client: ClientInfo | None = None,
        shared: bool = False,
    ) -> None:
        """`handshake` as the startup path left it (it may have answered `initialize`, then
        `client` is what the client said in it); the handshake goes on from its state.
        `shared`: one of several connections of the process (`acp_fsm.remote`), whose
        provider is the process's: not set per connection (`providers/*` refused)."""
        self.shared = shared
        # Each version's methods and their work; the connection's `version` picks one.
        self._registries: dict[int, Registry] = {V1: PROTOCOL, V2: PROTOCOL_V2}
        self._handlers = self._bind_handlers()
        self._handlers_v2 = self._bind_handlers_v2()
        self.client = client
        self.handshake = handshake or Handshake()
        self._conn: Connection | None = None
        self._null_results: set[str] = set()  # methods whose `null` result was logged once
        self.sessions = Sessions(self)

    def __repr__(self) -> str:
        return f"<AcpServer {self.handshake.state} client={self.client!r}>"

    @property
    def state(self) -> HandshakeState:
        return HandshakeState(self.handshake.state)

    @property
    def version(self) -> int:
        """The ACP version the connection speaks: settled by `initialize` (v1 before it)."""
        return V1 if self.client is None else self.client.version

    @property
    def registry(self) -> Registry:
        """The methods of the version the connection speaks."""
        return self._registries[self.version]

    @property
    def dialect(self) -> Dialect:
        """How what the sessions say is said in the connection's version."""
        return DIALECTS[self.version]

    def attach(self, conn: Connection) -> None:
        self._conn = conn

    @property
    def conn(self) -> Connection:
        assert self._conn is not None, "AcpServer is not attached to a connection"
        return self._conn

    # ------------------------------------------------------------- dispatch

    def _bind_handlers(self) -> dict[str, Handler]:
        """The work of each method in `methods.SERVED` (a test holds the two to each other)."""
        return {
            "initialize": self.on_initialize,
            "authenticate": self.on_authenticate,
            "logout": self.on_logout,
            "session/new": self.on_session_new,
            "session/prompt": self.on_session_prompt,
            "session/cancel": self.on_session_cancel,
            "session/load": self.on_session_load,
            "session/resume": self.on_session_resume,
            "session/list": self.on_session_list,
            "session/close": self.on_session_close,
            "session/delete": self.on_session_delete,
            "session/set_mode": self.on_session_set_mode,
            "session/set_config_option": self.on_session_set_config_option,
            "session/set_model": self.on_session_set_model,
            "session/fork": self.on_session_fork,
            "session/set_title": self.on_session_set_title,
            steering.METHOD: self.on_steering,
            "_session/checkpoints": self.on_checkpoints,
            "_session/rewind": self.on_rewind,
            "providers/list": self.on_providers_list,
            "providers/set": self.on_providers_set,
            "providers/disable": self.on_providers_disable,
        }

    def _bind_handlers_v2(self) -> dict[str, Handler]:
        """The work of each method of ACP v2 (`methods.SERVED_V2`): v1's where v2 kept the
        method, and v2's own (`acp_fsm.surface_v2`)."""
        from acp_fsm import surface_v2

        kept = {name: self._handlers[name] for name in surface_v2.KEPT}
        return {**kept, **surface_v2.handlers(self)}

    def extend(self, specs: dict[str, MethodSpec], handlers: dict[str, Handler]) -> None:
        """Serve extension methods, in either version: `specs` defines them (schemas
        included), `handlers` does their work. Before the connection reads its first
        message."""
        served = tuple(Served(name) for name in handlers)
        self._registries = {v: r.extend(specs, served) for v, r in self._registries.items()}
        self._handlers.update(handlers)
        self._handlers_v2.update(handlers)

    def dispatch(self, message: Request | Notification) -> Coroutine[Any, Any, Any] | None:
        """Route `message` (raising the `RpcError` that refuses it), then call its handler:
        the coroutine of its work, or None. A domain error the handler raises, at once or
        while it runs, is answered with its JSON-RPC error (`methods.answer`)."""
        is_request = isinstance(message, Request)
        entry = self.registry.route(
            self.handshake.state, message.method, message.params, request=is_request
        )
        trigger = entry.fires(message.params)
        if trigger is not None:
            self._fire(trigger)
        params = message.params  # valid under the method's schema: its handler's type
        if entry.trigger is HandshakeTrigger.INITIALIZE:  # the version, before the next line
            self.client = ClientInfo(params)
        handler = (self._handlers_v2 if self.version == V2 else self._handlers)[entry.name]
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            session_id = None
        # dispatch runs in the reader's context: bind only around the call, and again inside
        # the handler's own task, so the session id never leaks into unrelated log lines
        # (the tokens' reset, not `bound_contextvars`: that copies the whole context)
        bound = (
            structlog.contextvars.bind_contextvars(session_id=session_id)
            if session_id is not None
            else {}
        )
        try:
            work = handler(params)
        except DomainError as error:
            raise answer(error) from None
        finally:
            structlog.contextvars.reset_contextvars(**bound)
        if not asyncio.iscoroutine(work):
            return None
        return _answered(work, session_id, entry.name, self.dialect)

    def check_outbound(self, method: str, kind: OutboundKind, payload: Any) -> str | None:
        return self.registry.outbound_violation(method, kind, payload)

    def check_template(self, method: str, kind: OutboundKind, payload: Any) -> bool:
        ref, _ = self.registry.outbound_ref(method, kind)
        return ref is not None and plain.surely_valid(ref, payload)

    def accept_response(self, method: str, result: Any) -> Any:
        """Strict on what results carry, liberal on how empty ones are spelled: editors answer
        `null` where ACP's result is an object with no required member (`fs/write_text_file`,
        `terminal/kill`, ...), and that counts as `{}`. A result that must carry data
        (`content`, `outcome`, ...) is still checked in full."""
        if result is None and self.registry.empty_result(method):
            if method not in self._null_results:
                self._null_results.add(method)
                log.debug("null_result_accepted", method=method)
            return {}
        return self.registry.checked_result(method, result)

    def cancel_request(self, request: Request) -> bool:
        """`$/cancel_request` for a prompt is a cancel of its turn (or of it alone, queued):
        ACP answers a cancelled prompt with stopReason cancelled, never an error. Other
        requests are simply stopped."""
        if request.method != "session/prompt" or not isinstance(request.params, dict):
            return False
        session = self.sessions.find(request.params.get("sessionId", ""))
        prompt = request.params.get("prompt")
        return (
            session is not None
            and isinstance(prompt, list)
            and session.cancel_prompt(prompt, "$/cancel_request")
        )

    # ------------------------------------------------------ client requests

    def call_client(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None = None,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> asyncio.Future[Any]:
        """Send `method` to the client now; the future gives its result (see
        `Connection.request`). Bounded by `client_rpc_timeout_ms(method)` unless `timeout_ms`
        is given (0 = no limit) and released early when `token` fires. Raises
        `CapabilityMissing` without sending anything when the client did not advertise it.
        `verbatim`: sent exactly, secrets included (the content of a file to write)."""
        if self.client is None or not self.client.allows(method):
            raise CapabilityMissing(f"the client did not advertise the capability {method} needs")
        if timeout_ms is None:
            timeout_ms = env_vars.client_rpc_timeout_ms(method)
        answer = self.conn.request(
            method,
            self.dialect.request(method, params),
            token=token,
            timeout_ms=timeout_ms,
            verbatim=verbatim,
        )
        if method in env_vars.ASKING_USER:  # the session's work waits for the user meanwhile
            self._waits_for_user(params["sessionId"], answer)
        return answer

    def _waits_for_user(self, session_id: str, answer: asyncio.Future[Any]) -> None:
        """The foreground state of session `session_id` while `answer` is awaited: it requires
        the user's action, then runs again once nothing else of it waits for the user (v2's
        `state_update`; v1 has no word for it). A subagent's child session is told its own."""
        owner = self.sessions.find(child_sessions.parent_of(session_id) or session_id)
        if owner is None:
            return
        counted = owner.id == session_id  # the child's is its own state, not its parent's
        owner.asking += counted
        owner.send_update(updates.state("requires_action"), session_id)

        def answered(_: asyncio.Future[Any]) -> None:
            owner.asking -= counted
            if not owner.asking or not counted:
                owner.send_update(updates.state("running"), session_id)

        answer.add_done_callback(answered)

    # ------------------------------------------------------------- lifecycle

    def closing(self, reason: str) -> None:
        """Input or output is gone, or a signal came: stop admitting work (the handshake's
        `close`: from now on its admission refuses every message) and cancel every running
        turn, before the requests they wait on fail."""
        self._fire(HandshakeTrigger.CLOSE)
        self.sessions.cancel_all(reason)

    async def shutdown(self) -> None:
        """After `closing`: let the cancelled turns drain and persist, then close the store."""
        await self.sessions.shutdown()

    def finish(self) -> None:
        """The work is persisted and the output flushed: `closed`."""
        self._fire(HandshakeTrigger.FINISH)

    def _fire(self, trigger: HandshakeTrigger) -> None:
        """The handshake's transition (`IllegalTransition` where the table has no row)."""
        self.handshake.fire(trigger)

    # -------------------------------------------------------------- methods

    async def on_initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        # `self.client`: set as it was routed (`dispatch`), with the version it settles
        info = None if self.client is None else self.client.info
        log.info("initialized", client=info, protocol_version=self.version)
        # a shared server's provider is its own, for every connection: not advertised
        return initialize_result(params, shared=self.shared)

    async def on_authenticate(self, params: acp.AuthenticateRequest) -> acp.AuthenticateResponse:
        """Read the credentials again (a login in a terminal, or the environment): succeeds
        once a model call could be made."""
        method = params["methodId"]
        known = (API_KEY_LOGIN["id"], TERMINAL_LOGIN["id"])  # liberal: the terminal one too
        if method not in known:
            raise InvalidParams(
                f"Invalid params: methodId: unknown authentication method "
                f"{limits.echo(method)}; expected one of "
                f"{', '.join(map(repr, known))}"
            )
        found = await credentials.read()
        if found.needs_login:
            raise found.refusal(self.client)
        log.info("authenticated", method=method)
        return {}

    async def on_logout(self, params: acp.LogoutRequest) -> acp.LogoutResponse:
        """Forget the stored credentials (the environment's stay: the editor set them)."""
        try:
            removed = credentials.remove()
        except OSError as exc:
            log.warning("logout_failed", error=str(exc))  # the path: in the log only
            raise InternalError(
                f"Internal error: the stored credentials could not be "
                f"removed: {exc.strerror or type(exc).__name__}"
            ) from None
        log.info("logged_out", removed=removed)
        return {}

    async def on_session_new(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        prompt = client_prompt.parse(params.get("systemPrompt"))
        found = await credentials.read()
        if found.needs_login:  # said now, not after the first prompt is typed
            raise found.refusal(self.client)
        unlisted: str | None = None
        if found.config is not None:  # a compatible server's own models, if none is known
            from acp_fsm.model_catalog import CATALOG

            unlisted = await CATALOG.listed(found.config)
        session = await self.sessions.new(
            params["cwd"],
            params.get("additionalDirectories") or [],
            params.get("mcpServers") or [],
            found.config,
            prompt,
        )
        if unlisted is not None:  # with the first answer
            session.toolbox.tell_once(unlisted)
        return {"sessionId": session.id, **self._set_up(session)}

    async def open_first(self, first: FirstSession, answered_ms: float | None) -> None:
        """Take over the session the startup path created, answered and announced the
        commands of (`early_session`), and go on from there."""
        session = await self.sessions.adopt(first, answered_ms)
        self._after_announcing(session)

    async def on_session_fork(self, params: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
        prompt = client_prompt.parse(params.get("systemPrompt"))
        found = await credentials.read()
        if found.needs_login:
            raise found.refusal(self.client)
        session = await self.sessions.fork(
            params["sessionId"],
            params["cwd"],
            params.get("additionalDirectories") or [],
            params.get("mcpServers") or [],
            found.config,
            prompt,
        )
        return {"sessionId": session.id, **self._set_up(session)}

    def _set_up(self, session: Session) -> acp.LoadSessionResponse:
        """A session's setup result (its options), and what follows the answer: its slash
        commands, and the provider's model list, fetched if not known and announced if it
        changes."""

        def after() -> None:
            from acp_fsm.commands import announcement

            session.send_update(announcement())
            self._after_announcing(session)

        self.conn.after_response(after)
        return session.options.setup_result()

    def _after_announcing(self, session: Session) -> None:
        """What follows a session's answer and its slash commands' announcement."""
        session.toolbox.read_library_soon()  # the user's commands and skills: told again if any
        # What the model list and the first prompt need (acp_fsm.warm), once the answer and
        # the updates before it are written: the threads take the GIL at their start.
        asyncio.get_running_loop().call_soon(warm.prompt_path_soon)
        config = session.provider
        if config is not None:
            from acp_fsm.model_catalog import CATALOG

            CATALOG.refresh_soon(config, self.sessions.announce_options)

    def on_session_prompt(
        self, params: acp.PromptRequest
    ) -> Coroutine[Any, Any, acp.PromptResponse]:
        # Synchronous on purpose: the turn takes the session's token before any await, so a
        # session/cancel read right after the prompt reaches this turn (docs/cancellation.md).
        return self.sessions.get(params["sessionId"]).start_turn(params["prompt"])

    def on_session_cancel(self, params: acp.CancelNotification) -> None:
        session_id = params["sessionId"]
        session = self.sessions.find(session_id)
        parent = child_sessions.parent_of(session_id) if session is None else None
        if parent is not None:  # a subagent's child session: its work alone
            held = self.sessions.find(parent)
            if held is None or not held.cancel_child(session_id):
                log.debug("cancel_of_idle_subagent", session_id=session_id)
        elif session is None:
            log.info("cancel_for_unknown_session", session_id=session_id)
        elif not session.cancel():
            log.debug("cancel_while_idle")

    async def on_session_load(self, params: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        return await self.restore(params, replay=True)

    async def on_session_resume(
        self, params: acp.ResumeSessionRequest
    ) -> acp.ResumeSessionResponse:
        return await self.restore(params, replay=False)

    async def restore(
        self, params: acp.LoadSessionRequest | acp.ResumeSessionRequest, *, replay: bool
    ) -> acp.LoadSessionResponse:
        """`session/load` (with `replay`) or `session/resume`."""
        prompt = client_prompt.parse(params.get("systemPrompt"))
        session = await self.sessions.restore(
            params["sessionId"],
            params["cwd"],
            params.get("mcpServers") or [],
            replay,
            prompt,
            params.get("additionalDirectories"),
        )
        return self._set_up(session)

    async def on_session_set_mode(
        self, params: acp.SetSessionModeRequest
    ) -> acp.SetSessionModeResponse:
        await self.sessions.get(params["sessionId"]).options.set_mode(params["modeId"])
        return {}

    async def on_session_set_config_option(
        self, params: acp.SetSessionConfigOptionRequest
    ) -> acp.SetSessionConfigOptionResponse:
        session = self.sessions.get(params["sessionId"])
        if params.get("type") == "boolean":
            raise InvalidParams(
                f"Invalid params: {limits.echo(params['configId'])} is not a "
                "boolean option; this agent has select options only"
            )
        return {
            "configOptions": await session.options.set_option(
                params["configId"], params.get("value")
            )
        }

    async def on_session_set_model(
        self, params: acp.SetSessionModelRequest
    ) -> acp.SetSessionModelResponse:
        """The older way to choose the model: setting the `model` config option."""
        await self.sessions.get(params["sessionId"]).options.set_model(params["modelId"])
        return {}

    async def on_session_close(self, params: acp.CloseSessionRequest) -> acp.CloseSessionResponse:
        await self.sessions.close(params["sessionId"])
        return {}

    async def on_session_delete(
        self, params: acp.DeleteSessionRequest
    ) -> acp.DeleteSessionResponse:
        await self.sessions.delete(params["sessionId"])
        return {}

    def on_steering(self, params: acp.SteeringRequest) -> Coroutine[Any, Any, acp.SteeringResponse]:
        # Synchronous, as a prompt is: the message reaches the turn running when it is read.
        session = self.sessions.get(params["sessionId"])
        outcome = session.steer(params["prompt"], steering.idle_behavior(dict(params)))

        async def answer() -> acp.SteeringResponse:
            return outcome

        return answer()

    async def on_checkpoints(self, params: acp.CheckpointsRequest) -> acp.CheckpointsResponse:
        from acp_fsm.checkpoints import points

        entries = await self.sessions.get(params["sessionId"]).stored()
        return {"checkpoints": [cast("acp.Checkpoint", p.as_json()) for p in points(entries)]}

    async def on_rewind(self, params: acp.RewindRequest) -> acp.RewindResponse:
        """`/rewind` run as the session's next turn (after one running now), its outcome as
        the answer (`acp_fsm.turn.rewinding`)."""
        session = self.sessions.get(params["sessionId"])
        command = f"/rewind {params['messageId']}" + (" confirm" if params.get("force") else "")
        answer = await session.start_turn([{"type": "text", "text": command}])
        found = (answer.get("_meta") or {}).get("acpFsm", {}).get("rewind")
        if found is not None:
            return cast("acp.RewindResponse", found)
        if answer["stopReason"] == "cancelled":
            return {"outcome": "cancelled"}  # before anything was changed
        raise BadRequest("messageId", "no prompt of this session has it")

    async def on_providers_list(
        self, params: acp.ListProvidersRequest
    ) -> acp.ListProvidersResponse:
        return EDITOR.listed((await credentials.read()).config)

    async def on_providers_set(self, params: acp.SetProviderRequest) -> acp.SetProviderResponse:
        self._own_provider("baseUrl")
        EDITOR.set(params)
        found = await credentials.read()
        log.info("provider_set", api_type=params["apiType"], base_url=params["baseUrl"])
        self.sessions.reconfigured(found.config)
        return {}

    async def on_providers_disable(
        self, params: acp.DisableProviderRequest
    ) -> acp.DisableProviderResponse:
        self._own_provider("apiType")
        EDITOR.disable(params)
        return {}

    def _own_provider(self, field: str) -> None:
        """Refuse to change the provider of a process several connections share."""
        if self.shared:
            raise BadRequest(
                field,
                "this agent serves several connections (acp-fsm serve --listen): its provider "
                "is the server's own environment and login, not set per connection",
            )

    async def on_session_set_title(
        self, params: acp.SetSessionTitleRequest
    ) -> acp.SetSessionTitleResponse:
        return {"title": await self.sessions.set_title(params["sessionId"], params["title"])}

    async def on_session_list(self, params: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        return await self.sessions.list(params.get("cwd"), params.get("cursor"))


async def _answered(
    work: Coroutine[Any, Any, Any], session_id: str | None, method: str, dialect: Dialect
) -> Any:
    """The handler's result as the connection's version says it, or the JSON-RPC error of
    the domain error it raised."""
    if session_id is not None:
        structlog.contextvars.bind_contextvars(session_id=session_id)
    try:
        return dialect.result(method, await work)
    except DomainError as error:
        raise answer(error) from None
