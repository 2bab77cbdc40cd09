"""The methods ACP v2 changed (docs/protocol-v2.md); the others are v1's own handlers
(`KEPT`), their results said as v2 says them (`dialects`).

- `session/prompt` is answered once the prompt is stored, with its message's id; the turn goes
  on, told by the session's `state_update`s (`session.foreground`). A prompt that ends before
  it is stored is answered with an error: -32800 when it was cancelled, else why it was not
  taken. The same `idempotencyKey` again is the same prompt: its id, never a second turn (a
  key whose prompt was never stored is free again: nothing was inserted with it).
- `session/resume` replays the history first when asked (`replayFrom: {"type": "start"}`, the
  only cursor v2 defines), then the state snapshot, then its answer.
- `auth/login` and `auth/logout` are v1's `authenticate` and `logout`.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, cast

from acp_fsm import limits
from acp_fsm.errors import BadRequest
from acp_fsm.protocol.errors import InvalidRequest, RequestCancelled

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.server import AcpServer, Handler
    from acp_fsm.session.core import Session

# v1's handlers that v2's methods of the same name keep.
KEPT = (
    "initialize",
    "session/new",
    "session/cancel",
    "session/list",
    "session/close",
    "session/delete",
    "session/fork",
    "session/set_config_option",
    "session/set_title",
    "_session/steering",
    "_session/checkpoints",
    "_session/rewind",
)
# How many prompts' idempotency keys a connection remembers (the newest).
KEYS_KEPT = 256


def handlers(server: AcpServer) -> dict[str, Handler]:
    """The work of v2's own methods, for `server`."""
    surface = SurfaceV2(server)
    return {
        "auth/login": server.on_authenticate,
        "auth/logout": server.on_logout,
        "session/prompt": surface.prompt,
        "session/resume": surface.resume,
    }


class SurfaceV2:
    """v2's methods of one connection, and the prompts it took by idempotency key."""

    def __init__(self, server: AcpServer) -> None:
        self._server = server
        # (session id, key) → the message id of the prompt sent with it, once stored
        self._keys: collections.OrderedDict[tuple[str, str], asyncio.Future[str]] = (
            collections.OrderedDict()
        )

    def prompt(self, params: dict[str, Any]) -> Coroutine[Any, Any, dict[str, Any]]:
        # Synchronous, as v1's: the turn takes the session's token before any await.
        session = self._server.sessions.get(params["sessionId"])
        key = params.get("idempotencyKey")
        if isinstance(key, str) and (session.id, key) in self._keys:
            return _same(self._keys[(session.id, key)])
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[str] = loop.create_future()
        written: asyncio.Future[None] = loop.create_future()  # the answer, on the wire

        def tell(message_id: str) -> asyncio.Future[None]:
            _settle(accepted, message_id)
            return written

        turn = session.start_turn(params["prompt"], tell)
        kept = None
        if isinstance(key, str):
            kept = (session.id, key)
            self._remember(kept, accepted)
        return self._acknowledged(session, turn, accepted, written, kept)

    def _remember(self, key: tuple[str, str], accepted: asyncio.Future[str]) -> None:
        self._keys[key] = accepted
        while len(self._keys) > KEYS_KEPT:
            self._keys.popitem(last=False)

    async def _acknowledged(
        self,
        session: Session,
        turn: Coroutine[Any, Any, Any],
        accepted: asyncio.Future[str],
        written: asyncio.Future[None],
        key: tuple[str, str] | None,
    ) -> dict[str, Any]:
        """The answer to a prompt: its message's id once it is stored, while its turn goes
        on (from when the answer is `written`: nothing of the turn precedes it)."""
        running = session.run_acknowledged(turn)  # goes on if the request is dropped
        try:
            await asyncio.wait((running, accepted), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            _settle(written, None)
            raise
        if accepted.done():
            session.after_answer(lambda: _settle(written, None))
            return {"messageId": accepted.result()}
        accepted.cancel()  # a retry waiting on it is told it was not stored
        if key is not None and self._keys.get(key) is accepted:
            del self._keys[key]  # nothing was inserted with it: a later retry may be
        reply = running.result()  # a turn that failed: its error answers the prompt
        if reply["stopReason"] == "cancelled":
            raise RequestCancelled(
                "Request cancelled: the prompt was cancelled before it was stored"
            )
        raise InvalidRequest(
            "Invalid Request: the prompt was not stored (a UserPromptSubmit hook blocked it; "
            "the session's messages say why)"
        )

    async def resume(self, params: dict[str, Any]) -> dict[str, Any]:
        cursor = params.get("replayFrom")
        if cursor is not None and cursor.get("type") != "start":
            raise BadRequest(
                "replayFrom.type",
                f"unknown cursor {limits.echo(cursor.get('type'))}; this agent replays from "
                'the start ({"type": "start"}) or not at all (replayFrom omitted or null)',
            )
        asked = cast("acp.ResumeSessionRequest", params)  # v1's resume, and a cursor
        return dict(await self._server.restore(asked, replay=cursor is not None))


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


async def _same(accepted: asyncio.Future[str]) -> dict[str, Any]:
    """The answer to a prompt sent again with its idempotency key: the first one's id."""
    try:
        return {"messageId": await asyncio.shield(accepted)}
    except asyncio.CancelledError:
        if accepted.cancelled():
            raise InvalidRequest(
                "Invalid Request: the prompt first sent with this idempotencyKey was not accepted"
            ) from None
        raise
