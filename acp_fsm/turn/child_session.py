"""A subagent as the editor sees it: a child session of its own when the editor opted in
(`ChildEffects`, `ChildSession`; ACP: protocol/v1/subagents, `acp_fsm.child_sessions`), else
lines of the `task` call it works for (`turn.subagent.TaskEffects`); either way the editor as
a subagent may reach it (`Reach`) and the entries it makes, kept for its session's `subagent`
entry (`Collected`).

A child is announced on its parent before any of its traffic, with the `cancel` capability
while it works; the task's prompt goes from the parent to the child and its report back as
`session_message`s (each with its two linked views); its text, thoughts and tool calls are
updates on its own session id, its permission requests name it, and the parent's call links
it with `session` content.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from acp_fsm import child_sessions
from acp_fsm.env_vars import ELICITATION_METHOD, PERMISSION_METHOD
from acp_fsm.protocol.errors import OutboundCancelled, OutboundError

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.initialize import ClientInfo
    from acp_fsm.protocol.cancel import CancellationToken
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.turn.ports import Effects
    from acp_fsm.updates import ChunkKind

NO_ASKING = (
    "a subagent cannot ask the user: in this session's mode the call needs their permission. "
    "Say in your report what you could not do, so the agent can do it itself"
)


class Reach:
    """The editor as a subagent reaches it: never with a question (`ask_user` is not a
    subagent's, and an MCP server's question is refused); with a permission request only when
    `waiting` is given (the subagent is a child session the request names: `waiting(True)`
    while it waits for the answer, `waiting(False)` once answered), else refused."""

    def __init__(
        self, server: ClientChannel, waiting: Callable[[bool], None] | None = None
    ) -> None:
        self._server = server
        self._waiting = waiting

    @property
    def client(self) -> ClientInfo | None:
        return self._server.client

    def call_client(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None = None,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> asyncio.Future[Any]:
        asks = method == PERMISSION_METHOD and self._waiting is not None
        if method == ELICITATION_METHOD or (method == PERMISSION_METHOD and not asks):
            refused: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            refused.set_exception(OutboundError(NO_ASKING))
            return refused
        answer = self._server.call_client(
            method, params, token=token, timeout_ms=timeout_ms, verbatim=verbatim
        )
        if asks and self._waiting is not None:
            self._waiting(True)
            answer.add_done_callback(self._answered)
        return answer

    def _answered(self, answer: asyncio.Future[Any]) -> None:
        """A permission request was answered (or failed): the subagent works on, unless it
        was cancelled meanwhile (its end says so)."""
        if answer.cancelled() or isinstance(answer.exception(), OutboundCancelled):
            return
        if self._waiting is not None:
            self._waiting(False)


class ChildEffects:
    """A subagent's `Effects` as a child session: its updates, its streamed text and thoughts
    and its requests name `child`; its permission requests mark it `requires_action` on its
    parent while they wait; the user is told nothing of its own."""

    def __init__(self, parent: Effects, child: str) -> None:
        self._parent = parent
        self._own = parent.child(child)
        self._child = child
        self._client = Reach(parent.client, self._waiting)

    def __repr__(self) -> str:
        return f"<ChildEffects {self._child}>"

    @property
    def client(self) -> ClientChannel:
        return self._client

    @property
    def session_id(self) -> str:
        return self._child

    def child(self, session_id: str) -> Effects:
        return self._parent.child(session_id)

    def send(self, update: acp.SessionUpdate) -> None:
        self._own.send(update)

    def text_sender(self, kind: ChunkKind, message_id: str) -> Callable[[str], object]:
        return self._own.text_sender(kind, message_id)

    def pace(self, token: CancellationToken | None) -> Awaitable[None] | None:
        return self._parent.pace(token)

    def notices(self, found: Iterable[str] = ()) -> list[str]:
        return []

    def _waiting(self, asking: bool) -> None:
        snapshot: acp.StateUpdate = {"state": "requires_action"} if asking else {"state": "running"}
        self._parent.send(child_sessions.state(self._child, snapshot))


class ChildSession:
    """What the parent's turn shows of child session `child`, its subagent: the child
    announced, linked to the call and given its task (`open`), then its report and its end
    (`close`). The ids of the messages between them are kept for the stored entry."""

    def __init__(self, parent: Effects, child: str) -> None:
        self.parent = parent
        self.child = child
        self.effects = ChildEffects(parent, child)
        self.prompt_ids = child_sessions.message_ids()
        self.report_ids = child_sessions.message_ids()

    def open(self, title: str, prompt: str, link: Callable[[acp.ToolCallContent], None]) -> None:
        """Announce the child (before anything of it), link the parent's call to it with
        `link`, and send it its task."""
        self.parent.send(child_sessions.announcement(self.child, title, prompt, live=True))
        link(child_sessions.reference(self.child))
        self._message(self.parent.session_id, self.child, prompt, self.prompt_ids)

    def close(self, report: str, snapshot: acp.StateUpdate) -> None:
        """The child's report to its parent (when it has one) and its end, `snapshot`."""
        if report:
            self._message(self.child, self.parent.session_id, report, self.report_ids)
        self.parent.send(child_sessions.state(self.child, snapshot))

    def _message(self, sender: str, recipient: str, text: str, ids: tuple[str, str]) -> None:
        outgoing, incoming = child_sessions.views(sender, recipient, text, ids)
        self._on(sender).send(outgoing)
        self._on(recipient).send(incoming)

    def _on(self, session_id: str) -> Effects:
        return self.effects if session_id == self.child else self.parent


class Collected:
    """A subagent's `Entries`: kept in memory as it works (a write is done at once, its
    position its number) and stored whole with its session's `subagent` entry when it ends;
    a load shows them again as the child session's."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def queue(
        self, kind: str, body: dict[str, Any], *, required: bool = False
    ) -> asyncio.Future[int] | None:
        self.items.append({"kind": kind, "body": body})
        written: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        written.set_result(len(self.items) - 1)
        return written

    async def commit(self, kind: str, written: asyncio.Future[int] | None) -> None:
        pass

    def rewrite(self, seq: int, body: dict[str, Any]) -> None:
        self.items[seq]["body"] = body

    async def settle(self) -> None:
        pass
