"""ModelStream: one model call as an async iterator of neutral events (phase 1 of the
cooperative cancel: docs/cancellation.md).

The body is read chunk by chunk and parsed as it arrives. The turn's CancellationToken is
watched through a callback, not a task per read: when it fires, the response's read is failed
at once, so the pending read raises and the stream ends with `StreamCancelled` carrying what was
streamed; the response is closed (its connection never returns to the pool) then, or, when the
caller gave `close_later`, when that says (a turn: once the prompt is answered, so that closing
the socket is not on the way to the answer).
Failures before any event reached the caller are retried with back-off (connection errors,
timeouts, retryable statuses, a retryable error event); after that they are raised.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.providers.base import StreamParser, WireFormat
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.errors import ProviderError, StreamCancelled, empty_stream, unserved
from acp_fsm.providers.http import (
    body_payload,
    client_session,
    request_timeout,
    retry_delay,
)
from acp_fsm.providers.sse import SseDecoder, SseError, SseEvent
from acp_fsm.providers.types import AssistantMessage, Event, ModelRequest, Usage

if TYPE_CHECKING:
    import aiohttp

log = structlog.get_logger("providers")


class _TokenFired(Exception):
    """Set on the response body to wake a pending read when the token fires."""


class ModelStream:
    """Events of one model call. Always `aclose()` it (or use `async with`)."""

    def __init__(
        self,
        wire: WireFormat,
        request: ModelRequest,
        config: ProviderConfig,
        token: CancellationToken,
        scrub: Callable[[bytes], bytes] | None = None,
        *,
        close_later: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        self._wire = wire
        self._close_later = close_later  # how a response cut by a cancel is closed
        self._request = request
        self._config = config
        self._token = token
        self._scrub = scrub  # filters the request body (secrets never reach the model)
        self._response: aiohttp.ClientResponse | None = None
        self._parser: StreamParser | None = None
        self._decoder = SseDecoder()
        self._seen = 0
        self._events: deque[Event] = deque()
        self._attempt = 0
        self._yielded = False
        self._error: ProviderError | None = None
        self._finished = False
        self._closed = False
        self._remove_watch = token.on_cancel(self._abort)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "finished" if self._finished else "open"
        return (
            f"<ModelStream {self._wire.name} {self._request.model} {state} "
            f"attempt={self._attempt} yielded={self._yielded}>"
        )

    async def __aenter__(self) -> ModelStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __aiter__(self) -> ModelStream:
        return self

    @property
    def partial(self) -> AssistantMessage:
        """What has been streamed so far (complete tool calls only)."""
        if self._parser is None:
            return AssistantMessage(())
        return self._parser.builder.message()

    async def __anext__(self) -> Event:
        if self._closed:
            raise StopAsyncIteration
        try:
            while not self._events:
                if self._error is not None:
                    raise self._error
                if self._finished:
                    raise StopAsyncIteration
                await self._fill()
        except BaseException:
            await self.aclose()  # a stream closes itself on any exit
            raise
        event = self._events.popleft()
        if not isinstance(event, Usage):
            self._yielded = True  # output reached the caller: no more retries
        return event

    async def aclose(self) -> None:
        """Release the response and stop watching the token (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._remove_watch()
        self._drop_response()

    # -------------------------------------------------------------- internals

    def _abort(self) -> None:
        response = self._response
        if response is not None:
            response.content.set_exception(_TokenFired())
            if self._close_later is None:
                response.close()

    def _drop_response(self) -> None:
        response, self._response = self._response, None
        if response is None:
            return
        if self._close_later is not None and self._token.is_cancelled:
            self._close_later(response.close)  # read no more meanwhile: its body has failed
        else:
            response.close()  # never back to the pool mid-body

    def _scrubbed(self, events: list[SseEvent]) -> list[SseEvent]:
        """The events with the scrub applied to their data, before any of it is parsed or cut
        (an error event may quote the key). The events of a chunk are looked at together, in
        one scrub of their data joined: what it leaves as it is holds no secret in any of
        them (the usual case, the events as they came); else each is scrubbed alone."""
        scrub = self._scrub
        if scrub is None or not events:
            return events
        joined = "\n".join([sse.data for sse in events]).encode("utf-8", "surrogatepass")
        if scrub(joined) is joined:
            return events
        return [self._scrubbed_one(sse, scrub) for sse in events]

    @staticmethod
    def _scrubbed_one(sse: SseEvent, scrub: Callable[[bytes], bytes]) -> SseEvent:
        data = sse.data.encode("utf-8", "surrogatepass")
        scrubbed = scrub(data)
        if scrubbed is data:
            return sse
        return sse._replace(data=scrubbed.decode("utf-8", "surrogatepass"))

    def _cancelled(self) -> StreamCancelled:
        return StreamCancelled(self.partial, self._token.reason or "cancelled")

    async def _fill(self) -> None:
        if self._token.is_cancelled:
            raise self._cancelled()
        events: list[Event] = []
        try:
            if self._response is None:
                await self._open()
            assert self._response is not None and self._parser is not None
            chunk = await self._response.content.readany()
            parse = self._parser.feed
            if chunk:
                received = self._scrubbed(self._decoder.feed(chunk))
                self._seen += len(received)
                for sse in received:
                    events.extend(parse(sse))
            else:
                received = self._scrubbed(self._decoder.close())
                self._seen += len(received)
                for sse in received:
                    events.extend(parse(sse))
                if not self._seen:
                    raise empty_stream(self._wire.name, retryable=self._config.official)
                events.extend(self._parser.end())
                self._finished = True
        except _TokenFired:
            raise self._cancelled() from None
        except Exception as exc:
            if self._token.is_cancelled:
                raise self._cancelled() from None
            error = exc if isinstance(exc, ProviderError) else self._translate(exc)
            if self._may_retry(error):
                await self._back_off(error, None)
                return
            self._drop_response()
            if not events:
                raise error from (None if exc is error else exc)
            self._error = error  # deliver what was parsed before it first
        if self._finished:
            self._drop_response()
        self._events.extend(events)

    def _may_retry(self, error: ProviderError) -> bool:
        """Retry only what may be transient, only before output reached the caller."""
        return error.retryable and not self._yielded and self._attempt <= self._config.max_retries

    async def _open(self) -> None:
        """POST the request; retry what may be retried; leave a 200 response in place."""
        while True:
            # built again for each attempt: a refusal may have taught the wire to ask otherwise
            url, headers, body = self._wire.build(self._request, self._config, self._scrub)
            self._attempt += 1
            self._parser = self._wire.parser()
            self._decoder = SseDecoder()
            self._seen = 0  # events of this attempt
            try:
                response = await self._token.race(
                    client_session().post(
                        url,
                        data=body_payload(body),
                        headers=headers,
                        timeout=request_timeout(self._config),
                    )
                )
            except Cancelled:
                raise self._cancelled() from None
            except Exception as exc:
                error = self._translate(exc)
                if not self._may_retry(error):
                    raise error from exc
                await self._back_off(error, None)
                continue
            if self._token.is_cancelled:  # fired while the headers were on their way
                response.close()
                raise self._cancelled()
            if response.status == 200 and _is_event_stream(response):
                self._response = response
                log.debug("model_stream_open", provider=self._wire.name, attempt=self._attempt)
                return
            try:
                payload = await self._token.race(response.read())
            except Cancelled:
                response.close()
                raise self._cancelled() from None
            except Exception:
                payload = b""
            finally:
                response.release()
            if self._scrub is not None:  # an error may quote the key (proxies do), then be cut
                payload = self._scrub(payload)
            if self._token.is_cancelled:
                raise self._cancelled()
            if response.status == 200:
                raise ProviderError(
                    self._wire.name,
                    "the server answered without streaming "
                    f"(content-type {response.content_type!r}): "
                    f"{payload[:200].decode('utf-8', 'replace')}",
                    status=200,
                    error_type="not_streaming",
                )
            error = self._wire.parse_error(response.status, payload)
            if response.status == 404 and not self._config.official:  # an API it lacks?
                error = unserved(error, url, self._request.model, self._config.base_url)
            if not self._may_retry(error):
                raise error
            await self._back_off(error, response.headers)

    async def _back_off(self, error: ProviderError, headers: Any) -> None:
        self._drop_response()
        self._events.clear()
        self._parser = None  # nothing of the failed attempt reached the caller
        delay = retry_delay(self._attempt - 1, self._config, headers)
        log.warning(
            "model_call_retry",
            provider=self._wire.name,
            attempt=self._attempt,
            delay_s=round(delay, 3),
            error=str(error),
        )
        try:
            await self._token.race(asyncio.sleep(delay))
        except Cancelled:
            raise self._cancelled() from None

    def _translate(self, exc: BaseException) -> ProviderError:
        """A transport failure as a ProviderError (retryable: it may be transient)."""
        import aiohttp

        name = self._wire.name
        if isinstance(exc, SseError):
            return ProviderError(name, str(exc))
        if isinstance(exc, aiohttp.ServerTimeoutError | TimeoutError):
            return ProviderError(
                name,
                f"timed out: {exc or 'no data within the read timeout'}",
                error_type="timeout",
                retryable=True,
            )
        if isinstance(exc, aiohttp.ClientError):
            return ProviderError(
                name,
                f"connection failed: {type(exc).__name__}: {exc}",
                error_type="connection_error",
                retryable=True,
            )
        return ProviderError(name, f"unexpected failure: {type(exc).__name__}: {exc}")


def _is_event_stream(response: aiohttp.ClientResponse) -> bool:
    return response.content_type in ("text/event-stream", "application/octet-stream", "")
