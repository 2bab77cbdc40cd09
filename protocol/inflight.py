"""The peer's requests being served: their tasks by id, the peer's cancellations of them, and
what is to follow each one's response once it is written (`Connection.after_response`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import structlog

from acp_fsm.protocol import jsonrpc
from acp_fsm.protocol.errors import RequestCancelled
from acp_fsm.protocol.jsonrpc import Id, Request

log = structlog.get_logger("protocol")

Answer = asyncio.Future[dict[str, Any] | None]


class InFlight:
    """The inbound requests whose work runs, each in a task of its own."""

    def __init__(self) -> None:
        self._by_id: dict[Id, asyncio.Task[Any]] = {}
        self._requests: dict[asyncio.Task[Any], Request] = {}
        self._peer_cancelled: set[asyncio.Task[Any]] = set()
        # What to do once a request's response is written (`after_response`), by its task
        # while it runs, then by the future of its response.
        self._afterwards: dict[asyncio.Future[Any], list[Callable[[], None]]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def track(
        self,
        request: Request,
        task: asyncio.Task[dict[str, Any] | None],
        work: Coroutine[Any, Any, Any] | None,
    ) -> Answer:
        """Follow `task` serving `request` with `work`; the future gives the response the
        task leaves to be written (None when it wrote its own, or when it was cancelled by
        a shutdown: that is not answered)."""
        answer: Answer = asyncio.get_running_loop().create_future()
        if request.id in self._by_id:
            log.warning("duplicate_request_id", id=request.id)
        self._by_id[request.id] = task
        self._requests[task] = request

        def finished(task: asyncio.Task[dict[str, Any] | None]) -> None:
            self._requests.pop(task, None)
            if (afterwards := self._afterwards.pop(task, None)) is not None:
                self._afterwards[answer] = afterwards
            if self._by_id.get(request.id) is task:
                del self._by_id[request.id]
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

    def cancel(self, params: Any, stops_itself: Callable[[Request], bool]) -> None:
        """The peer sent `$/cancel_request` with `params`: cancel the task of the request it
        names, unless that request's method `stops_itself` (and answers normally)."""
        request_id = params.get("requestId") if type(params) is dict else None
        task = self._by_id.get(request_id) if jsonrpc.is_valid_id(request_id) else None
        if task is None:
            log.debug("cancel_request_unknown", request_id=request_id)
            return
        request = self._requests.get(task)
        if request is not None and stops_itself(request):
            return
        self._peer_cancelled.add(task)
        task.cancel()

    def handling_request(self) -> bool:
        """Whether the calling task handles a request (`after_response` applies)."""
        return asyncio.current_task() in self._requests

    def after_response(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the response to the calling task's request is written."""
        task = asyncio.current_task()
        if task is None or task not in self._requests:
            raise RuntimeError("after_response is for the task handling a request")
        self._afterwards.setdefault(task, []).append(callback)

    def written_here(self) -> None:
        """The calling task wrote its request's response: what follows it runs next."""
        task = asyncio.current_task()
        assert task is not None
        _run_next(self._afterwards.pop(task, ()))

    def written(self, answer: asyncio.Future[Any]) -> None:
        """The response `answer` gave is written (or was none): what follows it runs next."""
        callbacks = self._afterwards.pop(answer, ())
        if answer.result() is not None:  # never answered (shutdown): nothing follows either
            _run_next(callbacks)


def _run_next(callbacks: Iterable[Callable[[], None]]) -> None:
    """Run `callbacks` in the loop's next step, once the response written in this one has
    left: the writer sends a step's frames in a callback queued with its first frame, so
    before these. What follows an answer (closing the socket of a stream a cancel cut,
    whose peer then wakes up to its disconnect) is never on the way to the answer."""
    if callbacks:
        asyncio.get_running_loop().call_soon(_run, callbacks)


def _run(callbacks: Iterable[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("after_response_failed")
