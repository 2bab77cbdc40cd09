"""A session's lifecycle (`fsm/session.py`), moved here alone: prompts admitted, queued, begun
in order, cancelled, and the session closed.

Token lifecycle (docs/cancellation.md): a session gets a fresh CancellationToken when it is
created, loaded or resumed; a prompt takes it when it begins its turn, synchronously (so a
`session/cancel` read right after the prompt reaches its turn); `session/cancel` fires it
(only while a turn runs: a cancel while idle is a no-op); when the turn ends, whatever the
reason, a fresh token replaces it, so a cancel never reaches a later turn.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from acp_fsm.fsm.machine import Guard
from acp_fsm.fsm.session import BUSY, ONE_WAITING, OPEN, SESSION, SessionState, SessionTrigger
from acp_fsm.protocol.cancel import CancellationToken

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

log = structlog.get_logger("session")

S, T = SessionState, SessionTrigger
R = TypeVar("R")
Prompt = list["acp.ContentBlock"]  # a prompt, as its request holds it (its identity, for cancels)
Run = Callable[[CancellationToken], Coroutine[Any, Any, R]]


@dataclass(slots=True)
class Waiting:
    """A prompt sent while a turn ran: `ready` gets its turn's token when it begins, None
    when it was withdrawn (then it is answered cancelled, unrun)."""

    prompt: Prompt
    ready: asyncio.Future[CancellationToken | None]


class Lifecycle:
    """The lifecycle of session `session_id`: its machine's `state`, moved by `_fire` only,
    the prompts waiting for their turn, and the token of the running (or next) turn."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.state = SessionState(SESSION.initial)
        self.token = CancellationToken(f"session {session_id}")
        self._running: Prompt | None = None  # the running turn's prompt (`cancel_prompt`)
        self._waiting: collections.deque[Waiting] = collections.deque()
        self._moved: list[asyncio.Future[None]] = []  # `until`'s waits, woken by a move
        self._guards: dict[Guard, Callable[[], bool]] = {
            ONE_WAITING: lambda: len(self._waiting) == 1
        }

    def __repr__(self) -> str:
        return f"<Lifecycle {self.session_id} {self.state} waiting={len(self._waiting)}>"

    @property
    def taking_prompts(self) -> bool:
        return self.state in OPEN

    def _fire(self, trigger: SessionTrigger) -> None:
        before = self.state
        self.state = SessionState(SESSION.step(self.state, trigger, self._guards))
        log.debug(
            "session_transition",
            session_id=self.session_id,
            trigger=trigger.value,
            source=before.value,
            dest=self.state.value,
        )
        moved, self._moved = self._moved, []
        for waiter in moved:
            if not waiter.done():
                waiter.set_result(None)

    async def until(self, *states: SessionState) -> None:
        """Wait until the machine is in one of `states`."""
        while self.state not in states:
            waiter = asyncio.get_running_loop().create_future()
            self._moved.append(waiter)
            await waiter

    # ------------------------------------------------------------------ prompts

    def admit(self, prompt: Prompt, run: Run[R]) -> Coroutine[Any, Any, R | None]:
        """`prompt`, whose turn `run` runs under the token it is given: at once when no turn
        runs (the token taken now), else once those before it ended. The coroutine gives
        what `run` gave, or None when the prompt was withdrawn unrun."""
        if self.state == S.IDLE:
            self._fire(T.PROMPT)
            return self._run(self._begin(prompt), run)
        waiting = Waiting(prompt, asyncio.get_running_loop().create_future())
        self._waiting.append(waiting)
        self._fire(T.PROMPT)
        log.info("prompt_queued", session_id=self.session_id, ahead=len(self._waiting))
        return self._after(waiting, run)

    def _begin(self, prompt: Prompt) -> CancellationToken:
        """`prompt`'s turn begins: the token it runs under."""
        self._running = prompt
        return self.token

    async def _run(self, token: CancellationToken, run: Run[R]) -> R:
        try:
            return await run(token)
        finally:
            self._ended()

    async def _after(self, waiting: Waiting, run: Run[R]) -> R | None:
        """A waiting prompt: its turn once those before it ended (it stays first in the queue
        until it begins, so no later prompt overtakes it)."""
        try:
            token = await waiting.ready
        except BaseException:  # the request was dropped (the connection closed)
            if waiting in self._waiting:
                self._withdraw(waiting)
            elif waiting.ready.done() and waiting.ready.result() is not None:
                self._ended()  # it began, and never ran
            raise
        return None if token is None else await self._run(token, run)

    def _ended(self) -> None:
        """The running turn ended (or a begun prompt never ran): a fresh token, and the next
        waiting prompt begins."""
        self._running = None
        self.token = CancellationToken(f"session {self.session_id}")  # never reused
        begins = self._waiting[0] if self.state == S.QUEUED else None
        self._fire(T.FINISH)
        if begins is not None:
            self._waiting.popleft()
            begins.ready.set_result(self._begin(begins.prompt))

    def _withdraw(self, waiting: Waiting) -> None:
        """`waiting` leaves the queue unrun (answered cancelled, unless its request is gone)."""
        self._fire(T.WITHDRAW)
        self._waiting.remove(waiting)
        if not waiting.ready.done():
            waiting.ready.set_result(None)

    def cancel(self, reason: str) -> bool:
        """Fire the running turn's token and withdraw every waiting prompt; False (and nothing
        fired) when no turn runs."""
        if self.state not in (*BUSY, S.CLOSING):
            return False
        for waiting in list(self._waiting):
            self._withdraw(waiting)
        self.token.cancel(reason)
        return True

    def cancel_prompt(self, prompt: Prompt, reason: str) -> bool:
        """`$/cancel_request` for `prompt` (the request's own list): that one alone, waiting
        or running; False when it is neither."""
        waiting = next((w for w in self._waiting if w.prompt is prompt), None)
        if waiting is not None:
            self._withdraw(waiting)
            return True
        if self._running is not prompt:
            return False
        self.token.cancel(reason)
        return True

    # ------------------------------------------------------------------ closing

    async def close(self, reason: str, grace: float, stop: Callable[[], Awaitable[None]]) -> None:
        """Take no prompt any more, cancel the running turn and the waiting prompts, let the
        turn drain (`grace` at most), then `stop` what the session runs. A second close
        (the connection ended during a `session/close`) waits for the first, `grace` at
        most."""
        if not self.taking_prompts:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.until(S.CLOSED), grace)
            return
        self.cancel(reason)
        self._fire(T.CLOSE)
        if self.state == S.CLOSING:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.until(S.STOPPING), grace)
        try:
            await stop()
        finally:
            self._fire(T.STOPPED)
