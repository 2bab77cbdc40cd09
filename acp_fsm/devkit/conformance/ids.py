"""An answer that matches no awaited request, read for what it can only be: the answer to one
of them, with its id in the wrong form (JSON-RPC 2.0 §5: a response carries its request's id
unchanged). Pure: the answer and the ids awaited in, the request it answers out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

# Python's types of JSON values, in the order they are tested (a bool is an int).
_TYPES: Final = (
    (bool, "a boolean"),
    (int, "a number"),
    (float, "a number with a decimal point"),
    (str, "a string"),
    (list, "an array"),
    (object, "an object"),
)


def misanswered(
    message: dict[str, Any], awaited: Sequence[Any], ids_only: bool, sent: Sequence[Any] = ()
) -> int | None:
    """The index in `awaited` (the ids of the requests whose answer is awaited) of the request
    that `message` answers with an id that does not match: that request's id in another JSON
    type ("1" for 1, 1.0 for 1); or, when one request is awaited and every message written so
    far had an id (`ids_only`: then the answer cannot be to a notification or to a line the
    agent could not read), an id that no request was sent with, in any type (`sent`, the
    requests answered already too: null, none, "01" for 1)."""
    got = message.get("id")
    same = [index for index, sent_id in enumerate(awaited) if _in_another_type(got, sent_id)]
    if same:
        return same[0]
    if len(awaited) == 1 and ids_only and not any(_same(got, i) for i in (*sent, *awaited)):
        return 0
    return None


def id_shown(message: dict[str, Any]) -> str:
    """A message's id, for a reason: "with id "1" (a string)", "without an id"."""
    if "id" not in message:
        return "without an id"
    got = message["id"]
    return "with id null" if got is None else f"with id {json.dumps(got)} ({json_type(got)})"


def json_type(value: Any) -> str:
    """The JSON type of a value, for a reason (an integer is "a number", as JSON has it)."""
    if value is None:
        return "null"
    return next(name for kind, name in _TYPES if isinstance(value, kind))


def _same(got: Any, sent: Any) -> bool:
    """Whether `got` is the id `sent`, in its type or in another one."""
    return (type(got) is type(sent) and got == sent) or _in_another_type(got, sent)


def _in_another_type(got: Any, sent: Any) -> bool:
    if got is None or type(got) is type(sent) or isinstance(got, bool) or isinstance(sent, bool):
        return False
    if isinstance(got, int | float) and isinstance(sent, int | float):
        return got == sent
    return str(got) == str(sent)
