"""The model the agent under test talks to: one scripted server for the whole run, answering
every model call (whatever model it names) from the conversation it carries.

- A prompt holding `HANG_MARKER` gets a reply that streams a few chunks and then hangs (the
  cancel checks).
- A prompt made by `write_prompt` or `run_prompt` gets one tool call, of the tool the agent
  offers that writes a file (else one that applies a patch, free-form tools of the Responses
  API included, else a shell command that writes it) or runs a command, its arguments
  filled from the tool's own JSON Schema; once the call's result is in the conversation, a
  short closing reply. An agent that offers no such tool gets `NO_TOOL` and the tools' names
  as the reply. The call opens with a thinking block when an Anthropic request turns
  thinking on, as the real model's does.
- A prompt made by `delegate_prompt` gets one call of the tool the agent offers that hands
  work to a subagent (`task`, `Task`, `Agent`, ...), given `SUBAGENT_TASK` (with
  `HANG_MARKER` when asked: the subagent's call then hangs); the subagent's call gets
  `REPORT`, and once the call's result is in the conversation, a short closing reply.
- Any other prompt gets `CHUNKS`, several chunks with a pause between them.

Nothing here knows one agent's tools: OpenAI Chat (`function.parameters`), Responses
(`parameters`) and Anthropic (`input_schema`) tool lists are read alike."""

from __future__ import annotations

import json
import re
import shlex
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
THOUGHT: Final = "The user wants one tool call; I make it."
SIGNATURE: Final = "YWNwLWZzbSBjb25mb3JtYW5jZSB0aG91Z2h0"  # opaque, as the API's are
NO_TOOL: Final = "acp-fsm conformance found no tool to"
_WRITE: Final = re.compile(r"acp-fsm conformance: write the file (.+?)\)")
_RUN: Final = "acp-fsm conformance: run a command"
_DELEGATE: Final = "acp-fsm conformance: hand it to a subagent"
DELEGATE_CALL_ID: Final = "call_acp_fsm_conformance_task"
SUBAGENT_TASK: Final = "Say one word (acp-fsm conformance: a subagent's task)."
_SUBAGENT: Final = "acp-fsm conformance: a subagent's task"
REPORT: Final = "Report of the conformance subagent."
_DELEGATES: Final = re.compile(r"^(task|agent|dispatch_agent|spawn_agent|subagent|delegate)$", re.I)
_TASKS: Final = ("prompt", "task", "message", "instructions", "query")
_LABELS: Final = ("description", "title", "name")

# What a tool's name says it does, and the names its parameters go by.
_WRITES: Final = re.compile(r"write|create_file|save_file|^edit$|str_replace_based_edit", re.I)
_RUNS: Final = re.compile(r"run_command|bash|shell|exec|terminal|^run$|command", re.I)
_PATHS: Final = ("path", "file_path", "filepath", "file", "filename", "absolute_path", "target")
_CONTENTS: Final = ("content", "contents", "file_text", "text", "data", "body", "new_content")
_COMMANDS: Final = ("command", "cmd", "script", "commandline", "command_line")
_NOTES: Final = ("description", "reason", "explanation", "summary", "title")
_PATCHES: Final = re.compile(r"(^|_)patch($|_)", re.I)  # apply_patch, not dispatch_agent
_PATCH_TEXTS: Final = ("patch", "input", "diff", "patch_text")
Wanted = tuple[tuple[tuple[str, ...], str], ...]
"""What a call needs: each value (a path, a content, a command), after the names of the
parameters it may go by."""


def write_prompt(path: str) -> str:
    """A prompt the model answers by writing `WRITTEN` to `path` with the agent's tool."""
    return f"Create the file {path} (acp-fsm conformance: write the file {path})."


def run_prompt() -> str:
    """A prompt the model answers by running `COMMAND` with the agent's tool."""
    return f"Run `{COMMAND}` ({_RUN})."


def delegate_prompt(*, hang: bool) -> str:
    """A prompt the model answers by handing `SUBAGENT_TASK` to a subagent (whose model call
    hangs with `hang`)."""
    return f"Ask a subagent for one word ({_DELEGATE}{'; it will hang' if hang else ''})."


def answer(request: RecordedRequest) -> Scripted:
    """The reply to one model call (OpenAI Chat Completions or Responses, Anthropic)."""
    body = request.body if isinstance(request.body, dict) else {}
    conversation = body.get("messages", body.get("input"))
    said = json.dumps(conversation)
    last = json.dumps(conversation[-1] if isinstance(conversation, list) and conversation else None)
    if HANG_MARKER in last:
        return Reply(text=HANG_CHUNKS, fault=Hang(HANG_AFTER))
    if _DELEGATE in said or _SUBAGENT in said:
        return _delegation(body, said)
    wanted = _WRITE.search(said)
    if wanted is None and _RUN not in said:
        return Reply(text=CHUNKS, delay_s=CHUNK_DELAY_S)
    if CALL_ID in said:  # the call was made: its result is in
        return Reply(text=DONE_TEXT)
    tools = dict(_tools(body.get("tools")))
    what = "write a file" if wanted else "run a command"
    call = _call(tools, wanted.group(1) if wanted else None, set(_free_form(body.get("tools"))))
    if call is None:
        names = ", ".join(tools) or "none offered"
        return Reply(text=f"{NO_TOOL} {what} among the agent's tools ({names}).")
    if _thinks(body):
        return Reply(calls=(call,), thinking=THOUGHT, signature=SIGNATURE)
    return Reply(calls=(call,))


