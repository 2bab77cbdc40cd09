"""A session's `Effects` (`turn.ports`): what its turns do to the editor, over the connection
of the server that holds the session."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from acp_fsm import updates

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.protocol.cancel import CancellationToken
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.session.holder import Server


class SessionEffects:
    """The editor as session `session_id`'s turns reach it; `news` gives what the user is to
    be told (the session's `Toolbox.notices`)."""

    def __init__(
        self,
        server: Server,
        session_id: str,
        news: Callable[[Iterable[str]], list[str]],
    ) -> None:
        self._server = server
        self._session_id = session_id
        self._news = news

    def __repr__(self) -> str:
        return f"<SessionEffects {self._session_id}>"

    @property
    def client(self) -> ClientChannel:
        return self._server

    @property
    def session_id(self) -> str:
        return self._session_id

    def child(self, session_id: str) -> SessionEffects:
        """The editor as child session `session_id` reaches it: no notices of its own."""
        return SessionEffects(self._server, session_id, lambda found: [])

    def send(self, update: acp.SessionUpdate | dict[str, Any]) -> None:
        """Send `update`, as the connection's ACP version says it (`acp_fsm.dialects`;
        nothing when it has no words for it)."""
        said = self._server.dialect.update(cast("dict[str, Any]", update))
        if said is not None:
            self._server.conn.notify(
                "session/update", {"sessionId": self._session_id, "update": said}
            )

    def text_sender(self, kind: updates.ChunkKind, message_id: str) -> Callable[[str], object]:
        """The sender of this session's `kind` chunks of message `message_id`'s text
        (`updates.chunk`): a streamed answer's, one per delta, validated as a template
        (`Connection.notifier`)."""
        dialect = self._server.dialect
        return self._server.conn.notifier(
            "session/update",
            lambda text: {
                "sessionId": self._session_id,
                "update": dialect.update(
                    cast(
                        "dict[str, Any]",
                        updates.chunk(kind, updates.text_content(text), message_id),
                    )
                ),
            },
        )

    def pace(self, token: CancellationToken | None) -> Awaitable[None] | None:
        """While the editor reads slower than updates are written, the wait for it to catch
        up (back-pressure: a stalled editor must not make the agent buffer without limit).
        The reader goes on meanwhile, so a cancel fires `token` and ends the wait at once."""
        conn = self._server.conn
        if not conn.congested:
            return None
        return token.race(conn.drain()) if token is not None else conn.drain()

    def notices(self, found: Iterable[str] = ()) -> list[str]:
        return self._news(found)
