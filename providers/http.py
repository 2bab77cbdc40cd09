"""The one aiohttp ClientSession of the process, and retry timing.

The session is created on first use (never before `initialize` is answered: aiohttp is a heavy
import) and closed at exit. Timeouts: no total limit (a model may stream for many minutes), a
bound on connecting and a bound on silence between reads.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aiohttp

    from acp_fsm.providers.config import ProviderConfig

_session: aiohttp.ClientSession | None = None
_body: type[aiohttp.payload.BytesPayload] | None = None  # see `body_payload`

# Statuses worth retrying (both official SDKs): timeout, conflict, rate limit, server errors.
RETRYABLE_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
# A server-requested wait longer than this is not honoured as is (we cap it).
MAX_RETRY_AFTER_S = 60.0


def client_session() -> aiohttp.ClientSession:
    """The shared session (created lazily, on the running loop)."""
    global _session
    if _session is None or _session.closed:
        import aiohttp

        _session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None),
            connector=aiohttp.TCPConnector(limit=32),
        )
    return _session


async def close_client_session() -> None:
    global _session
    session, _session = _session, None
    if session is not None and not session.closed:
        await session.close()


def request_timeout(config: ProviderConfig) -> aiohttp.ClientTimeout:
    import aiohttp

    return aiohttp.ClientTimeout(
        total=None, sock_connect=config.connect_timeout_s, sock_read=config.read_timeout_s
    )


def retry_delay(attempt: int, config: ProviderConfig, headers: Mapping[str, str] | None) -> float:
    """Seconds to wait before retry number `attempt` (0-based): the server's `retry-after-ms`,
    then `retry-after` (seconds), capped; else exponential back-off with jitter."""
    if headers:
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            raw = headers.get(name)
            if raw is None:
                continue
            try:
                wanted = float(raw) * scale
            except ValueError:
                continue  # an HTTP date: fall back to back-off
            if wanted >= 0:
                return min(wanted, MAX_RETRY_AFTER_S)
    delay: float = min(config.retry_base_s * 2**attempt, config.retry_max_s)
    return delay * (1 - 0.25 * random.random())


def body_payload(body: bytes) -> aiohttp.payload.BytesPayload:
    """A request body as aiohttp sends it, but written after the headers instead of copied
    together with them into one buffer first (what aiohttp does on Python before 3.12.9): a
    long session's body is megabytes, and that copy was a third of the agent's cost of a
    model call (bench/long_session.py). The bytes on the wire are the same."""
    global _body
    if _body is None:  # made at the first model call (aiohttp is imported late)
        _body = _body_class()
    return _body(body, content_type="application/json")


def _body_class() -> type[aiohttp.payload.BytesPayload]:
    import aiohttp

    class Body(aiohttp.payload.BytesPayload):
        async def write_with_length(
            self, writer: aiohttp.abc.AbstractStreamWriter, content_length: int | None
        ) -> None:
            view = memoryview(self._value)
            if content_length is not None:
                view = view[:content_length]
            await writer.write(view[:1])  # coalesced with the headers: one byte
            await writer.write(view[1:])  # the rest as it is, no copy

    return Body
