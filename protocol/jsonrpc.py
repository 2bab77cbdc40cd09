"""JSON-RPC 2.0 message classification and construction, sans-IO.

`classify` takes one decoded JSON value and says what it is: a request, a notification, a
response to one of our requests, or an invalid message carrying the error to answer with. The
checks follow JSON-RPC 2.0 §4-§6; anything that is not a well-formed message is -32600.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

from acp_fsm import schemas
from acp_fsm.protocol.errors import InvalidRequest, RpcError

Id = str | int | float

JSONRPC = "2.0"
# Either side asks the other to give up a request it sent (the LSP convention ACP follows).
CANCEL_REQUEST = "$/cancel_request"


@dataclass(frozen=True, slots=True)
class Request:
    id: Id
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Response:
    """A peer's answer to a request we sent: exactly one of `result` / `error` is meaningful."""

    id: Id | None
    result: Any = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Invalid:
    """Not a valid message: answer `error` with `id` (None when no id could be recovered).
    A malformed response is answered with id null; `answers` is the id it claimed to answer."""

    id: Id | None
    error: RpcError
    answers: Id | None = None


Message = Request | Notification | Response | Invalid


def is_valid_id(value: object) -> TypeGuard[Id]:
    """Request ids are strings or numbers; booleans are not numbers here."""
    kind = type(value)
    return kind is str or kind is int or kind is float


def classify(obj: object) -> Message:
    """Classify one decoded JSON value (not a batch) as a JSON-RPC message.

    Which kind it is follows from its keys; whether it is well formed is decided by the
    envelope schemas in `schemas/jsonrpc.json`, so the rules live in one place.
    """
    if type(obj) is not dict:
        return Invalid(None, InvalidRequest("Invalid Request: expected a JSON-RPC object"))
    raw_id = obj.get("id")
    if type(raw_id) is float and "method" in obj:
        # A request is answered with its id exactly. A number with a fraction or an exponent
        # (and an integer beyond 64 bits, which the decoder reads as one) may not survive the
        # round trip through a double, so such ids are refused, answered with id null.
        return Invalid(
            None,
            InvalidRequest(
                "Invalid Request: id must be a string or an integer of at most 64 bits; a number "
                "with a fraction or an exponent cannot be echoed exactly"
            ),
        )
    msg_id = raw_id if is_valid_id(raw_id) else None
    if "method" in obj:
        ref = _REQUEST if "id" in obj else _NOTIFICATION
    elif "id" in obj and ("result" in obj or "error" in obj):
        ref = _ERROR_RESPONSE if "error" in obj else _SUCCESS_RESPONSE
    else:
        return Invalid(msg_id, InvalidRequest('Invalid Request: missing "method"'))
    violation = ref(obj)
    if violation is not None:
        if ref is _REQUEST or ref is _NOTIFICATION:
            return Invalid(msg_id, InvalidRequest(f"Invalid Request: {violation}"))
        return Invalid(None, InvalidRequest(f"Invalid Response: {violation}"), answers=msg_id)
    if ref is _REQUEST:
        return Request(obj["id"], obj["method"], obj.get("params"))
    if ref is _NOTIFICATION:
        return Notification(obj["method"], obj.get("params"))
    if ref is _SUCCESS_RESPONSE:
        return Response(msg_id, result=obj["result"])
    return Response(msg_id, error=obj["error"])


_REQUEST = schemas.validator("jsonrpc.Request")
_NOTIFICATION = schemas.validator("jsonrpc.Notification")
_SUCCESS_RESPONSE = schemas.validator("jsonrpc.SuccessResponse")
_ERROR_RESPONSE = schemas.validator("jsonrpc.ErrorResponse")


def success(msg_id: Id, result: Any) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "result": result}


def failure(msg_id: Id | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": msg_id, "error": error.to_error()}


def request(msg_id: Id, method: str, params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": JSONRPC, "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": JSONRPC, "method": method}
    if params is not None:
        message["params"] = params
    return message
