"""The JSON-RPC connection: inbound dispatch, one writer, and our requests to the peer.

Reading is push-driven (`feed`), synchronous and never awaits: each line is decoded, classified
and either answered at once (errors), handed to the dispatcher in a task of its own (requests),
or handled inline (notifications such as `session/cancel`). A later line is therefore processed
while an earlier request is still running, and responses go out in completion order.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, Literal, Protocol, cast

import orjson
import structlog

from acp_fsm.protocol import jsonrpc
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.codec import decode, encode
from acp_fsm.protocol.errors import (
    ConnectionClosed,
    InternalError,
    InvalidRequest,
    InvalidResult,
    OutboundCancelled,
    OutboundTimeout,
    RemoteError,
    RequestCancelled,
    RpcError,
)
from acp_fsm.protocol.framing import MAX_LINE_BYTES, LineFramer, Overlong
from acp_fsm.protocol.jsonrpc import Id, Invalid, Notification, Request, Response
from acp_fsm.protocol.preview import preview
from acp_fsm.schemas.plain import ANY_STRING

log = structlog.get_logger("protocol")

CANCEL_REQUEST = "$/cancel_request"
DEBUG = 10  # logging.DEBUG: message bodies are logged (abbreviated) only at this level
OutboundKind = Literal["request", "notification", "result"]


class Dispatcher(Protocol):
    """What the connection needs from the layer that knows the methods."""

    def dispatch(self, message: Request | Notification) -> Coroutine[Any, Any, Any] | None:
        """Gate and validate synchronously (raising `RpcError`), then return the coroutine that
        does the work, or None when nothing is left to do."""

    def check_outbound(self, method: str, kind: OutboundKind, payload: Any) -> str | None:
        """Return why `payload` may not be sent for `method`, or None when it may."""

    def check_template(self, method: str, kind: OutboundKind, payload: Any) -> bool:
        """True only when `payload` may be sent for `method` whatever string stands in the
        place of its `ANY_STRING` (`schemas.plain`); False when that is not sure."""

    def accept_response(self, method: str, result: Any) -> Any:
        """The peer's `result` to our `method` request as the waiting caller receives it;
        raises `InvalidResult` when it is not a valid result of `method`."""

    def cancel_request(self, request: Request) -> bool:
        """The peer sent `$/cancel_request` for `request`: True when the method stops itself
        (and still answers), False to have its task cancelled and answered with -32800."""

    def closing(self, reason: str) -> None:
        """The connection is closing (input ended, output lost, or the process was told to
        stop): stop admitting work and cancel what runs. Called before requests still awaiting
        the peer fail, so the work that waits on them sees its cancellation first."""


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
        self._inflight: dict[Id, asyncio.Task[Any]] = {}
        self._requests: dict[asyncio.Task[Any], Request] = {}
        self._peer_cancelled: set[asyncio.Task[Any]] = set()
        # What to do once a request's response is written (`after_response`), by its task
        # while it runs, then by the future of its response.
        self._afterwards: dict[asyncio.Future[Any], list[Callable[[], None]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pending: dict[int, tuple[asyncio.Future[Any], str]] = {}
        self._ids = itertools.count(1)
        self.closed = asyncio.get_running_loop().create_future()
        self.exit_code = 0

    def __repr__(self) -> str:
        state = "closed" if self.closed.done() else "open"
        return f"<Connection {state} inflight={len(self._inflight)} pending={len(self._pending)}>"

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
            self._run_afterwards(answer)

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
            self._resolve(message)
        else:
            return _ready(self._invalid(message))
        return None

    def _invalid(self, message: Invalid) -> dict[str, Any]:
        log.warning("invalid_message", reason=message.error.message)
        entry = self._pending.pop(message.answers, None) if type(message.answers) is int else None
        if entry is not None and not entry[0].done():  # our finding, not the peer's error
            entry[0].set_exception(
                InvalidResult(
                    f"the answer to {entry[1]} is not a valid JSON-RPC response: "
                    f"{message.error.message}"
                )
            )
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
        answer: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        task = self._spawn(self._serve(request, work, alone))
        if request.id in self._inflight:
            log.warning("duplicate_request_id", id=request.id)
        self._inflight[request.id] = task
        self._requests[task] = request

        def finished(task: asyncio.Task[dict[str, Any] | None]) -> None:
            self._requests.pop(task, None)
            if (afterwards := self._afterwards.pop(task, None)) is not None:
                self._afterwards[answer] = afterwards
            if self._inflight.get(request.id) is task:
                del self._inflight[request.id]
            if task.cancelled():
                if work is not None:
                    work.close()  # never started if the task was cancelled before it ran
                # Peer cancellation is answered even when the task never got to run;
                # a shutdown cancellation is not answered.
                peer = task in self._peer_cancelled
                self._peer_cancelled.discard(task)
                answer.set_result(jsonrpc.failure(request.id, RequestCancelled()) if peer else None)
            else:
                answer.set_result(task.result())

        task.add_done_callback(finished)
        return answer

    async def _serve(
        self, request: Request, work: Coroutine[Any, Any, Any] | None, alone: bool
    ) -> dict[str, Any] | None:
        response = await self._outcome(request, work)
        if not alone:
            return response
        # Written in this task's last step, not by callbacks one and two loop turns later (a
        # cancelled prompt's answer is the figure: bench/cancel.py).
        self._send(response)
        task = asyncio.current_task()
        assert task is not None
        _run(self._afterwards.pop(task, ()))
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
        if note.method == CANCEL_REQUEST:
            self._cancel_inbound(note.params)
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

    def _cancel_inbound(self, params: Any) -> None:
        request_id = params.get("requestId") if type(params) is dict else None
        task = self._inflight.get(request_id) if jsonrpc.is_valid_id(request_id) else None
        if task is None:
            log.debug("cancel_request_unknown", request_id=request_id)
            return
        request = self._requests.get(task)
        if request is not None and self._dispatcher.cancel_request(request):
            return  # the method winds down on its own terms and answers normally
        self._peer_cancelled.add(task)
        task.cancel()

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
        self._run_afterwards(answer)

    def handling_request(self) -> bool:
        """Whether the calling task handles a request (`after_response` applies)."""
        return asyncio.current_task() in self._requests

    def after_response(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the response to the request being handled (the calling task's)
        is written: what follows an answer (ACP's session-setup updates after `session/new`)
        is never sent before it."""
        task = asyncio.current_task()
        if task is None or task not in self._requests:
            raise RuntimeError("after_response is for the task handling a request")
        self._afterwards.setdefault(task, []).append(callback)

    def _run_afterwards(self, answer: asyncio.Future[Any]) -> None:
        callbacks = self._afterwards.pop(answer, ())
        if answer.result() is not None:  # never answered (shutdown): nothing follows either
            _run(callbacks)

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
        try:
            encoded = orjson.dumps(template, default=_placeholder, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            return each
        head, hole, tail = encoded.partition(_HOLE)
        if not hole or _HOLE in tail:
            return each
        write, scrub = self._write_bytes, self._scrub

        def send(text: str) -> bool:
            try:
                line = head + orjson.dumps(text) + tail
            except TypeError:
                return each(text)
            write(line if scrub is None else scrub(line))
            return True

        return send

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
        if self.closed.done():
            raise ConnectionClosed(f"connection closed before {method} was sent")
        if token is not None and token.is_cancelled:
            raise OutboundCancelled(f"{method} cancelled before it was sent")
        loop = asyncio.get_running_loop()
        request_id = next(self._ids)
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request_id] = (future, method)
        self._send(jsonrpc.request(request_id, method, params), verbatim=verbatim)

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
            if self._pending.pop(request_id, None) is not None and not self.closed.done():
                log.info("outbound_abandoned", method=method, id=request_id)
                self._send(jsonrpc.notification(CANCEL_REQUEST, {"requestId": request_id}))

        future.add_done_callback(settle)
        return future

    def _resolve(self, response: Response) -> None:
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
            result = self._dispatcher.accept_response(method, response.result)
        except InvalidResult as exc:
            log.warning("peer_result_invalid", method=method, reason=str(exc))
            future.set_exception(exc)
            return
        future.set_result(result)

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
        for future, method in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"connection closed while awaiting {method}"))
        self._pending.clear()
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


def _run(callbacks: Iterable[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("after_response_failed")


_PLACEHOLDER = "\0the text of a notifier\0"  # stands for ANY_STRING while a template is encoded
_HOLE = orjson.dumps(_PLACEHOLDER)


def _placeholder(value: object) -> str:
    if value is ANY_STRING:
        return _PLACEHOLDER
    raise TypeError(f"cannot encode {type(value).__name__}")


def _ready(value: dict[str, Any] | None) -> asyncio.Future[dict[str, Any] | None]:
    future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future
