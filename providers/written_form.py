"""A conversation in the form of a model that writes its tool calls as text
(docs/text-calls.md, "Text mode").

A model whose server does not turn its calls into `tool_calls` is better served without the
API's tool machinery: its tools are described in the system prompt, in one call syntax (the
one its family was trained on, where known), and the conversation goes back as that family
writes it: the assistant's own text with its calls in that syntax, then each result as the
family's tool response, in a user message. `lowered(request)` makes that request of one whose
`calls_written` names the syntax; the calls of the answer are found in its text
(`providers.text_calls`), whatever syntax the model chose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from acp_fsm.providers.types import (
    AssistantMessage,
    AssistantPart,
    Message,
    ModelRequest,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolResultsMessage,
    ToolSpec,
    UserMessage,
)

HERMES, QWEN3, MISTRAL, LLAMA3, JSON = "hermes", "qwen3", "mistral", "llama3", "json"


def _call(name: str, arguments: str, key: str = "arguments") -> str:
    return f'{{"name": {json.dumps(name)}, "{key}": {arguments}}}'


def _qwen3(name: str, arguments: str) -> str:
    values = json.loads(arguments)
    if not isinstance(values, dict):  # what the model wrote, unreadable: as it was
        return f"<tool_call>\n<function={name}>\n{values}\n</function>\n</tool_call>"
    params = "".join(
        f"<parameter={key}>\n{v if isinstance(v, str) else json.dumps(v)}\n</parameter>\n"
        for key, v in values.items()
    )
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


# A call as each family writes it, from the tool's name and its arguments' JSON text.
WRITE: dict[str, Callable[[str, str], str]] = {
    HERMES: lambda name, args: f"<tool_call>\n{_call(name, args)}\n</tool_call>",
    QWEN3: _qwen3,
    MISTRAL: lambda name, args: f"[TOOL_CALLS][{_call(name, args)}]",
    LLAMA3: lambda name, args: f"<|python_tag|>{_call(name, args, 'parameters')}",
    JSON: lambda name, args: f"```json\n{_call(name, args)}\n```",
}

# The family of a model, by its name (a server's path or quantisation around it aside).
_FAMILIES = (
    (re.compile(r"qwen-?3[\w.-]*coder|qwen3-coder", re.IGNORECASE), QWEN3),
    (re.compile(r"qwen|hermes|nous", re.IGNORECASE), HERMES),
    (re.compile(r"mistral|mixtral|codestral|devstral|ministral|magistral", re.I), MISTRAL),
    (re.compile(r"llama-?3", re.IGNORECASE), LLAMA3),
)


def family_of(model: str) -> str | None:
    """The call syntax `model`'s family was trained on, where its name tells."""
    return next((syntax for name, syntax in _FAMILIES if name.search(model)), None)


# How each family is told the result of a call, from the tool's name and the result's text.
_RESULT: dict[str, Callable[[str, str], str]] = {
    HERMES: lambda name, text: f"<tool_response>\n{text}\n</tool_response>",
    MISTRAL: lambda name, text: (
        f"[TOOL_RESULTS]{json.dumps({'name': name, 'content': text})}[/TOOL_RESULTS]"
    ),
}
_RESULT[QWEN3] = _RESULT[HERMES]


def _result(syntax: str, name: str, text: str) -> str:
    write = _RESULT.get(syntax)
    return write(name, text) if write else f"Result of {name}:\n{text}"


TAUGHT_HEADING = "# Tools"  # the system prompt's section on the tools, in text mode


def taught(tools: Sequence[ToolSpec], syntax: str) -> str:
    """The system prompt's section on the tools: each with its arguments, then how to call
    one in `syntax` (an example of the first tool's). The result's form is not shown: a
    small model shown one answers with a made-up result instead of a call."""
    first = tools[0]
    required = first.input_schema.get("required") or list(first.input_schema.get("properties", {}))
    example = WRITE[syntax](first.name, json.dumps({name: "..." for name in required[:2]}))
    listing = "\n".join(_line(tool) for tool in tools)
    return (
        f"{TAUGHT_HEADING}\n"
        "You can call these tools:\n"
        f"{listing}\n"
        "To call one, end your answer with the call, written exactly like this:\n"
        f"{example}\n"
        "One such block per call, with the tool's name and its arguments as JSON. Then stop: "
        "the tool runs, and its result comes back to you in the next message. Never write "
        "a result yourself."
    )


def _line(tool: ToolSpec) -> str:
    schema: dict[str, Any] = tool.input_schema
    required = set(schema.get("required") or ())
    arguments = "; ".join(
        f"{name} ({_type(spec)}{', required' if name in required else ''})"
        + (f": {spec['description'].rstrip('.')}" if spec.get("description") else "")
        for name, spec in (schema.get("properties") or {}).items()
    )
    return f"- {tool.name}: {tool.description}" + (f" Arguments: {arguments}." if arguments else "")


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return " | ".join(json.dumps(value) for value in spec["enum"])
    kind = spec.get("type", "any")
    return kind if isinstance(kind, str) else " | ".join(kind)


def lowered(request: ModelRequest) -> ModelRequest:
    """`request` as a model that writes its calls in `request.calls_written` is sent it: its
    tools in the system prompt, its calls and their results as text. Each message's form is
    kept in the request's memo, so the conversation's prefix stays the same objects (the
    encoder sends each message once) and the same bytes (the server's prompt cache)."""
    syntax = request.calls_written
    if syntax is None:
        return request
    memo = request.memo if request.memo is not None else {}
    key = f"written:{syntax}"
    seen: dict[int, tuple[Message, Message]] = memo.get(key, {})
    kept_now: dict[int, tuple[Message, Message]] = {}
    memo[key] = kept_now  # this conversation's messages only
    names: dict[str, str] = {}  # call id -> tool name, for the results
    messages: list[Message] = []
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            names.update((call.id, call.name) for call in message.tool_calls)
        kept = seen.get(id(message))
        if kept is None or kept[0] is not message:
            kept = (message, _lower(message, syntax, names))
        kept_now[id(message)] = kept
        messages.append(kept[1])
    system = request.system
    if request.tools and not request.answer_only:  # a call that may call none is not taught
        tools = taught(request.tools, syntax)
        system = f"{system}\n\n{tools}" if system else tools
    return request._replace(system=system, tools=(), messages=tuple(messages), calls_written=None)


def _lower(message: Message, syntax: str, names: dict[str, str]) -> Message:
    if isinstance(message, ToolResultsMessage):
        return UserMessage((TextPart(_results(message.results, syntax, names)),))
    if isinstance(message, AssistantMessage) and message.tool_calls:
        parts: list[AssistantPart] = [
            p for p in message.parts if not isinstance(p, TextPart | ToolCallPart)
        ]
        text = "\n".join(
            WRITE[syntax](
                call.name,
                json.dumps(call.arguments if call.error is None else call.raw_arguments),
            )
            for call in message.tool_calls
        )
        prose = message.text.rstrip()
        parts.append(TextPart(f"{prose}\n{text}" if prose else text))
        return AssistantMessage(tuple(parts), message.stop_reason)
    return message


def _results(results: Sequence[ToolResultPart], syntax: str, names: dict[str, str]) -> str:
    return "\n".join(
        _result(
            syntax,
            names.get(result.call_id, "the tool"),
            f"Error: {result.content}" if result.is_error else result.content,
        )
        for result in results
    )
