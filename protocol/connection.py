"""The JSON-RPC connection: inbound dispatch, one writer, and our requests to the peer.

Reading is push-driven (`feed`), synchronous and never awaits: each line is decoded, classified
and either answered at once (errors), handed to the dispatcher in a task of its own (requests),
or handled inline (notifications such as `session/cancel`). A later line is therefore processed
while an earlier request is still running, and responses go out in completion order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, cast

import structlog

from acp_fsm.protocol import jsonrpc
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.codec import decode, encode
from acp_fsm.protocol.dispatcher import Dispatcher, OutboundKind
from acp_fsm.protocol.errors import (
    InternalError,
    InvalidRequest,
    RpcError,
)
from acp_fsm.protocol.framing import MAX_LINE_BYTES, LineFramer, Overlong
from acp_fsm.protocol.inflight import InFlight
from acp_fsm.protocol.jsonrpc import Invalid, Notification, Request, Response
from acp_fsm.protocol.outbound import Outbound
from acp_fsm.protocol.preview import preview
from acp_fsm.protocol.template import sender
from acp_fsm.schemas.plain import ANY_STRING

log = structlog.get_logger("protocol")

DEBUG = 10  # logging.DEBUG: message bodies are logged (abbreviated) only at this level


class Connection:
    """One JSON-RPC peer over a byte stream."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        write: Callable[[bytes], None],
        *,
        drain: Callable[[], Awaitable[None]] | None = None,
        congested: Callable[[], bool] | None = None,
        scrub: Callable[[bytes], bytes] | None = None,
        max_line: int = MAX_LINE_BYTES,
        strict_outbound: bool = False,
    ) -> None:
        self._dispatcher = dispatcher
        self._write_bytes = write
        self._scrub = scrub  # applied to every line written, but requests sent verbatim
        self._drain = drain
        self._congested = congested
        self._framer = LineFramer(max_line)
        self._max_line = max_line
        self._strict = strict_outbound
        self._inflight = InFlight()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = asyncio.get_running_loop().create_future()
        self._outbound = Outbound(
            lambda message, verbatim: self._send(message, verbatim=verbatim),
            dispatcher.accept_response,
            self.closed.done,
        )
        self.exit_code = 0

    def __repr__(self) -> str:
        state = "closed" if self.closed.done() else "open"
        return f"<Connection {state} inflight={len(self._inflight)} pending={len(self._outbound)}>"

    # ------------------------------------------------------------------ input

    def feed(self, data: bytes) -> None:
        """Process a chunk of input bytes."""
        for line in self._framer.feed(data):
            self._process_line(line)

    def feed_eof(self) -> None:
        """The peer closed our input: process a final unterminated line, then close."""
        if self.closed.done():
            return
        last = self._framer.close()
        if last is not None:
            self._process_line(last)
        self._close("input closed")

    def output_lost(self) -> None:
        """The peer stopped reading our output: nothing more can be delivered."""
        self._close("output closed")

    def terminate(self, why: str) -> None:
        """Close on request of the process's owner (a signal), like input EOF."""
        self._close(f"terminated ({why})")

    def _process_line(self, line: bytes | Overlong) -> None:
        if isinstance(line, Overlong):
            log.warning("line_too_long", size=line.size, limit=self._max_line)
            self._send(
                jsonrpc.failure(
                    None,
                    InvalidRequest(
                        f"Invalid Request: line exceeds {self._max_line} bytes; skipped"
                    ),
                )
            )
            return
        try:
            obj = decode(line)
        except RpcError as exc:
            log.warning("parse_error", reason=exc.message)
            self._send(jsonrpc.failure(None, exc))
            return
        if log.is_enabled_for(DEBUG):
            log.debug("received", message=preview(obj))
        if type(obj) is list:
            self._process_batch(obj)
            return
        answer = self._process(obj, alone=True)
        if answer is not None:
            answer.add_done_callback(self._send_result_of)

    def _process_batch(self, items: list[Any]) -> None:
        if not items:
            log.warning("invalid_message", reason="empty batch")
            self._send(jsonrpc.failure(None, InvalidRequest("Invalid Request: empty batch")))
            return
        answers = [answer for item in items if (answer := self._process(item)) is not None]
        if answers:
            self._spawn(self._send_batch(answers))

    async def _send_batch(self, answers: Sequence[asyncio.Future[dict[str, Any] | None]]) -> None:
        responses = [r for r in await asyncio.gather(*answers) if r is not None]
        if responses:
            self._send(responses)
        for answer in answers:
            self._inflight.written(answer)

    def _process(
        self, obj: Any, *, alone: bool = False
    ) -> asyncio.Future[dict[str, Any] | None] | None:
        """Handle one message; return a future of its response when it needs one. A request
        `alone` (not in a batch) writes its own response when it is served (the future then
        gives None), in the same step as its last work."""
        message = jsonrpc.classify(obj)
        if isinstance(message, Request):
            return self._start_request(message, alone)
        if isinstance(message, Notification):
            self._notify(message)
        elif isinstance(message, Response):
            self._outbound.resolve(message)
        else:
            return _ready(self._invalid(message))
        return None

    def _invalid(self, message: Invalid) -> dict[str, Any]:
        log.warning("invalid_message", reason=message.error.message)
        self._outbound.malformed(message.answers, message.error.message)
        return jsonrpc.failure(message.id, message.error)

    def _start_request(
        self, request: Request, alone: bool
    ) -> asyncio.Future[dict[str, Any] | None]:
        # Whether it is admitted (before initialize, while closing, ...) is the dispatcher's
        # decision: its handshake machine is the gate, not a flag of ours.
        try:
            work = self._dispatcher.dispatch(request)
        except RpcError as exc:
            log.info(
                "request_rejected",
                method=request.method,
                id=request.id,
                code=exc.code,
                reason=exc.message,
            )
            return _ready(jsonrpc.failure(request.id, exc))
        except Exception:
            # A bug in a handler's synchronous part must not take the reader down with it.
            log.exception("dispatch_failed", method=request.method, id=request.id)
            return _ready(
                jsonrpc.failure(
                    request.id, InternalError(f"Internal error while handling {request.method}")
                )
            )
        task = self._spawn(self._serve(request, work, alone))
        return self._inflight.track(request, task, work)

    async def _serve(
        self, request: Request, work: Coroutine[Any, Any, Any] | None, alone: bool
    ) -> dict[str, Any] | None:
        response = await self._outcome(request, work)
        if not alone:
            return response
        # Written in this task's last step, not by callbacks one and two loop turns later (a
        # cancelled prompt's answer is the figure: bench/cancel.py).
        self._send(response)
        self._inflight.written_here()
        return None

    async def _outcome(
        self, request: Request, work: Coroutine[Any, Any, Any] | None
    ) -> dict[str, Any]:
        structlog.contextvars.bind_contextvars(method=request.method, request_id=request.id)
        try:
            result = await work if work is not None else None
        except RpcError as exc:
            return jsonrpc.failure(request.id, exc)
        except asyncio.CancelledError:
            log.info("request_cancelled")
            raise
        except Exception:
            log.exception("handler_failed")
            return jsonrpc.failure(
                request.id, InternalError(f"Internal error while handling {request.method}")
            )
        violation = self._dispatcher.check_outbound(request.method, "result", result)
        if violation is not None:
            self._outbound_violation(request.method, "result", violation)
            return jsonrpc.failure(
                request.id,
                InternalError(f"Internal error: {request.method} produced an invalid result"),
            )
        return jsonrpc.success(request.id, result)

    def _notify(self, note: Notification) -> None:
        if note.method == jsonrpc.CANCEL_REQUEST:
            self._inflight.cancel(note.params, self._dispatcher.cancel_request)
            return
        try:
            work = self._dispatcher.dispatch(note)
        except RpcError as exc:
            # JSON-RPC: a notification is never answered, not even with an error.
            log.info("notification_dropped", method=note.method, reason=exc.message)
            return
        except Exception:
            log.exception("notification_failed", method=note.method)
            return
        if work is not None:
            self._spawn(self._run_notification(note.method, work))

    async def _run_notification(self, method: str, work: Coroutine[Any, Any, Any]) -> None:
        structlog.contextvars.bind_contextvars(method=method)
        try:
            await work
        except Exception:
            log.exception("notification_handler_failed")

    # ----------------------------------------------------------------- output

    def _send(self, message: Any, *, verbatim: bool = False) -> None:
        data = encode(message)
        if self._scrub is not None and not verbatim:
            data = self._scrub(data)
        self._write_bytes(data)

    def _send_result_of(self, answer: asyncio.Future[dict[str, Any] | None]) -> None:
        response = answer.result()
        if response is not None:
            self._send(response)
        self._inflight.written(answer)

    def handling_request(self) -> bool:
        """Whether the calling task handles a request (`after_response` applies)."""
        return self._inflight.handling_request()

    def after_response(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the response to the request being handled (the calling task's)
        is written: what follows an answer (ACP's session-setup updates after `session/new`)
        is never sent before it."""
        self._inflight.after_response(callback)

    @property
    def congested(self) -> bool:
        """The peer reads slower than we write: producers should `drain` before going on."""
        return self._congested is not None and self._congested()

    async def drain(self) -> None:
        """Wait while the output is congested (back-pressure for fast producers)."""
        if self._drain is not None:
            await self._drain()

    def notify(self, method: str, params: Any) -> bool:
        """Send a notification; returns False (and sends nothing) when `params` is invalid."""
        violation = self._dispatcher.check_outbound(method, "notification", params)
        if violation is not None:
            self._outbound_violation(method, "notification", violation)
            return False
        self._send(jsonrpc.notification(method, params))
        return True

    def notifier(self, method: str, params: Callable[[str], Any]) -> Callable[[str], bool]:
        """A sender of the `method` notifications whose params `params(text)` builds, for one
        that is sent for every streamed delta: like `notify(method, params(text))`, and the
        same bytes, but the template `params(ANY_STRING)` is validated once (valid whatever
        the text: `Dispatcher.check_template`) and encoded once, so that a notification costs
        the encoding of its text and the scrub of its line. A template that cannot be shown
        valid so, and a text that orjson cannot encode (a lone surrogate), go by `notify`."""

        def each(text: str) -> bool:
            return self.notify(method, params(text))

        template = jsonrpc.notification(method, params(cast(str, ANY_STRING)))
        if not self._dispatcher.check_template(method, "notification", template["params"]):
            return each
        return sender(template, self._write_bytes, self._scrub, each)

    def request(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None = None,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> asyncio.Future[Any]:
        """Send a request to the peer now; the future gives its result.

        The future fails with `RemoteError` (the peer answered with an error), `InvalidResult`
        (its result does not match the method's schema), `OutboundTimeout`,
        `OutboundCancelled` (the token fired) or `ConnectionClosed`. On timeout, on the
        token, or when the future (or the task awaiting it) is cancelled, the request is
        forgotten and the peer is sent `$/cancel_request`.

        The request is written before this returns, so it precedes anything written later,
        a prompt's answer included. Whoever does not await the future must still retrieve its
        outcome (a done callback), or asyncio reports an unretrieved exception. `verbatim`
        skips the scrub (content the peer must get exactly, such as a file to write).
        """
        violation = self._dispatcher.check_outbound(method, "request", params)
        if violation is not None:
            self._outbound_violation(method, "request", violation)
            raise InternalError(f"Internal error: invalid {method} request")
        return self._outbound.start(
            method, params, token=token, timeout_ms=timeout_ms, verbatim=verbatim
        )

    def audit_sent(self, method: str, kind: OutboundKind, payload: Any) -> None:
        """Check a message written before this connection existed (the startup path's answer to
        `initialize`) as if it had been sent here: a violation is logged, fatal when strict."""
        violation = self._dispatcher.check_outbound(method, kind, payload)
        if violation is not None:
            self._outbound_violation(method, kind, violation)

    def _outbound_violation(self, method: str, kind: str, violation: str) -> None:
        log.error("outbound_schema_violation", method=method, kind=kind, reason=violation)
        if self._strict:
            self.exit_code = 70
            self._close("outbound schema violation (strict mode)")

    # -------------------------------------------------------------- lifecycle

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _close(self, reason: str) -> None:
        if self.closed.done():
            return
        log.info("connection_closing", reason=reason)
        self._dispatcher.closing(reason)
        self._outbound.close()
        self.closed.set_result(reason)

    async def drain_tasks(self, grace: float) -> None:
        """Give running handlers `grace` seconds to finish, then cancel the rest and give
        them as long again to unwind."""
        if self._tasks:
            _, late = await asyncio.wait(set(self._tasks), timeout=grace)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=grace)


def _ready(value: dict[str, Any] | None) -> asyncio.Future[dict[str, Any] | None]:
    future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future
