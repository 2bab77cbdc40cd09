"""The rules Anthropic's Messages API enforces before it streams anything
(`AnthropicRules`); `rules` says what a rule is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acp_fsm.devkit.provider.rules import is_int, reject


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
        if not is_int(budget):
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
