"""The rules OpenAI's APIs enforce before they stream anything: Chat Completions
(`OpenAiRules`) and Responses (`ResponsesRules`); `rules` says what a rule is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acp_fsm.devkit.provider.openai_wire import unsealed
from acp_fsm.devkit.provider.rules import Rejection, is_int, mask, reject


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
                f"Incorrect API key provided: {mask(given)}. You can find your API "
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
        if is_int(limit):
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
