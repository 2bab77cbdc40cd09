"""OpenAI Responses API, streaming (`POST /responses`; also vLLM, Ollama and other servers
that serve it): the API GPT-5 and the codex models are at their best on.

Nothing is stored on OpenAI's side (`store: false`): the model's reasoning comes back as
reasoning items with their `encrypted_content`, kept on the assistant message
(`ThinkingPart.item`, stored with the transcript) and sent back in place, before the items of
their response, so a tool loop goes on with the reasoning of its first call. An item that came
without `encrypted_content` is never sent back: nothing could resolve it (`_resolvable`).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from acp_fsm.providers.assemble import MessageBuilder
from acp_fsm.providers.config import ProviderConfig, reasons
from acp_fsm.providers.encoder import Encoder, Scrub, encoder_of, splice
from acp_fsm.providers.errors import ProviderError, truncated
from acp_fsm.providers.openai import (
    CACHE_KEY,
    CACHE_KEY_MAX,
    EMPTY_RESULT,
    arguments_of,
    bearer_headers,
    detail,
    http_error,
    made_up_call_id,
    stream_error,
)
from acp_fsm.providers.sse import SseEvent, json_data
from acp_fsm.providers.types import (
    AssistantMessage,
    Event,
    Finished,
    ImagePart,
    Message,
    ModelRequest,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    UserMessage,
)

NAME = "openai"
WIRE = "openai-responses"  # the key of this wire's encoder in a request's memo
INPUT = "input"  # the body's key of the conversation's items
ENCRYPTED_REASONING = "reasoning.encrypted_content"
TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
SUMMARY_PARTS_APART = "\n\n"  # between the parts of a reasoning summary, as streamed
SUMMARY_PARAM = "reasoning.summary"
# The thought's deltas: OpenAI's reasoning summary; a compatible server's reasoning itself.
THOUGHT_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
# The servers that refused to summarise the reasoning (OpenAI, for an organization it has not
# verified): not asked again in this process.
_NO_SUMMARIES: set[str] = set()
# Why a response is incomplete (`incomplete_details.reason`) as a stop reason.
INCOMPLETE_REASONS = {
    "max_output_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


def origin_of(config: ProviderConfig, model: str) -> str:
    """Who can read a reasoning item back: the server and the model that made it (another
    model, or another account's server, refuses its encrypted content)."""
    return f"{config.base_url} {model}"


def _convert(message: Message, origin: str | None = None) -> list[dict[str, Any]]:
    """One neutral message as input items: a user message; an assistant message's parts in
    order (the reasoning items `origin` made, as received; texts as one output message; each
    tool call a `function_call`); each tool result a `function_call_output`."""
    if isinstance(message, UserMessage):
        return [{"type": "message", "role": "user", "content": _user_content(message)}]
    if isinstance(message, AssistantMessage):
        return _assistant(message, origin)
    return [
        {"type": "function_call_output", "call_id": r.call_id, "output": r.content or EMPTY_RESULT}
        for r in message.results
    ]


def _never(last: dict[str, Any], wire: dict[str, Any]) -> bool:
    """Items are never merged: the API takes user messages in a row."""
    return False


def _user_content(message: UserMessage) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = f"data:{part.mime_type};base64,{part.data}"
            content.append({"type": "input_image", "image_url": url})
    return content


def _assistant(message: AssistantMessage, origin: str | None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        text = "\n\n".join(t for t in texts if t)
        texts.clear()
        if text.strip():
            content = [{"type": "output_text", "text": text, "annotations": []}]
            items.append({"type": "message", "role": "assistant", "content": content})

    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
            continue
        flush()
        if isinstance(part, ThinkingPart):
            # another API's thinking, another model's reasoning: nothing it can read
            if part.item is not None and origin is not None and part.origin == origin:
                item = json.loads(part.item)
                if _resolvable(item):
                    items.append(item)
        elif isinstance(part, ToolCallPart):
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": arguments_of(part),
                }
            )
    flush()
    # A reasoning item must be followed by an item of its response (the API refuses it
    # alone): one a cancel cut off before any text or call goes unsent.
    while items and items[-1]["type"] == "reasoning":
        items.pop()
    return items


