"""The domain's errors and the one table that answers them as JSON-RPC errors (pure tier):
every domain error has its row, every row a code the protocol defines, and the dispatcher
answers a handler's domain error, raised at once or while it runs, with its row's error."""

from __future__ import annotations

import pytest

from acp_fsm import errors, schemas
from acp_fsm.errors import DomainError
from acp_fsm.fsm.handshake import Handshake, HandshakeTrigger
from acp_fsm.methods import ANSWERS, answer
from acp_fsm.protocol.errors import ResourceNotFound, RpcError
from acp_fsm.protocol.jsonrpc import Request
from acp_fsm.server import AcpServer


def domain_errors(base: type[DomainError] = DomainError) -> set[type[DomainError]]:
    """`base`'s subclasses, their own included."""
    found: set[type[DomainError]] = set()
    for kind in base.__subclasses__():
        found |= {kind} | domain_errors(kind)
    return found


def test_every_domain_error_has_its_row() -> None:
    declared = {
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, DomainError) and value is not DomainError
    }
    assert declared == domain_errors() == ANSWERS.keys()


# The codes ACP's schema names (`ErrorCode`): JSON-RPC's own and ACP's.
KNOWN_CODES = schemas.load_json("acp.json")["$defs"]["ErrorCode"]["anyOf"][0]["enum"]


@pytest.mark.parametrize("kind", list(ANSWERS), ids=lambda kind: kind.__name__)
def test_every_row_answers_with_a_code_the_protocol_defines(kind: type[DomainError]) -> None:
    rpc, _ = ANSWERS[kind]
    assert rpc.code in KNOWN_CODES
    # the codes of the transport and the dispatcher (parse error, unknown method, a cancelled
    # request) are never the domain's to give
    assert rpc.code not in (-32700, -32601, -32800)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            errors.BadRequest("cwd", "must be an absolute path"),
            {"code": -32602, "message": "Invalid params: cwd: must be an absolute path"},
        ),
        (
            errors.SessionNotFound("'s-1' (it was deleted)"),
            {"code": -32002, "message": "Session not found: 's-1' (it was deleted)"},
        ),
        (
            errors.SessionBusy("session s-1 is running a prompt in process 7; wait for it"),
            {
                "code": -32600,
                "message": "Invalid Request: session s-1 is running a prompt in process 7; "
                "wait for it",
            },
        ),
        (
            errors.LoginRequired("no API key is configured.", data={"reason": "r", "details": "d"}),
            {
                "code": -32000,
                "message": "Authentication required: no API key is configured.",
                "data": {"reason": "r", "details": "d"},
            },
        ),
        (
            errors.NotStored("the prompt entry could not be stored: disk full"),
            {
                "code": -32603,
                "message": "Internal error: the prompt entry could not be stored: disk full",
            },
        ),
        (
            errors.TurnFailed("Rate limited", data={"provider": "openai", "retryable": True}),
            {
                "code": -32603,
                "message": "Rate limited",
                "data": {"provider": "openai", "retryable": True},
            },
        ),
    ],
)
def test_each_domain_error_is_answered_as_its_row_says(
    error: DomainError, expected: dict[str, object]
) -> None:
    answered = answer(error)
    assert answered.to_error() == expected
    assert schemas.validate("acp.Error", answered.to_error()) is None


def test_a_bad_request_names_its_field() -> None:
    error = errors.BadRequest("prompt[2]", "audio content is not supported by this agent")
    assert error.field == "prompt[2]"
    assert error.message == "prompt[2]: audio content is not supported by this agent"


def initialized() -> AcpServer:
    handshake = Handshake()
    handshake.fire(HandshakeTrigger.INITIALIZE)
    return AcpServer(handshake)


def test_a_domain_error_raised_in_the_reader_is_answered_at_once() -> None:
    """session/prompt does its first part synchronously: an unknown session is refused by
    `dispatch` itself, as the JSON-RPC error of `SessionNotFound`."""
    prompt = {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}
    with pytest.raises(RpcError) as caught:
        initialized().dispatch(Request(1, "session/prompt", prompt))
    assert type(caught.value) is ResourceNotFound
    assert caught.value.to_error() == {"code": -32002, "message": "Session not found: 'nope'"}


async def test_a_domain_error_raised_by_a_running_handler_is_answered() -> None:
    work = initialized().dispatch(
        Request(2, "session/set_mode", {"sessionId": "nope", "modeId": "plan"})
    )
    assert work is not None
    with pytest.raises(RpcError) as caught:
        await work
    assert caught.value.to_error() == {"code": -32002, "message": "Session not found: 'nope'"}
