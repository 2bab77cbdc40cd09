"""The rules the real APIs enforce before they stream anything: the API key, the request's
shape, and how tool calls and their results must pair up. A request that breaks one raises
`Rejection`, carrying the API's own 4xx error to answer with, so a client that would be
rejected in production is rejected here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acp_fsm.providers.scripted.script import HttpError


class Rejection(Exception):
    """A request the real API would refuse; carries the HttpError to answer with."""

    def __init__(self, error: HttpError) -> None:
        super().__init__(error.message)
        self.error = error


def reject(message: str, status: int = 400, error_type: str = "invalid_request_error",
           code: str | None = None) -> Rejection:
    return Rejection(HttpError(status, message, error_type, code))


def _mask(key: str) -> str:
    return f"{key[:3]}***{key[-4:]}" if len(key) > 8 else "***"


# ---------------------------------------------------------------------------------- OpenAI


def _openai_unanswered(ids: Sequence[str]) -> str:
    return ("An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(ids)}")


class OpenAiRules:
    """Chat Completions: a Bearer key; a model, messages and `stream: true`; every assistant
    message with `tool_calls` followed by one tool message per call."""

    def authenticate(self, headers: Mapping[str, str], key: str) -> None:
        auth = headers.get("authorization", "")
        if not auth:
            raise reject("You didn't provide an API key. You need to provide your API key in "
                          "an Authorization header using Bearer auth (i.e. Authorization: "
                          "Bearer YOUR_KEY).", 401)
        given = auth.removeprefix("Bearer ")
        if given != key:
            raise reject(f"Incorrect API key provided: {_mask(given)}. You can find your API "
                          "key at https://platform.openai.com/account/api-keys.", 401,
                          code="invalid_api_key")

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        if not isinstance(body, dict):
            raise reject("We could not parse the JSON body of your request.")
        if not body.get("model"):
            raise reject("you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise reject("Missing required parameter: 'messages'.",
                          code="missing_required_parameter")
        if body.get("stream") is not True:
            raise reject("this scripted provider only streams: set 'stream': true")
        self._check_pairing(messages)

    @staticmethod
    def _check_pairing(messages: list[Any]) -> None:
        pending: list[str] = []
        for message in messages:
            role = message.get("role") if isinstance(message, dict) else None
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    raise reject("Invalid parameter: messages with role 'tool' must be a "
                                  "response to a preceeding message with 'tool_calls'.")
                pending.remove(call_id)
                continue
            if pending:
                raise reject(_openai_unanswered(pending))
            if role == "assistant":
                pending = [str(c.get("id")) for c in message.get("tool_calls") or ()]
        if pending:
            raise reject(_openai_unanswered(pending))


# ------------------------------------------------------------------------------- Anthropic


def _anthropic_unanswered(index: int, ids: Sequence[str]) -> str:
    return (f"messages.{index}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(ids)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message.")


MAX_CACHE_BREAKPOINTS = 4


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

    def validate(self, headers: Mapping[str, str], body: Any) -> None:
        if "anthropic-version" not in headers:
            raise reject("anthropic-version: header is required")
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

    @staticmethod
    def _check_cache_control(body: dict[str, Any]) -> None:
        """At most 4 cache breakpoints, of type `ephemeral`, none on a thinking block."""
        system = body.get("system")
        blocks = [*(system if isinstance(system, list) else ()), *(body.get("tools") or ()),
                  *(b for m in body["messages"] if isinstance(m, dict) for b in _blocks(m))]
        marked = [b for b in blocks if isinstance(b, dict) and "cache_control" in b]
        if len(marked) > MAX_CACHE_BREAKPOINTS:
            raise reject(f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may "
                         f"be provided. Found {len(marked)}.")
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
                raise reject('messages: roles must alternate between "user" and "assistant", '
                              f'but found multiple "{role}" roles in a row')
            previous = role

    @staticmethod
    def _check_blocks(i: int, message: dict[str, Any]) -> None:
        for j, block in enumerate(_blocks(message)):
            kind = block.get("type")
            if kind == "thinking" and not block.get("signature"):
                raise reject(f"messages.{i}.content.{j}.thinking.signature: Field required")
            if kind == "text" and not str(block.get("text", "")).strip():
                raise reject(f"messages.{i}: text content blocks must contain non-whitespace "
                              "text")
            if kind == "tool_result" and not block.get("content"):
                raise reject(f"messages.{i}.content.{j}.tool_result.content: a tool_result "
                              "must not be empty")
            if kind in ("thinking", "redacted_thinking", "tool_use") and message["role"] != (
                    "assistant"):
                raise reject(f"messages.{i}.content.{j}: `{kind}` blocks are only allowed in "
                              "assistant messages")

    @staticmethod
    def _check_results(i: int, message: dict[str, Any], previous: dict[str, Any]) -> None:
        """Every tool_result of a user message answers a tool_use of the message before."""
        ids = _tool_use_ids(previous)
        for j, block in enumerate(_blocks(message)):
            use_id = str(block.get("tool_use_id"))
            if block.get("type") == "tool_result" and use_id not in ids:
                raise reject(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                              f"`tool_result` blocks: {use_id}. Each `tool_result` block must "
                              "have a corresponding `tool_use` block in the previous message.")

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
