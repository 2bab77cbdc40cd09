"""Questions to the user: a form (`elicitation/create`) when the editor advertised
`elicitation.form`, otherwise the choices as the options of a `session/request_permission`
(a question without choices cannot be asked then).

The model's own questions (`ask_user`) and the forms of MCP servers go through here. A form
sent to the editor holds only what ACP's restricted form schema defines (see `form_schema`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

FIELD: Final = "answer"  # the one field of the form an `ask_user` question is
ACCEPT: Final = "accept"
DECLINE: Final = "decline"
CANCEL: Final = "cancel"  # dismissed; also any action ACP does not define
DECLINE_OPTION: Final = "decline"  # the optionId of "Don't answer" among permission choices
_CHOICE_PREFIX: Final = "choice_"


class NotAskable(Exception):
    """The editor cannot show this question (no forms, and it is not a choice)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What became of a question: `accept` with the form's `content`, `decline` or `cancel`."""

    action: str
    content: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """A question as a form: its message, the fields, and the field a choice among the
    permission options would fill (None: it cannot be asked that way)."""

    message: str
    schema: acp.ElicitationSchema
    choices: tuple[str, ...] = ()  # the values a permission request may offer
    choice_field: str | None = None
    confirm: bool = False  # a form without fields: accept or decline


def ask_user_question(text: str, options: tuple[str, ...], multi: bool) -> Question:
    """The model's `ask_user` question: a choice when `options` are given (several allowed
    with `multi`), free text otherwise."""
    field: dict[str, Any]
    if not options:
        field = {"type": "string", "title": "Your answer"}
    elif multi:
        field = {
            "type": "array",
            "title": "Choose one or more",
            "items": {"type": "string", "enum": list(options)},
            "minItems": 1,
        }
    else:
        field = {"type": "string", "title": "Choose one", "enum": list(options)}
    schema: acp.ElicitationSchema = {
        "type": "object",
        "properties": {FIELD: field},
        "required": [FIELD],
    }
    return Question(text, schema, options, FIELD if options else None)


# ---------------------------------------------------------------- MCP servers' forms

_COMMON = ("title",)
_KEYS: Final = {
    "string": (*_COMMON, "minLength", "maxLength", "pattern", "format", "default", "enum", "oneOf"),
    "number": (*_COMMON, "minimum", "maximum", "default"),
    "integer": (*_COMMON, "minimum", "maximum", "default"),
    "boolean": (*_COMMON, "default"),
    "array": (*_COMMON, "minItems", "maxItems", "items", "default"),
}
_FORMATS: Final = frozenset({"email", "uri", "date", "date-time"})


def form_question(message: str, requested: dict[str, Any]) -> Question:
    """An MCP server's form (`elicitation/create` of MCP, a restricted JSON Schema) as ACP's:
    each field keeps the keys ACP defines for its type (MCP's older `enumNames` become titled
    `oneOf` choices; a description stands in for a missing title). Raises `NotAskable` for a
    field ACP's forms cannot hold."""
    fields: dict[str, Any] = {}
    raw = requested.get("properties")
    for name, prop in (raw if isinstance(raw, dict) else {}).items():
        fields[name] = _field(name, prop)
    required = [n for n in requested.get("required") or [] if isinstance(n, str) and n in fields]
    schema: dict[str, Any] = {"type": "object", "properties": fields}
    if required:
        schema["required"] = required
    if isinstance(requested.get("title"), str):
        schema["title"] = requested["title"]
    choices: tuple[str, ...] = ()
    choice_field = None
    if len(fields) == 1:  # one choice: the permission options can ask it
        ((name, field),) = fields.items()
        choices = _choices(field)
        choice_field = name if choices else None
    return Question(message, schema, choices, choice_field, confirm=not fields)  # type: ignore[arg-type]