def _resolvable(item: dict[str, Any]) -> bool:
    """Whether the API can read a reasoning item sent back: with `store: false` it reads one
    from its `encrypted_content` only. An item without it (a compatible server's, or one a
    proxy stripped) is a reference to nothing the API refuses ("Item with id 'rs_...' not
    found") in every call it is in; stored sessions hold such items too, so it is left out
    here, where every call's input is made."""
    content = item.get("encrypted_content")
    return isinstance(content, str) and bool(content)


class ResponsesWire:
    name = NAME

    def __init__(self) -> None:
        self._origin = ""  # of the reasoning items of the call built (`origin_of`)
        self._base = ""  # the base URL of the call built

    def build(
        self, request: ModelRequest, config: ProviderConfig, scrub: Scrub | None = None
    ) -> tuple[str, dict[str, str], bytes]:
        headers = bearer_headers(config)
        body: dict[str, Any] = {"model": request.model}
        if request.system:
            body["instructions"] = request.system
        body[INPUT] = None  # spliced in below, encoded once (providers.encoder)
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                    "strict": False,
                }
                for t in request.tools
            ]
            if request.answer_only:
                body["tool_choice"] = "none"
        body.update(stream=True, store=False)  # nothing kept on OpenAI's side
        # the reasoning comes back encrypted; OpenAI refuses to include it for a model that
        # does not reason (a compatible server's models are its own)
        reasoning = reasons(request.model) or not config.official
        if reasoning:
            body["include"] = [ENCRYPTED_REASONING]
        body["max_output_tokens"] = request.max_tokens
        self._base = config.base_url
        settings: dict[str, str] = {"effort": request.reasoning} if request.reasoning else {}
        summarised = request.reasoning or reasons(request.model)  # a model that reasons
        if summarised and config.base_url not in _NO_SUMMARIES:  # streamed as the thoughts
            settings["summary"] = "auto"
        if settings:
            body["reasoning"] = settings
        if request.cache_key:
            body[CACHE_KEY] = request.cache_key[:CACHE_KEY_MAX]
        # reasoning items go back to the model that made them, if it reasons (an encoder for
        # each: a switch of model leaves the other's items out)
        origin = origin_of(config, request.model) if reasoning else None
        encoded = encoder_of(
            request, f"{WIRE} {origin}", lambda: Encoder(partial(_convert, origin=origin), _never)
        ).encode(request.messages, scrub)
        self._origin = origin_of(config, request.model)
        return f"{config.base_url}/responses", headers, splice(body, encoded.json(), scrub, INPUT)

    def parse_error(self, status: int, body: bytes) -> ProviderError:
        error = http_error(NAME, status, body)
        if status == 400 and _param_of(body) == SUMMARY_PARAM:
            # an organization OpenAI has not verified gets no summaries: asked again without
            _NO_SUMMARIES.add(self._base)
            error.retryable = True
        return error

    def parser(self) -> ResponsesParser:
        return ResponsesParser(self._origin)


def _thoughts(item: dict[str, Any]) -> list[str]:
    """A reasoning item's texts: its summary's parts, else its reasoning (vLLM and Ollama
    give gpt-oss's own as `reasoning_text` content)."""
    for key in ("summary", "content"):
        texts = [
            str(p["text"]) for p in item.get(key) or () if isinstance(p, dict) and p.get("text")
        ]
        if texts:
            return texts
    return []


