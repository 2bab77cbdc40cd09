"""The rules the real APIs enforce before they stream anything: the API key, the request's
shape, how tool calls and their results must pair up, the options (`tool_choice`, reasoning,
thinking) and, when the server has one, the context window. A request that breaks one raises
`Rejection`, carrying the API's own 4xx error to answer with, so a client that would be
rejected in production is rejected here."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from acp_fsm.devkit.provider.script import HttpError
from acp_fsm.devkit.provider.wire import json_text, unsealed


class Rejection(Exception):
    """A request the real API would refuse; carries the HttpError to answer with."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.message)
        self.error = error


def reject(
    message: str,
    status: int = 400,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> Rejection:
    return Rejection(HttpError(status, message, error_type, code, param=param))


def _mask(key: str) -> str:
    return f"{key[:3]}***{key[-4:]}" if len(key) > 8 else "***"


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def estimate_tokens(body: Any) -> int:
    """The prompt tokens the scripted provider counts for a request body: ceil(n / 4), where n
    is the number of characters of the compact JSON text (`json_text`) of its `system`,
    `messages` and `tools` (the Responses API's `instructions` and `input`), each counted when
    present (0 for a body that is not an object)."""
    if not isinstance(body, dict):
        return 0
    keys = ("system", "instructions", "messages", "input", "tools")
    parts = (json_text(body[key]) for key in keys if key in body)
    return math.ceil(sum(map(len, parts)) / 4)


# ---------------------------------------------------------------------------------- OpenAI


def _openai_unanswered(ids: Sequence[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {', '.join(ids)}"
    )


OPENAI_TOOL_CHOICES = ("none", "auto", "required")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")


def _invalid_value(param: str, value: Any, supported: Sequence[str]) -> Rejection:
    """OpenAI's message for a value outside an enum: "Supported values are: 'a', 'b', and 'c'."""
    quoted = [f"'{v}'" for v in supported]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])}, and {quoted[-1]}"
    return reject(
        f"Invalid value: '{value}'. Supported values are: {listed}.",
        code="invalid_value",
        param=param,
    )


class OpenAiRules:
    """Chat Completions: a Bearer key; a model, messages and `stream: true`; every assistant
    message with `tool_calls` followed by one tool message per call."""

    def authenticate(self, headers: Mapping[str, str], key: str) -> None:
        auth = headers.get("authorization", "")
        if not auth:
            raise reject(
                "You didn't provide an API key. You need to provide your API key in "
                "an Authorization header using Bearer auth (i.e. Authorization: "
                "Bearer YOUR_KEY).",
                401,
            )
        given = auth.removeprefix("Bearer ")
        if given != key:
            raise reject(
                f"Incorrect API key provided: {_mask(given)}. You can find your API "
                "key at https://platform.openai.com/account/api-keys.",
                401,
                code="invalid_api_key",
            )

    def check_headers(self, headers: Mapping[str, str]) -> None:
        """Chat Completions needs no header but the key."""

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        if not isinstance(body, dict):
            raise reject("We could not parse the JSON body of your request.")
        if not body.get("model"):
            raise reject("you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise reject(
                "Missing required parameter: 'messages'.", code="missing_required_parameter"
            )
        if body.get("stream") is not True:
            raise reject("this scripted provider only streams: set 'stream': true")
        self._check_pairing(messages)
        self._check_options(body)

    @staticmethod
    def _check_pairing(messages: list[Any]) -> None:
        pending: list[str] = []
        for message in messages:
            role = message.get("role") if isinstance(message, dict) else None
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    raise reject(
                        "Invalid parameter: messages with role 'tool' must be a "
                        "response to a preceeding message with 'tool_calls'."
                    )
                pending.remove(call_id)
                continue
            if pending:
                raise reject(_openai_unanswered(pending))
            if role == "assistant":
                pending = [str(c.get("id")) for c in message.get("tool_calls") or ()]
        if pending:
            raise reject(_openai_unanswered(pending))

    @staticmethod
    def _check_options(body: dict[str, Any]) -> None:
        """`tool_choice` (only with tools) and `reasoning_effort`, when sent (null is unset)."""
        choice = body.get("tool_choice")
        if choice is not None:
            if not body.get("tools"):
                raise reject(
                    "Invalid value for 'tool_choice': 'tool_choice' is only allowed "
                    "when 'tools' are specified.",
                    param="tool_choice",
                )
            if isinstance(choice, dict):
                if choice.get("type") != "function":
                    raise _invalid_value("tool_choice.type", choice.get("type"), ("function",))
                function = choice.get("function")
                if not isinstance(function, dict) or not function.get("name"):
                    raise reject(
                        "Missing required parameter: 'tool_choice.function.name'.",
                        code="missing_required_parameter",
                        param="tool_choice.function.name",
                    )
            elif choice not in OPENAI_TOOL_CHOICES:
                raise _invalid_value("tool_choice", choice, OPENAI_TOOL_CHOICES)
        effort = body.get("reasoning_effort")
        if effort is not None and effort not in REASONING_EFFORTS:
            raise _invalid_value("reasoning_effort", effort, REASONING_EFFORTS)

    def check_context(self, body: dict[str, Any], prompt: int, window: int) -> None:
        """The prompt plus the requested completion (`max_completion_tokens`, else
        `max_tokens`, when sent) must fit the window; without a limit the prompt alone."""
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if _is_int(limit):
            over = prompt + limit > window
            detail = (
                f"you requested {prompt + limit} tokens ({prompt} in the messages, "
                f"{limit} in the completion). Please reduce the length of the messages "
                "or completion."
            )
        else:
            over = prompt > window
            detail = (
                f"your messages resulted in {prompt} tokens. Please reduce the length of "
                "the messages."
            )
        if over:
            raise reject(
                f"This model's maximum context length is {window} tokens. However, {detail}",
                code="context_length_exceeded",
                param="messages",
            )


