"""The model the agent under test talks to: one scripted server for the whole run, answering
every model call (whatever model it names) from the conversation it carries.

- A prompt holding `HANG_MARKER` gets a reply that streams a few chunks and then hangs (the
  cancel checks).
- A prompt made by `write_prompt` or `run_prompt` gets one tool call, of the tool the agent
  offers that writes a file or runs a command, its arguments filled from the tool's own JSON
  Schema; once the call's result is in the conversation, a short closing reply. An agent that
  offers no such tool gets `NO_TOOL` and the tools' names as the reply.
- Any other prompt gets `CHUNKS`, several chunks with a pause between them.

Nothing here knows one agent's tools: OpenAI Chat (`function.parameters`), Responses
(`parameters`) and Anthropic (`input_schema`) tool lists are read alike."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Final

from acp_fsm.devkit.provider import Call, Hang, RecordedRequest, Reply, Scripted

CHUNKS: Final = ("The scripted ", "model streams ", "this reply ", "in four chunks.")
STREAMED_TEXT: Final = "".join(CHUNKS)
STREAM_PROMPT: Final = "Reply in a few words (acp-fsm conformance: a streamed reply)."
HANG_MARKER: Final = "hang mid-stream"
HANG_PROMPT: Final = f"Write a long story (acp-fsm conformance: {HANG_MARKER})."
HANG_CHUNKS: Final = ("Once ", "upon ", "a time ", "there ", "was ")
CHUNK_DELAY_S: Final = 0.02
# Wire events before the hang: OpenAI's role chunk and three text chunks, or Anthropic's
# message and block starts and two text deltas; text has reached the agent either way.
HANG_AFTER: Final = 4

CALL_ID: Final = "call_acp_fsm_conformance_1"
WRITTEN: Final = "Written by the acp-fsm conformance suite.\n"
COMMAND: Final = "echo acp-fsm-conformance"
DONE_TEXT: Final = "Done."
NO_TOOL: Final = "acp-fsm conformance found no tool to"
_WRITE: Final = re.compile(r"acp-fsm conformance: write the file (.+?)\)")
_RUN: Final = "acp-fsm conformance: run a command"

# What a tool's name says it does, and the names its parameters go by.
_WRITES: Final = re.compile(r"write|create_file|save_file|^edit$|str_replace_based_edit", re.I)
_RUNS: Final = re.compile(r"run_command|bash|shell|exec|terminal|^run$|command", re.I)
_PATHS: Final = ("path", "file_path", "filepath", "file", "filename", "absolute_path", "target")
_CONTENTS: Final = ("content", "contents", "file_text", "text", "data", "body", "new_content")
_COMMANDS: Final = ("command", "cmd", "script", "commandline", "command_line")
_NOTES: Final = ("description", "reason", "explanation", "summary", "title")


def write_prompt(path: str) -> str:
    """A prompt the model answers by writing `WRITTEN` to `path` with the agent's tool."""
    return f"Create the file {path} (acp-fsm conformance: write the file {path})."


def run_prompt() -> str:
    """A prompt the model answers by running `COMMAND` with the agent's tool."""
    return f"Run `{COMMAND}` ({_RUN})."


def answer(request: RecordedRequest) -> Scripted:
    """The reply to one model call (OpenAI Chat Completions or Responses, Anthropic)."""
    body = request.body if isinstance(request.body, dict) else {}
    conversation = body.get("messages", body.get("input"))
    said = json.dumps(conversation)
    last = json.dumps(conversation[-1] if isinstance(conversation, list) and conversation else None)
    if HANG_MARKER in last:
        return Reply(text=HANG_CHUNKS, fault=Hang(HANG_AFTER))
    wanted = _WRITE.search(said)
    if wanted is None and _RUN not in said:
        return Reply(text=CHUNKS, delay_s=CHUNK_DELAY_S)
    if CALL_ID in said:  # the call was made: its result is in
        return Reply(text=DONE_TEXT)
    tools = dict(_tools(body.get("tools")))
    what = "write a file" if wanted else "run a command"
    call = _call(tools, wanted.group(1) if wanted else None)
    if call is None:
        names = ", ".join(tools) or "none offered"
        return Reply(text=f"{NO_TOOL} {what} among the agent's tools ({names}).")
    return Reply(calls=(call,))


def _tools(listed: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each offered tool's name and parameters' JSON Schema, whatever the wire format."""
    for tool in _list(listed):
        function = _dict(tool).get("function", tool)
        name = _dict(function).get("name")
        if isinstance(name, str):
            yield name, _dict(function.get("parameters", function.get("input_schema")))


def _call(tools: dict[str, dict[str, Any]], path: str | None) -> Call | None:
    """The call of the first tool that writes `path` (or, with no path, runs `COMMAND`)
    whose required parameters can all be filled."""
    pattern = _WRITES if path is not None else _RUNS
    for name, schema in tools.items():
        if pattern.search(name) and (arguments := _arguments(schema, path)) is not None:
            return Call(CALL_ID, name, json.dumps(arguments))
    return None


def _arguments(schema: dict[str, Any], path: str | None) -> dict[str, Any] | None:
    """Arguments for a tool of that schema: the path and content to write, or the command;
    a required parameter of no known meaning makes it unusable (None)."""
    properties = _dict(schema.get("properties"))
    wanted = (_PATHS, _CONTENTS) if path is not None else (_COMMANDS,)
    arguments: dict[str, Any] = {}
    for names in wanted:
        key = next((k for k in properties if k.lower() in names), None)
        if key is None:
            return None
        arguments[key] = _value(properties[key], names, path)
    for key in map(str, _list(schema.get("required"))):
        if key in arguments:
            continue
        value = _filler(key, _dict(properties.get(key)))
        if value is None:
            return None
        arguments[key] = value
    return arguments


def _value(spec: Any, names: tuple[str, ...], path: str | None) -> Any:
    if names is _PATHS:
        return path
    if names is _CONTENTS:
        return WRITTEN
    return COMMAND.split() if isinstance(spec, dict) and spec.get("type") == "array" else COMMAND


def _filler(key: str, spec: dict[str, Any]) -> Any:
    """A value for another required parameter: the "create" of a command enum, a short note,
    false; None when its meaning is unknown."""
    choices = spec.get("enum")
    if isinstance(choices, list):
        return next((c for c in ("create", "write") if c in choices), None)
    if spec.get("type") == "boolean":
        return False
    if key.lower() in _NOTES:
        return "acp-fsm conformance"
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
