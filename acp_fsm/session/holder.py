"""What a session needs of the server that holds it (`server.AcpServer` is one): the editor its
turns call, and the connection its updates go out on. For the checker only: the session/new
path does not import the client module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from acp_fsm.client import ClientChannel
    from acp_fsm.dialects import Dialect
    from acp_fsm.protocol.connection import Connection

    class Server(ClientChannel, Protocol):
        """The server holding sessions, as they reach it."""

        @property
        def conn(self) -> Connection:
            """The connection to the editor."""

        @property
        def dialect(self) -> Dialect:
            """How the connection's ACP version says what a session says."""
