"""A session's title made by a model (`acp_fsm.titles` decides the call and what is kept).

Until then the title is the first prompt's words (`session.prompting`). Once the first turn
that completed (not cancelled, not failed) has been answered, one short model call runs in a
task of its own: `ACP_FSM_TITLE_MODEL`, else the session's model, no tools, a few tokens (on a
compatible server none unless ACP_FSM_TITLE_MODEL is set: `titles.model_of`). Its
title is stored (`Store.set_model_title`: once a session, whichever process has it open),
then told (`session_info_update`). The call is never on a turn's way: it starts after the
answer is written, may run on while the next turn does (it reads the conversation only when
it starts and never touches it), and has its own token, fired when the session is closed or
deleted or the process exits, and after `TITLE_TIMEOUT_S`. It is tried once a session in a
process: a failure (logged) keeps the first prompt's words; a later process that has the
session open tries again after its next completed turn. Its tokens and cost count in the
session's (its `ledger`, stored as a usage entry), not in the turn's answer
(sent before it ends).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from acp_fsm import commands, env_vars, redact, titles, updates
from acp_fsm.protocol.cancel import CancellationToken, Cancelled
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.types import ModelRequest
from acp_fsm.store import StoreError

if TYPE_CHECKING:
    from acp_fsm.session.core import Session

log = structlog.get_logger("session")

# The longest a title call may take, retries included: then it is cancelled.
TITLE_TIMEOUT_S = 30.0


class Naming:
    """The title call of `session`; `made` once the title is a model's (stored so, or made
    in this process)."""

    def __init__(self, session: Session, made: bool) -> None:
        self._session = session
        self.made = made
        self._token = CancellationToken(f"title of session {session.id}")
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        state = "idle" if self._task is None else "done" if self._task.done() else "running"
        return f"<Naming {self._session.id} {state} made={self.made}>"

    def start(self, config: ProviderConfig) -> None:
        """After a completed turn's answer: start the title call, unless the title is a
        model's already or this process tried once."""
        if self.made or self._task is not None or self._token.is_cancelled:
            return
        model = titles.model_of(config, env_vars.title_model(), self._session.options.model(config))
        if model is None:  # a compatible server: the first prompt's words stay the title
            return
        found = titles.opening(self._session.messages)
        if found is None:  # no text to name the session by (an image alone)
            return
        # A first prompt that ran a command: named by what the user typed (the session's
        # title until now), not by the expansion the model read.
        typed = commands.as_typed(self._session.title, self._session.toolbox.library)
        if typed is not None:
            found = (typed, found[1])
        model_request = titles.request(model, config.provider, *found)
        self._task = asyncio.get_running_loop().create_task(self._name(model_request, config))

    async def stop(self, reason: str, grace: float) -> None:
        """Cancel the call (for good: none starts after this) and wait for it, `grace` at
        most (a cancelled call ends in milliseconds)."""
        self._token.cancel(reason)
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=grace)

    async def _name(self, model_request: ModelRequest, config: ProviderConfig) -> None:
        session = self._session
        timer = asyncio.get_running_loop().call_later(
            TITLE_TIMEOUT_S, self._token.cancel, "the title call timed out"
        )
        try:
            title = await self._answer(model_request, config)
            if title is None:
                return
            try:
                updated_at = await session.journal.store.set_model_title(session.id, title)
            except StoreError as exc:  # closed, or the session deleted meanwhile
                log.warning("title_not_stored", session_id=session.id, error=str(exc))
                return
            self.made = True
            if updated_at is None:  # another process made one first: its title stands
                return
            session.title = title
            log.info("title_made", session_id=session.id, model=model_request.model)
            session.send_update(updates.session_info(title, updates.iso_time(updated_at)))
        except Exception:  # never lost in a task nobody awaits
            log.exception("title_error", session_id=session.id)
        finally:
            timer.cancel()

    async def _answer(self, model_request: ModelRequest, config: ProviderConfig) -> str | None:
        """The title the model made; None (logged) when the call failed or was cancelled, or
        its answer held no title."""
        from acp_fsm.providers import open_stream  # loaded by the turn before
        from acp_fsm.providers.errors import ProviderError
        from acp_fsm.providers.types import Finished
        from acp_fsm.turn.model_call import bill

        secrets = redact.configured()
        scrub = secrets.scrub if secrets else None
        finished: Finished | None = None
        try:
            async with open_stream(model_request, self._token, config, scrub=scrub) as stream:
                async for event in stream:
                    if isinstance(event, Finished):
                        finished = event
        except ProviderError as exc:
            log.warning("title_call_failed", session_id=self._session.id, error=str(exc))
            return None
        except Cancelled as exc:  # the session ended, or the call took too long
            log.info("title_call_cancelled", session_id=self._session.id, reason=exc.reason)
            return None
        assert finished is not None, "a stream ends with Finished or an exception"
        await bill(
            self._session.ledger, finished.usage, model_request.model, config.base_url, "title"
        )
        title = titles.cleaned(finished.message.text, secrets.scrub_text)
        if title is None:
            log.warning("title_unusable", session_id=self._session.id)
            log.debug("title_answer", answer=finished.message.text[:200])
        return title