# ---------------------------------------------------------------------------- Responses

RESPONSES_ITEM_TYPES = (
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "reasoning",
)
RESPONSES_OUTPUTS = {
    "function_call_output": "function call",
    "custom_tool_call_output": "custom tool call",
}
RESPONSES_CONTENT = {
    "user": ("input_text", "input_image"),
    "system": ("input_text",),
    "developer": ("input_text",),
    "assistant": ("output_text", "refusal"),
}


def _alone(reasoning_id: str) -> Rejection:
    return reject(
        f"Item '{reasoning_id}' of type 'reasoning' was provided without its required "
        "following item.",
        param="input",
    )


class ResponsesRules(OpenAiRules):
    """The Responses API: a Bearer key; a model, `input` and `stream: true`; known item
    types; every `function_call` (`custom_tool_call`) answered by a `function_call_output`
    (`custom_tool_call_output`) with its `call_id` before the next message, every output
    answering one; with `store: false` a reasoning item
    sent back whole (`encrypted_content`, readable by the model that made it only), and a
    function call of a response that reasoned sent back to its model after that response's
    reasoning item (`reasoning_of`, what the wire served: call_id -> (reasoning item id,
    model))."""

    def __init__(self, reasoning_of: dict[str, tuple[str, str]]) -> None:
        self.reasoning_of = reasoning_of

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        if not isinstance(body, dict):
            raise reject("We could not parse the JSON body of your request.")
        if not body.get("model"):
            raise reject("Missing required parameter: 'model'.", param="model")
        items = body.get("input")
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        if not isinstance(items, list) or not items:
            raise reject("Missing required parameter: 'input'.", param="input")
        if body.get("stream") is not True:
            raise reject("this scripted provider only streams: set 'stream': true")
        if "messages" in body:
            raise reject("Unknown parameter: 'messages'.", code="unknown_parameter")
        model = str(body["model"])
        self._check_items(items, model, store=body.get("store", True) is not False)
        self._check_sealed(items, model)
        effort = (body.get("reasoning") or {}).get("effort")
        if effort is not None and effort not in REASONING_EFFORTS:
            raise _invalid_value("reasoning.effort", effort, REASONING_EFFORTS)

    @staticmethod
    def _check_sealed(items: list[Any], model: str) -> None:
        """A reasoning item's encrypted content is readable by the model that made it only
        (a switch of model mid-conversation is refused so)."""
        for item in items:
            content = item.get("encrypted_content") if item.get("type") == "reasoning" else None
            made_by = unsealed(content) if isinstance(content, str) else None
            if made_by is not None and made_by != model:
                raise reject(
                    "The encrypted content for item "
                    f"{item.get('id')} could not be verified. Reason: Encrypted content "
                    "could not be decrypted or parsed.",
                    code="invalid_encrypted_content",
                    param="input",
                )

    def _check_items(self, items: list[Any], model: str, *, store: bool) -> None:
        pending: list[str] = []
        reasoned: set[str] = set()  # the reasoning items since the last user message or output
        follows: str | None = None  # a reasoning item that wants an output item after it
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise reject(f"Invalid type for 'input[{index}]': expected an object.")
            kind = item.get("type", "message" if "role" in item else None)
            if kind not in RESPONSES_ITEM_TYPES:
                raise _invalid_value(f"input[{index}].type", kind, RESPONSES_ITEM_TYPES)
            if follows is not None and (
                kind in RESPONSES_OUTPUTS or (kind == "message" and item.get("role") == "user")
            ):
                raise _alone(follows)
            follows = str(item.get("id")) if kind == "reasoning" else None
            if kind in RESPONSES_OUTPUTS:
                call_id = item.get("call_id")
                if call_id not in pending:
                    raise reject(
                        f"No tool call found for {RESPONSES_OUTPUTS[kind]} output with "
                        f"call_id {call_id}.",
                        param="input",
                    )
                pending.remove(call_id)
                reasoned.clear()
                continue
            if pending and kind == "message":
                raise reject(f"No tool output found for function call {pending[0]}.")
            if kind == "message":
                self._check_message(index, item)
                if item.get("role") == "user":
                    reasoned.clear()
            elif kind == "reasoning":
                if not store and not item.get("encrypted_content"):
                    raise reject(
                        f"Item with id '{item.get('id')}' not found. Items are not persisted "
                        "when `store` is set to false. Try again with `store` set to true, or "
                        "pass the item with its `encrypted_content`.",
                        param="input",
                    )
                reasoned.add(str(item.get("id")))
            else:
                call_id = str(item.get("call_id"))
                # the reasoning a call came with, wanted back by the model that made both
                made, by = self.reasoning_of.get(call_id, (None, None))
                wanted = made if by == model else None
                if not store and wanted is not None and wanted not in reasoned:
                    raise reject(
                        f"Item '{call_id}' of type '{kind}' was provided without its "
                        f"required 'reasoning' item: '{wanted}'.",
                        param="input",
                    )
                pending.append(call_id)
        if follows is not None:
            raise _alone(follows)
        if pending:
            raise reject(f"No tool output found for function call {pending[0]}.")

    @staticmethod
    def _check_message(index: int, item: dict[str, Any]) -> None:
        role = item.get("role")
        if role not in RESPONSES_CONTENT:
            raise _invalid_value(f"input[{index}].role", role, tuple(RESPONSES_CONTENT))
        content = item.get("content")
        if isinstance(content, str):
            return
        for n, part in enumerate(content if isinstance(content, list) else [None]):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind not in RESPONSES_CONTENT[str(role)]:
                supported = RESPONSES_CONTENT[str(role)]
                raise _invalid_value(f"input[{index}].content[{n}].type", kind, supported)

    def check_context(self, body: dict[str, Any], prompt: int, window: int) -> None:
        """As Chat Completions', with `max_output_tokens` as the output limit."""
        super().check_context({"max_tokens": body.get("max_output_tokens")}, prompt, window)