def _field(name: str, prop: Any) -> dict[str, Any]:
    kind = prop.get("type") if isinstance(prop, dict) else None
    if not isinstance(kind, str) or kind not in _KEYS:
        raise NotAskable(f"the form's field {name!r} is of a type ACP's forms do not have")
    assert isinstance(prop, dict)
    field: dict[str, Any] = {"type": kind}
    for key in _KEYS[kind]:  # each kept only when ACP's form schema admits its value
        if prop.get(key) is not None and _admitted({**field, key: prop[key]}):
            field[key] = prop[key]
    if isinstance(prop.get("description"), str):  # not ACP's, but editors may show it
        field["description"] = prop["description"]
        field.setdefault("title", prop["description"])
    names, values = prop.get("enumNames"), field.get("enum")
    if isinstance(names, list) and isinstance(values, list) and len(names) == len(values):
        field["oneOf"] = [
            {"const": str(value), "title": str(title)}
            for value, title in zip(field.pop("enum"), names, strict=True)
        ]
    if field.get("format") not in _FORMATS:
        field.pop("format", None)
    return field


def _admitted(field: dict[str, Any]) -> bool:
    from acp_fsm import schemas

    return schemas.validate("acp.ElicitationPropertySchema", field) is None


def _choices(field: dict[str, Any]) -> tuple[str, ...]:
    """The values of a single-choice field: its `enum`, its titled `oneOf`, or yes/no."""
    if field["type"] == "boolean":
        return ("Yes", "No")
    if field["type"] != "string":
        return ()
    if isinstance(field.get("enum"), list):
        return tuple(str(v) for v in field["enum"])
    return tuple(str(o.get("const")) for o in field.get("oneOf") or () if isinstance(o, dict))


# ---------------------------------------------------------------- asking and answers


def form_params(question: Question, tool_call_id: str | None) -> dict[str, Any]:
    """The params of `elicitation/create` (the session id is added by the caller)."""
    params: dict[str, Any] = {
        "mode": "form",
        "message": question.message,
        "requestedSchema": question.schema,
    }
    if tool_call_id is not None:
        params["toolCallId"] = tool_call_id
    return params


def form_answer(result: dict[str, Any]) -> Answer:
    """An `elicitation/create` result (an action ACP does not define reads as a cancel)."""
    action = result.get("action")
    if action == ACCEPT:
        content = result.get("content")
        return Answer(ACCEPT, dict(content) if isinstance(content, dict) else {})
    return Answer(DECLINE if action == DECLINE else CANCEL)


def choice_options(question: Question) -> list[acp.PermissionOption]:
    """A permission request's options for the question: one per choice (accept or decline
    for a form without fields), and "Don't answer"."""
    if question.confirm:
        return [
            {"optionId": f"{_CHOICE_PREFIX}accept", "name": "Accept", "kind": "allow_once"},
            {"optionId": DECLINE_OPTION, "name": "Decline", "kind": "reject_once"},
        ]
    if question.choice_field is None:
        raise NotAskable("the editor shows no forms, and this question is not a choice")
    options: list[acp.PermissionOption] = [
        {"optionId": f"{_CHOICE_PREFIX}{i}", "name": choice, "kind": "allow_once"}
        for i, choice in enumerate(question.choices)
    ]
    options.append({"optionId": DECLINE_OPTION, "name": "Don't answer", "kind": "reject_once"})
    return options


def choice_answer(question: Question, result: dict[str, Any]) -> Answer:
    """A `session/request_permission` result for `choice_options`."""
    outcome = result.get("outcome") or {}
    if outcome.get("outcome") != "selected":
        return Answer(CANCEL)
    chosen = str(outcome.get("optionId"))
    if question.confirm:
        return Answer(ACCEPT, {}) if chosen == f"{_CHOICE_PREFIX}accept" else Answer(DECLINE)
    index = chosen.removeprefix(_CHOICE_PREFIX)
    if chosen == DECLINE_OPTION or not index.isdigit() or int(index) >= len(question.choices):
        return Answer(DECLINE)
    assert question.choice_field is not None
    value: Any = question.choices[int(index)]
    kind = question.schema["properties"][question.choice_field]["type"]
    if kind == "boolean":
        value = value == "Yes"
    elif kind == "array":
        value = [value]
    return Answer(ACCEPT, {question.choice_field: value})
