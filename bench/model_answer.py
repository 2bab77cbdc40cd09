"""A model's answer as a recording proxy kept it (bench/recording_proxy.py): the tools its
request offered, its text, the calls the server returned natively, the calls its text holds
(the agent's recogniser, `acp_fsm.providers.text_calls.recognize`, over the tools offered),
a looser count of what names a tool, and what llama.cpp's server says of the work (its
`usage` and `timings`)."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any, NamedTuple

from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.openai import OpenAiParser
from acp_fsm.providers.sse import SseDecoder, json_data
from acp_fsm.providers.text_calls import recognize
from acp_fsm.providers.types import AssistantMessage, Finished, StopReason, ToolSpec
from acp_fsm.providers.written_form import TAUGHT_HEADING
from acp_fsm.tools import TOOLS, spec_of
from acp_fsm.tools.lean import LEAN, lean_spec
from bench.recording_proxy import Exchange
from bench.tally import Intended

CHAT_PATH = "/chat/completions"
# What names a tool in an answer, whether or not the recogniser takes it for a call: a JSON
# key `"name"` (a call object's; with the key after it: a definition's is "description"),
# Qwen3-Coder's `<function=NAME`, Mistral's `NAME[ARGS]`, and a Python-style `NAME(`.
_JSON_NAME = re.compile(r'"name"\s*:\s*"([^"\\\n]{1,64})"(?:\s*,\s*"(\w+)")?')
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)")
_MISTRAL_ARGS = re.compile(r"\[TOOL_CALLS\]\s*([\w.-]+)\s*\[ARGS\]")
_ARGUMENT_KEYS = ("arguments", "parameters")


class ModelAnswer(NamedTuple):
    offered: dict[str, ToolSpec]  # the tools the request offered, by name
    text: str
    native: tuple[Intended, ...]  # the calls the server returned as tool_calls
    native_ids: dict[str, str]  # their ids -> tools
    written: tuple[Intended, ...]  # the calls the recogniser finds in the text
    loose: int  # what names a tool as a call would, loosely counted
    unknown: int  # what is written as a call but names no tool (a file, a command)
    usage: dict[str, Any]
    timings: dict[str, Any]  # llama.cpp's: prompt_n, prompt_ms, predicted_n, cache_n, ...
    complete: bool  # the stream ended (not cut by a cancel)
    cut: bool  # cut short: by its length limit, or by the agent (a loop stopped, a cancel)

    @property
    def intended(self) -> tuple[Intended, ...]:
        """The calls the model meant, as the agent can know them: native ones (run alone when
        there are any), else those written in its text."""
        return self.native or self.written

    @property
    def prompt_tokens(self) -> int | None:
        """The prompt's tokens, as the server counted them."""
        tokens = self.usage.get("prompt_tokens")
        if isinstance(tokens, int):
            return tokens
        evaluated, cached = self.timings.get("prompt_n"), self.timings.get("cache_n")
        return evaluated + (cached or 0) if isinstance(evaluated, int) else None


def offered_tools(body: dict[str, Any]) -> dict[str, ToolSpec]:
    """The tools a Chat Completions request offered: declared, or in text mode listed in its
    system prompt (`acp_fsm.providers.written_form.taught`)."""
    found = _taught(body)
    for tool in body.get("tools") or ():
        function = tool.get("function") or {}
        name = function.get("name")
        if isinstance(name, str):
            schema = function.get("parameters") or {"type": "object", "properties": {}}
            found[name] = ToolSpec(name, function.get("description") or "", schema)
    return found


_TAUGHT = re.compile(r"^- ([\w-]+): ", re.MULTILINE)


def _taught(body: dict[str, Any]) -> dict[str, ToolSpec]:
    """The agent's tools a text-mode request's system prompt lists (no tool declared)."""
    if body.get("tools"):
        return {}
    system = next(
        (m.get("content") for m in body.get("messages") or () if m.get("role") == "system"), ""
    )
    if not isinstance(system, str) or TAUGHT_HEADING not in system:
        return {}
    listed = _TAUGHT.findall(system.split(TAUGHT_HEADING, 1)[1])
    return {
        n: lean_spec(TOOLS[n]) if n in LEAN else spec_of(TOOLS[n]) for n in listed if n in TOOLS
    }


def loose_count(text: str, names: Collection[str]) -> tuple[int, int]:
    """How many places of `text` name one of `names` as a call would — a `"name"` key (not
    a definition's), a `<function=NAME`, a `NAME[ARGS]`, a `NAME(` — and how many name no
    tool where a call's arguments follow (`{"name": "greet.py", "arguments": …}`). A call
    written again word for word in one answer is counted once, as the recogniser runs it."""
    tools: set[str] = set()
    unknown: set[str] = set()
    for match in _JSON_NAME.finditer(text):
        name, after = match.group(1), match.group(2)
        if after == "description":  # a tool's definition
            continue
        if name in names:
            tools.add(_line_from(text, match.start()))
        elif after in _ARGUMENT_KEYS:
            unknown.add(_line_from(text, match.start()))
    for pattern in (_FUNCTION_TAG, _MISTRAL_ARGS):  # each place (their calls span lines)
        for match in pattern.finditer(text):
            found_in = tools if match.group(1) in names else unknown
            found_in.add(f"{match.start()}")
    found = len(tools)
    if names:
        called = re.compile(rf"\b(?:{'|'.join(map(re.escape, sorted(names)))})\s*\(")
        found += len(called.findall(text))
    return found, len(unknown)


def _line_from(text: str, start: int) -> str:
    """`text` from `start` to its line's end: one call, as written."""
    end = text.find("\n", start)
    return text[start : None if end < 0 else end]


def read_answer(exchange: Exchange) -> ModelAnswer | None:
    """The model's answer in a Chat Completions exchange (None for any other request, or an
    answer that is not a stream)."""
    if not exchange.path.split("?")[0].endswith(CHAT_PATH) or exchange.status != 200:
        return None
    body = json.loads(exchange.body)
    offered = offered_tools(body)
    message, usage, timings, complete = _stream(bytes(exchange.response))
    native = tuple(Intended(c.name, c.arguments) for c in message.tool_calls)
    text = message.text
    cut = message.stop_reason is StopReason.MAX_TOKENS or not complete
    found = recognize(text, offered, cut=cut).calls
    written = tuple(Intended(c.name, c.arguments) for c in found)
    loose, unknown = loose_count(text, set(offered) | set(TOOLS))
    return ModelAnswer(
        offered,
        text,
        native,
        {c.id: c.name for c in message.tool_calls},
        written,
        max(loose, len(native) + len(written)),
        unknown,
        usage,
        timings,
        complete,
        cut,
    )


def _stream(raw: bytes) -> tuple[AssistantMessage, dict[str, Any], dict[str, Any], bool]:
    """An OpenAI stream's message (what came of it, when it was cut), its usage and timings,
    and whether it ended."""
    decoder, parser = SseDecoder(), OpenAiParser()
    usage: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    try:
        for event in [*decoder.feed(raw), *decoder.close()]:
            parser.feed(event)
            if event.data != "[DONE]":
                chunk = json_data(event)
                usage = chunk.get("usage") or usage
                timings = chunk.get("timings") or timings
        ended = [e for e in parser.end() if isinstance(e, Finished)]
    except (ProviderError, ValueError):
        return parser.builder.message(), usage, timings, False
    return ended[0].message, usage, timings, True