def _param_of(body: bytes) -> str | None:
    """The `param` an API error object names, if any."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        return None
    return str(error.get("param")) if isinstance(error, dict) else None


class ResponsesParser:
    """Responses stream events → events. Output items are told apart by `item_id`; a
    function call's arguments stream by deltas (or come whole in its `.done` item)."""

    def __init__(self, origin: str = "") -> None:
        self.builder = MessageBuilder()
        self._origin = origin
        self._finish: StopReason | None = None
        self._usage = Usage()
        self._streamed: set[str] = set()  # function calls whose arguments came by deltas
        self._thought = False  # the reasoning item under way streamed its thought

    def feed(self, event: SseEvent) -> list[Event]:
        try:
            data = json_data(event)
        except ValueError:
            raise ProviderError(NAME, f"malformed stream event: {event.data[:200]!r}") from None
        if not isinstance(data, dict):
            return []
        kind = data.get("type") or event.event
        if kind in TEXT_DELTAS:  # a refusal is the answer the user sees
            return [self.builder.text(str(data.get("delta") or ""))]
        if kind in THOUGHT_DELTAS:
            self._thought = True
            return [self.builder.thinking(str(data.get("delta") or ""))]
        if kind == "response.reasoning_summary_part.added" and data.get("summary_index"):
            # A summary's parts are its sections ("**Title**\n\nText"): a blank line apart.
            return [self.builder.thinking(SUMMARY_PARTS_APART)]
        if kind == "response.function_call_arguments.delta":
            key = str(data.get("item_id"))
            if not self.builder.has_tool(key) or not data.get("delta"):
                return []
            self._streamed.add(key)
            return [self.builder.tool_args(key, str(data["delta"]))]
        if kind == "response.output_item.added":
            return self._added(data.get("item") or {})
        if kind == "response.output_item.done":
            return self._done(data.get("item") or {})
        if kind in ("response.completed", "response.incomplete"):
            return self._completed(data.get("response") or {})
        if kind == "response.failed":
            error = (data.get("response") or {}).get("error") or {"message": "response failed"}
            raise stream_error(NAME, {"error": error})
        if kind == "error":
            raise stream_error(NAME, {"error": data.get("error") or data})
        return []  # response.created, in_progress, content_part.*, *.done texts: nothing new

    def _added(self, item: dict[str, Any]) -> list[Event]:
        """A function call begins; one a server sent without a `call_id` gets a made-up one."""
        if item.get("type") != "function_call":
            return []
        key, call_id = str(item.get("id")), str(item.get("call_id") or "") or made_up_call_id()
        return [self.builder.tool_start(key, call_id, str(item.get("name")))]

    def _done(self, item: dict[str, Any]) -> list[Event]:
        kind = item.get("type")
        if kind == "reasoning":
            # a server that streamed none of it gets its thought from the item whole
            said = [] if self._thought else _thoughts(item)
            shown = [self.builder.thinking(SUMMARY_PARTS_APART.join(said))] if said else []
            self._thought = False
            self.builder.reasoning_item(json.dumps(item), self._origin)
            return list(shown)
        if kind == "message":
            self.builder.close_block()
            return []
        if kind != "function_call":
            return []
        key = str(item.get("id"))
        events: list[Event] = []
        if not self.builder.has_tool(key):
            events += self._added(item)
        if key not in self._streamed and item.get("arguments"):
            events.append(self.builder.tool_args(key, str(item["arguments"])))
        finished = self.builder.tool_finish(key)
        return events if finished is None else [*events, finished]

    def _completed(self, response: dict[str, Any]) -> list[Event]:
        reason = (response.get("incomplete_details") or {}).get("reason")
        if response.get("status") == "incomplete" or reason:
            self._finish = INCOMPLETE_REASONS.get(str(reason), StopReason.MAX_TOKENS)
        elif self.builder.message().tool_calls:
            self._finish = StopReason.TOOL_USE
        else:
            self._finish = StopReason.END_TURN
        usage = response.get("usage")
        if not isinstance(usage, dict):
            return []
        # `input_tokens` counts the cached ones too, as `Usage` does; `output_tokens` the
        # reasoning ones.
        self._usage = Usage(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=detail(usage, "input_tokens_details", "cached_tokens"),
            thought_tokens=detail(usage, "output_tokens_details", "reasoning_tokens"),
        )
        return [self._usage]

    def end(self) -> list[Event]:
        if self._finish is None:
            raise truncated(NAME, "response.completed")
        events: list[Event] = list(self.builder.finish_tools())
        events.append(Finished(self._finish, self.builder.message(self._finish), self._usage))
        return events
