"""Our requests to the peer: their ids, the futures awaiting the answers, and what settles them.

A request is settled by the peer's answer, by its timeout, by its caller's cancellation token,
or by the connection's close; whichever comes first wins, and one that gives up on a request
still written tells the peer so (`$/cancel_request`), since the peer may be working on it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import structlog

from acp_fsm.protocol import jsonrpc
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.errors import (
    ConnectionClosed,
    InvalidResult,
    OutboundCancelled,
    OutboundTimeout,
    RemoteError,
)
from acp_fsm.protocol.jsonrpc import Id, Response

log = structlog.get_logger("protocol")


class Outbound:
    """The requests we sent that await the peer's answer."""

    def __init__(
        self,
        send: Callable[[Any, bool], None],
        accept: Callable[[str, Any], Any],
        closed: Callable[[], bool],
    ) -> None:
        self._send = send  # (message, verbatim): the connection's one writer
        self._accept = accept  # the peer's result as the caller receives it, or InvalidResult
        self._closed = closed
        self._pending: dict[int, tuple[asyncio.Future[Any], str]] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._pending)

    def start(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None,
        timeout_ms: int | None,
        verbatim: bool,
    ) -> asyncio.Future[Any]:
        """Write the request now and return the future of its result (`Connection.request`)."""
        if self._closed():
            raise ConnectionClosed(f"connection closed before {method} was sent")
        if token is not None and token.is_cancelled:
            raise OutboundCancelled(f"{method} cancelled before it was sent")
        loop = asyncio.get_running_loop()
        request_id = next(self._ids)
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request_id] = (future, method)
        self._send(jsonrpc.request(request_id, method, params), verbatim)

        def give_up(error: Exception) -> None:
            if not future.done():
                future.set_exception(error)

        timer = None
        if timeout_ms:
            timer = loop.call_later(
                timeout_ms / 1000,
                give_up,
                OutboundTimeout(f"{method} got no response within {timeout_ms} ms"),
            )
        remove = (
            token.on_cancel(lambda: give_up(OutboundCancelled(f"{method} cancelled")))
            if token is not None
            else None
        )

        def settle(_: asyncio.Future[Any]) -> None:
            if timer is not None:
                timer.cancel()
            if remove is not None:
                remove()
            if self._pending.pop(request_id, None) is not None and not self._closed():
                log.info("outbound_abandoned", method=method, id=request_id)
                message = jsonrpc.notification(jsonrpc.CANCEL_REQUEST, {"requestId": request_id})
                self._send(message, False)

        future.add_done_callback(settle)
        return future

    def resolve(self, response: Response) -> None:
        """The peer answered: settle the request it answers, if we still await it."""
        entry = self._pending.pop(response.id, None) if type(response.id) is int else None
        if entry is None:
            log.warning("response_dropped", id=response.id, reason="no pending request")
            return
        future, method = entry
        if future.done():
            return
        if response.error is not None:
            error = response.error
            future.set_exception(
                RemoteError(error["code"], error["message"], error.get("data"), method=method)
            )
            return
        try:
            result = self._accept(method, response.result)
        except InvalidResult as exc:
            log.warning("peer_result_invalid", method=method, reason=str(exc))
            future.set_exception(exc)
            return
        future.set_result(result)

    def malformed(self, answers: Id | None, reason: str) -> None:
        """The peer sent something that is not a valid response, to our request `answers`
        when that id is one of ours: the request fails with our finding, not the peer's error."""
        entry = self._pending.pop(answers, None) if type(answers) is int else None
        if entry is not None and not entry[0].done():
            future, method = entry
            future.set_exception(
                InvalidResult(f"the answer to {method} is not a valid JSON-RPC response: {reason}")
            )

    def close(self) -> None:
        """The connection closed: every request still awaiting an answer fails."""
        for future, method in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"connection closed while awaiting {method}"))
        self._pending.clear()