# ------------------------------------------------------------------------------- Anthropic


def _anthropic_unanswered(index: int, ids: Sequence[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
        f"immediately after: {', '.join(ids)}. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message."
    )


MAX_CACHE_BREAKPOINTS = 4
MIN_THINKING_BUDGET = 1024
ANTHROPIC_TOOL_CHOICES = ("auto", "any", "tool", "none")
THINKING_DOCS = (
    "Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


def _tagged(field: str, value: Any, tags: Sequence[str]) -> str:
    """The `type` of a tagged-union field, refused the way the API's validator words it."""
    if not isinstance(value, dict):
        raise reject(
            f"{field}: Input should be a valid dictionary or object to extract fields from"
        )
    tag = value.get("type")
    if tag not in tags:
        expected = ", ".join(f"'{t}'" for t in tags)
        raise reject(
            f"{field}: Input tag '{tag}' found using 'type' does not match any of the "
            f"expected tags: {expected}"
        )
    return str(tag)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    if message.get("role") != "assistant":
        return []
    return [str(b.get("id")) for b in _blocks(message) if b.get("type") == "tool_use"]


class AnthropicRules:
    """The Messages API: an `x-api-key` and `anthropic-version`; model, max_tokens, messages
    and `stream: true`; alternating roles; every tool_use answered at the start of the next
    message, every tool_result answering one."""

    def authenticate(self, headers: Mapping[str, str], key: str) -> None:
        given = headers.get("x-api-key")
        if given is None:
            raise reject("x-api-key header is required", 401, "authentication_error")
        if given != key:
            raise reject("invalid x-api-key", 401, "authentication_error")

    def check_headers(self, headers: Mapping[str, str]) -> None:
        if "anthropic-version" not in headers:
            raise reject("anthropic-version: header is required")

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        self.check_headers(headers)
        if not isinstance(body, dict):
            raise reject("Invalid JSON in request body")
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                raise reject(f"{name}: Field required")
        limit = body["max_tokens"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise reject("max_tokens: Input should be a valid integer greater than 0")
        if body.get("stream") is not True:
            raise reject("this scripted provider only streams: set 'stream': true")
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            raise reject("messages: at least one message is required")
        self._check_roles(messages)
        self._check_cache_control(body)
        for i, message in enumerate(messages):
            self._check_blocks(i, message)
            previous = messages[i - 1] if i else {}
            following = messages[i + 1] if i + 1 < len(messages) else {}
            if message["role"] == "user":
                self._check_results(i, message, previous)
            else:
                self._check_answered(i, message, following)
        self._check_tools_defined(body)
        self._check_thinking(body, self._tool_choice(body))

    def check_context(self, body: dict[str, Any], prompt: int, window: int) -> None:
        """The prompt must fit the window, and so must the prompt plus `max_tokens`."""
        limit = body["max_tokens"]
        if prompt > window:
            raise reject(f"prompt is too long: {prompt} tokens > {window} maximum")
        if prompt + limit > window:
            raise reject(
                f"input length and `max_tokens` exceed context limit: {prompt} + "
                f"{limit} > {window}, decrease input length or `max_tokens` and try "
                "again"
            )

    @staticmethod
    def _check_tools_defined(body: dict[str, Any]) -> None:
        kinds = {b.get("type") for m in body["messages"] for b in _blocks(m)}
        if kinds & {"tool_use", "tool_result"} and not body.get("tools"):
            raise reject(
                "Requests which include `tool_use` or `tool_result` blocks must define tools."
            )

    @staticmethod
    def _tool_choice(body: dict[str, Any]) -> str | None:
        """The type of `tool_choice` when sent (null is unset)."""
        choice = body.get("tool_choice")
        if choice is None:
            return None
        kind = _tagged("tool_choice", choice, ANTHROPIC_TOOL_CHOICES)
        if kind == "tool" and "name" not in choice:
            raise reject("tool_choice.tool.name: Field required")
        return kind

    @staticmethod
    def _check_thinking(body: dict[str, Any], tool_choice: str | None) -> None:
        """`thinking`, when sent: disabled, adaptive (Claude 4.6 on: the model decides how
        much to think), or enabled with a budget of at least 1024 below `max_tokens`; on, it
        forbids forced tool use and a temperature other than 1; enabled, a tool loop owes
        the model's thinking back."""
        thinking = body.get("thinking")
        if thinking is None:
            return
        kind = _tagged("thinking", thinking, ("enabled", "disabled", "adaptive"))
        if kind == "disabled":
            return
        if kind == "enabled":  # its fields are checked before the request's other rules
            AnthropicRules._check_budget(body, thinking)
        if tool_choice in ("any", "tool"):
            raise reject("Thinking may not be enabled when tool_choice forces tool use.")
        if body.get("temperature") not in (None, 1):
            raise reject(
                "`temperature` may only be set to 1 when thinking is enabled. "
                f"{THINKING_DOCS}#important-considerations-when-using-extended-thinking"
            )
        if kind == "enabled":  # adaptive: the model may not think, so no block is owed
            AnthropicRules._check_thinking_loop(body["messages"])

    @staticmethod
    def _check_budget(body: dict[str, Any], thinking: dict[str, Any]) -> None:
        """An enabled thinking's `budget_tokens`: at least 1024, below `max_tokens`."""
        if "budget_tokens" not in thinking:
            raise reject("thinking.enabled.budget_tokens: Field required")
        budget = thinking["budget_tokens"]
        if not _is_int(budget):
            raise reject("thinking.enabled.budget_tokens: Input should be a valid integer")
        if budget < MIN_THINKING_BUDGET:
            raise reject(
                "thinking.enabled.budget_tokens: Input should be greater than or equal "
                f"to {MIN_THINKING_BUDGET}"
            )
        if body["max_tokens"] <= budget:
            raise reject(
                "`max_tokens` must be greater than `thinking.budget_tokens`. "
                f"{THINKING_DOCS}#max-tokens-and-context-window-size"
            )

    @staticmethod
    def _check_thinking_loop(messages: list[dict[str, Any]]) -> None:
        """With thinking enabled, a request continuing a tool loop (its last message opens with
        tool results) must send back the thinking block that opened the assistant message
        holding the calls."""
        results = _blocks(messages[-1])
        if len(messages) < 2 or not results or results[0].get("type") != "tool_result":
            return
        calls = _blocks(messages[-2])
        first = calls[0].get("type") if calls else None
        if first not in ("thinking", "redacted_thinking"):
            raise reject(
                f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, "
                "a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
                "We recommend you include thinking blocks from previous turns. To "
                f"avoid this requirement, disable `thinking`. {THINKING_DOCS}"
            )

    @staticmethod
    def _check_cache_control(body: dict[str, Any]) -> None:
        """At most 4 cache breakpoints, of type `ephemeral`, none on a thinking block."""
        system = body.get("system")
        blocks = [
            *(system if isinstance(system, list) else ()),
            *(body.get("tools") or ()),
            *(b for m in body["messages"] if isinstance(m, dict) for b in _blocks(m)),
        ]
        marked = [b for b in blocks if isinstance(b, dict) and "cache_control" in b]
        if len(marked) > MAX_CACHE_BREAKPOINTS:
            raise reject(
                f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may "
                f"be provided. Found {len(marked)}."
            )
        for block in marked:
            if block.get("type") in ("thinking", "redacted_thinking"):
                raise reject("cache_control cannot be set on thinking blocks")
            control = block["cache_control"]
            if not isinstance(control, dict) or control.get("type") != "ephemeral":
                raise reject("cache_control.type: Input should be 'ephemeral'")

    @staticmethod
    def _check_roles(messages: list[Any]) -> None:
        previous = None
        for i, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                raise reject(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            if i == 0 and role != "user":
                raise reject('messages: first message must use the "user" role')
            if role == previous:
                raise reject(
                    'messages: roles must alternate between "user" and "assistant", '
                    f'but found multiple "{role}" roles in a row'
                )
            previous = role

    @staticmethod
    def _check_blocks(i: int, message: dict[str, Any]) -> None:
        for j, block in enumerate(_blocks(message)):
            kind = block.get("type")
            if kind == "thinking" and not block.get("signature"):
                raise reject(f"messages.{i}.content.{j}.thinking.signature: Field required")
            if kind == "text" and not str(block.get("text", "")).strip():
                raise reject(f"messages.{i}: text content blocks must contain non-whitespace text")
            if kind == "tool_result" and not block.get("content"):
                raise reject(
                    f"messages.{i}.content.{j}.tool_result.content: a tool_result must not be empty"
                )
            if kind in ("thinking", "redacted_thinking", "tool_use") and message["role"] != (
                "assistant"
            ):
                raise reject(
                    f"messages.{i}.content.{j}: `{kind}` blocks are only allowed in "
                    "assistant messages"
                )

    @staticmethod
    def _check_results(i: int, message: dict[str, Any], previous: dict[str, Any]) -> None:
        """Every tool_result of a user message answers a tool_use of the message before."""
        ids = _tool_use_ids(previous)
        for j, block in enumerate(_blocks(message)):
            use_id = str(block.get("tool_use_id"))
            if block.get("type") == "tool_result" and use_id not in ids:
                raise reject(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {use_id}. Each `tool_result` block must "
                    "have a corresponding `tool_use` block in the previous message."
                )

    @staticmethod
    def _check_answered(i: int, message: dict[str, Any], following: dict[str, Any]) -> None:
        """Every tool_use of an assistant message needs a tool_result among the tool_result
        blocks that open the next message (a result after other content does not count)."""
        answered: list[str] = []
        for block in _blocks(following):
            if block.get("type") != "tool_result":
                break
            answered.append(str(block.get("tool_use_id")))
        missing = [use_id for use_id in _tool_use_ids(message) if use_id not in answered]
        if missing:
            raise reject(_anthropic_unanswered(i, missing))
