"""The editor's file system and terminals, as tools see them (ACP fs/* and terminal/*).

Every call carries the session id, waits at most `client_rpc_timeout_ms`, and is released by
the turn's token (phase 2 of the cooperative cancel: a pending client request ends with
`Cancelled` and the editor is sent `$/cancel_request`). Methods are only called when the
client advertised them; tools check `can_read_files` & co. first.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from acp_fsm import env_vars, updates
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.protocol.errors import (
    OutboundCancelled,
    OutboundError,
    OutboundTimeout,
    RemoteError,
    ResourceNotFound,
)

if TYPE_CHECKING:
    from acp_fsm.initialize import ClientInfo
    from acp_fsm.questions import Answer, Question
    from acp_fsm.schemas import acp_types as acp


log = structlog.get_logger("acp.client")

NOT_FOUND_CODE = ResourceNotFound.code


def _log_cleanup(method: str) -> Callable[[asyncio.Future[Any]], None]:
    def done(future: asyncio.Future[Any]) -> None:
        if not future.cancelled() and (error := future.exception()) is not None:
            log.warning("terminal_cleanup_failed", method=method, error=str(error))

    return done


# How editors say a file does not exist: ACP's -32002 (resource not found), or in words.
_NOT_FOUND = re.compile(r"not found|no such file|does not exist|ENOENT", re.IGNORECASE)


class ClientCallError(Exception):
    """The editor could not do what was asked (its error, a timeout, or no such capability).
    `not_found`: the editor answered that the resource does not exist."""

    def __init__(self, error: OutboundError) -> None:
        super().__init__(str(error))  # each names the method and quotes the editor's words
        self.timed_out = isinstance(error, OutboundTimeout)
        self.not_found = isinstance(error, RemoteError) and (
            error.code == NOT_FOUND_CODE or bool(_NOT_FOUND.search(str(error)))
        )


class ClientChannel(Protocol):
    """The editor at the other end of the connection, as turns call it (`server.AcpServer`
    is one): what it advertised, and requests to it."""

    @property
    def client(self) -> ClientInfo | None:
        """What the editor said in `initialize` (None before it)."""

    def call_client(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None = None,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> asyncio.Future[Any]:
        """Send `method` now; the future gives its result (see `AcpServer.call_client`)."""


class Client:
    """A `ClientBridge` for one session and one turn."""

    def __init__(self, server: ClientChannel, session_id: str, token: CancellationToken) -> None:
        self._server = server
        self._session_id = session_id
        self._token = token

    @property
    def can_read_files(self) -> bool:
        return self._server.client is not None and self._server.client.can_read_files

    @property
    def can_write_files(self) -> bool:
        return self._server.client is not None and self._server.client.can_write_files

    @property
    def has_terminal(self) -> bool:
        return self._server.client is not None and self._server.client.has_terminal

    @property
    def shows_terminals(self) -> bool:
        return self._server.client is not None and self._server.client.shows_terminals

    @property
    def shows_forms(self) -> bool:
        return self._server.client is not None and self._server.client.shows_forms

    async def ask(self, question: Question, call_id: str | None, title: str) -> Answer:
        """Ask the user `question`, about tool call `call_id` when there is one: a form when
        the editor shows forms, else a permission request offering the choices (`NotAskable`
        when there are none; it shows `title`). Waits as long as a permission prompt may."""
        from acp_fsm import questions

        waits = env_vars.client_rpc_timeout_ms(env_vars.PERMISSION_METHOD)
        if self.shows_forms:
            params = questions.form_params(question, call_id)
            return questions.form_answer(
                await self.call(env_vars.ELICITATION_METHOD, params, timeout_ms=waits)
            )
        options = questions.choice_options(question)
        # A permission request is about a tool call (a question of no call gets a call of its
        # own). Its title and content are the question: clients that show only the request
        # (acpx, CodeCompanion) would show a bare "Allow tool?" otherwise. Kind `other`: the
        # question is no reasoning, and avante draws `think` as an empty "Thoughts".
        tool_call: acp.ToolCallUpdate = {
            "toolCallId": f"question_{secrets.token_hex(6)}" if call_id is None else call_id,
            "title": title,
            "kind": "other",
            "content": [updates.text_block(question.message)],
        }
        result = await self.call(
            env_vars.PERMISSION_METHOD,
            {"toolCall": tool_call, "options": options},
            timeout_ms=waits,
        )
        return questions.choice_answer(question, result)

    async def call(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> Any:
        """`method` with this session's id; `timeout_ms` None = the configured client limit."""
        params = {"sessionId": self._session_id, **params}
        try:
            return await self._server.call_client(
                method, params, token=self._token, timeout_ms=timeout_ms, verbatim=verbatim
            )
        except OutboundCancelled:
            raise Cancelled(self._token.reason or "cancelled") from None
        except OutboundError as exc:
            raise ClientCallError(exc) from exc

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        params: dict[str, Any] = {"path": path}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        result = await self.call("fs/read_text_file", params)
        return str(result["content"])

    async def write_text_file(self, path: str, content: str) -> None:
        # The file's own text, exactly: a key the user keeps in it is not ours to scrub.
        await self.call("fs/write_text_file", {"path": path, "content": content}, verbatim=True)

    async def create_terminal(
        self, command: str, args: list[str], cwd: str, output_byte_limit: int
    ) -> str:
        """Start a terminal. If the turn is cancelled before the editor answers, the request
        is left to finish: a terminal it still creates is killed and released at once
        (ACP lets the editor answer a request we gave up on with a result)."""
        params = {
            "sessionId": self._session_id,
            "command": command,
            "args": args,
            "env": [],
            "cwd": cwd,
            "outputByteLimit": output_byte_limit,
        }
        try:
            created = self._server.call_client("terminal/create", params)
        except OutboundError as exc:
            raise ClientCallError(exc) from exc
        try:
            result = await self._token.race(asyncio.shield(created))
        except (Cancelled, asyncio.CancelledError):
            created.add_done_callback(self._abandon_late_terminal)
            raise
        except OutboundError as exc:
            raise ClientCallError(exc) from exc
        return str(result["terminalId"])

    def _abandon_late_terminal(self, created: asyncio.Future[Any]) -> None:
        if created.cancelled() or created.exception() is not None:
            return
        terminal_id = str(created.result()["terminalId"])
        log.info("late_terminal_abandoned", terminal_id=terminal_id)
        self.abandon_terminal(terminal_id)

    async def terminal_output(self, terminal_id: str) -> dict[str, Any]:
        return dict(await self.call("terminal/output", {"terminalId": terminal_id}))

    async def wait_for_terminal_exit(self, terminal_id: str) -> dict[str, Any]:
        # No client-RPC limit: a command runs as long as its own timeout_ms allows, which
        # the caller enforces (and a cancel still releases the wait through the token).
        return dict(
            await self.call("terminal/wait_for_exit", {"terminalId": terminal_id}, timeout_ms=0)
        )

    async def kill_terminal(self, terminal_id: str) -> None:
        await self._cleanup("terminal/kill", terminal_id)

    async def release_terminal(self, terminal_id: str) -> None:
        await self._cleanup("terminal/release", terminal_id)

    def abandon_terminal(self, terminal_id: str) -> None:
        """Send terminal/kill and terminal/release now; their answers are only logged."""
        params = {"sessionId": self._session_id, "terminalId": terminal_id}
        for method in ("terminal/kill", "terminal/release"):
            try:
                future = self._server.call_client(method, params)
            except OutboundError as exc:
                log.warning("terminal_cleanup_failed", method=method, error=str(exc))
                continue
            future.add_done_callback(_log_cleanup(method))

    async def _cleanup(self, method: str, terminal_id: str) -> None:
        """Kill and release must reach the editor even after the token fired: they are the
        cleanup of a cancel, bounded by the client RPC timeout alone."""
        params = {"sessionId": self._session_id, "terminalId": terminal_id}
        try:
            await self._server.call_client(method, params)
        except OutboundError as exc:
            raise ClientCallError(exc) from exc
