"""What the connection asks of the layer that knows the methods (`acp_fsm.server.AcpServer`).

The connection knows no method: whether a message is admitted, what its work is, whether what
we send is valid and what the peer's answers mean are the dispatcher's to say.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Literal, Protocol

from acp_fsm.protocol.jsonrpc import Notification, Request

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
