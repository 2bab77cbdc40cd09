"""JSON-RPC error classes, one per code, and the exceptions of outbound requests.

Inbound violations are raised as `RpcError` subclasses anywhere below the dispatcher; only the
connection turns them into error responses. A message never carries a traceback.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is not imported on the startup path
if TYPE_CHECKING:
    from typing import Any, ClassVar


class RpcError(Exception):
    """An error that is answered to the peer as a JSON-RPC error object."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC `error` member."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(RpcError):
    code = -32700
    default_message = "Parse error"


class InvalidRequest(RpcError):
    code = -32600
    default_message = "Invalid Request"


class MethodNotFound(RpcError):
    code = -32601
    default_message = "Method not found"


class InvalidParams(RpcError):
    code = -32602
    default_message = "Invalid params"


class InternalError(RpcError):
    code = -32603
    default_message = "Internal error"


class AuthRequired(RpcError):
    """ACP: the agent needs `authenticate` before this call."""

    code = -32000
    default_message = "Authentication required"


class ServerNotInitialized(RpcError):
    """A known method before `initialize`, or a second `initialize` (docs/machines.md)."""

    code = -32002
    default_message = "Server not initialized"


class ResourceNotFound(RpcError):
    """ACP's -32002 for an unknown resource such as a session id."""

    code = -32002
    default_message = "Resource not found"


class RequestCancelled(RpcError):
    """The peer cancelled this request with `$/cancel_request` and we stopped it."""

    code = -32800
    default_message = "Request cancelled"


class OutboundError(Exception):
    """A request we sent to the peer did not produce a result."""


# Characters of a peer's `error.data` quoted in an error message (the rest is cut).
MAX_QUOTED_DATA_CHARS = 500
# Members of an `error.data` object that hold its reason in words (acpx: `details`).
_DATA_TEXT_KEYS = ("details", "message", "reason")


class RemoteError(OutboundError):
    """The peer answered our `method` request with a JSON-RPC error. The message quotes the
    peer's own words and its `error.data` (e.g. `data.details`), which often hold the reason."""

    def __init__(self, code: int, message: str, data: Any = None, method: str = "") -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        what = f"{method} failed" if method else "the request failed"
        detail = quote_data(data)
        super().__init__(
            f"{what} with error {code}: {message}"
            + (f" ({detail})" if detail and detail != message else "")
        )


def quote_data(data: Any) -> str:
    """A JSON-RPC `error.data` as a short human text: a string as it is, an object's
    `details`, `message` or `reason` text where it has one, anything else as compact JSON."""
    if data is None:
        return ""
    words = [data.get(k) for k in _DATA_TEXT_KEYS] if isinstance(data, dict) else []
    if isinstance(data, str):
        text = data
    elif any(isinstance(w, str) for w in words):
        text = "; ".join(w for w in words if isinstance(w, str))
    else:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)
    text = text.strip()
    if len(text) > MAX_QUOTED_DATA_CHARS:
        text = text[:MAX_QUOTED_DATA_CHARS] + "…"
    return text


class InvalidResult(OutboundError):
    """The peer answered our request with a result that does not match the method's schema.
    Our own check found it: the peer reported no error."""


class OutboundTimeout(OutboundError):
    """The peer did not answer within the request's time limit."""


class OutboundCancelled(OutboundError):
    """Our side gave up waiting because the request's cancellation token fired."""


class CapabilityMissing(OutboundError):
    """The peer did not advertise the capability this request needs; nothing was sent."""


class ConnectionClosed(OutboundError):
    """The connection ended before the peer answered."""