def _delegation(body: dict[str, Any], said: str) -> Scripted:
    """The main model's call of the agent's subagent tool, the subagent's report, then the
    main model's closing reply."""
    if DELEGATE_CALL_ID in said:
        return Reply(text=DONE_TEXT)
    if _DELEGATE not in said:  # the subagent's own call: its task, nothing of the session
        return Reply(text=REPORT)
    task = f"{HANG_PROMPT} {SUBAGENT_TASK}" if "it will hang" in said else SUBAGENT_TASK
    for name, schema in _tools(body.get("tools")):
        wanted: Wanted = ((_TASKS, task), (_LABELS, "conformance subagent"))
        if _DELEGATES.search(name) and (arguments := _arguments(schema, wanted)) is not None:
            return Reply(calls=(Call(DELEGATE_CALL_ID, name, json.dumps(arguments)),))
    names = ", ".join(offered(body)) or "none offered"
    return Reply(text=f"{NO_TOOL} hand work to a subagent among the agent's tools ({names}).")


def _thinks(body: dict[str, Any]) -> bool:
    """Whether an Anthropic request turns thinking on: the real model then opens its reply
    with a thinking block, which a tool loop must send back."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _tools(listed: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each offered tool's name and parameters' JSON Schema, whatever the wire format."""
    for tool in _list(listed):
        function = _dict(tool).get("function", tool)
        name = _dict(function).get("name")
        if isinstance(name, str):
            yield name, _dict(function.get("parameters", function.get("input_schema")))


def offered(body: Any) -> list[str]:
    """The names of the tools a model call offers, whatever the wire format."""
    return [name for name, _ in _tools(_dict(body).get("tools"))]


def _free_form(listed: Any) -> Iterator[str]:
    """The names of the Responses API's free-form (`custom`) tools: their input is text."""
    for tool in _list(listed):
        if _dict(tool).get("type") == "custom" and isinstance(tool.get("name"), str):
            yield tool["name"]


def _call(tools: dict[str, dict[str, Any]], path: str | None, free_form: set[str]) -> Call | None:
    """The call that writes `path` (or, with no path, runs `COMMAND`): of the first tool that
    writes files, else of one that applies patches (a free-form one given the patch as its
    input), else of one that runs commands (a shell command that writes it), whose required
    parameters can all be filled."""
    if path is None:
        ways: tuple[tuple[re.Pattern[str], Wanted], ...] = ((_RUNS, ((_COMMANDS, COMMAND),)),)
    else:
        ways = (
            (_WRITES, ((_PATHS, path), (_CONTENTS, WRITTEN))),
            (_PATCHES, ((_PATCH_TEXTS, _added(path)),)),
            (_RUNS, ((_COMMANDS, _writing(path)),)),
        )
    for pattern, wanted in ways:
        for name, schema in tools.items():
            if not pattern.search(name):
                continue
            if name in free_form:
                if pattern is _PATCHES and path is not None:
                    return Call(CALL_ID, name, _added(path), custom=True)
            elif (arguments := _arguments(schema, wanted)) is not None:
                return Call(CALL_ID, name, json.dumps(arguments))
    return None


def _added(path: str) -> str:
    """A patch (the `apply_patch` format) that adds `path` holding `WRITTEN`."""
    lines = "".join(f"+{line}\n" for line in WRITTEN.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def _writing(path: str) -> str:
    """A POSIX shell command that writes `WRITTEN` to `path`."""
    line = shlex.quote(WRITTEN.removesuffix("\n"))
    return f"printf '%s\\n' {line} > {shlex.quote(path)}"


def _arguments(schema: dict[str, Any], wanted: Wanted) -> dict[str, Any] | None:
    """Arguments for a tool of that schema: each wanted value under the first parameter of one
    of its names; a wanted value with no parameter, or a required parameter of no known
    meaning, makes the tool unusable (None)."""
    properties = _dict(schema.get("properties"))
    arguments: dict[str, Any] = {}
    for names, value in wanted:
        key = next((k for k in properties if k.lower() in names), None)
        if key is None:
            return None
        arguments[key] = _shaped(_dict(properties[key]), names, value)
    for key in map(str, _list(schema.get("required"))):
        if key in arguments:
            continue
        value = _filler(key, _dict(properties.get(key)))
        if value is None:
            return None
        arguments[key] = value
    return arguments


def _shaped(spec: dict[str, Any], names: tuple[str, ...], value: str) -> Any:
    """A command as the parameter takes it: a string, or an argv (the shell's when the
    command needs one)."""
    if names is not _COMMANDS or spec.get("type") != "array":
        return value
    return value.split() if value == COMMAND else ["sh", "-c", value]


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
    if key.lower() == "subagent_type":  # Claude Code's Task/Agent tool
        return "general-purpose"
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
