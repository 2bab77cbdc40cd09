"""An MCP server's tool as the runtime sees it (`acp_fsm.tools.base.Tool`), and its results as
the editor and the model see them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

import mcp_types as types

from acp_fsm import env_vars
from acp_fsm.mcp.connection import McpCallFailed, McpConnection, McpUnavailable
from acp_fsm.tools.base import Drafts, ToolCallView, ToolEnv, ToolOutcome

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ContentBlock, ToolCallContent

EMPTY_RESULT = "(no output)"
# What ACP keeps of each MCP content block (the rest, such as icons, ACP does not define).
_ACP_FIELDS = {
    "text": ("type", "text"),
    "image": ("type", "data", "mimeType"),
    "audio": ("type", "data", "mimeType"),
    "resource_link": ("type", "name", "uri", "title", "description", "mimeType", "size"),
}
_RESOURCE_FIELDS = ("uri", "mimeType", "text", "blob")


class McpTool:
    """Tool `tool` of the server `server`, shown to the model as `name`."""

    unpredictable = True  # it may change anything, files included
    concurrent = False

    def __init__(self, server: McpConnection, tool: types.Tool, name: str) -> None:
        self.server = server
        self.tool = tool
        self.name = name
        hints = tool.annotations
        self.read_only = bool(hints and hints.read_only_hint)
        self.kind = "read" if self.read_only else "other"
        # MCP's order: the tool's title, then its annotations' title, then its name.
        self.title = tool.title or (hints.title if hints else None) or tool.name
        self.description = tool.description or f"{self.title} (MCP server {server.spec.name})"

    def __repr__(self) -> str:
        return f"<McpTool {self.name}>"

    @property
    def input_schema(self) -> dict[str, Any]:
        return model_schema(self.tool.input_schema or {})

    def validate(self, args: dict[str, Any]) -> str | None:
        return None  # the server checks its own arguments, and says what is wrong

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        return ToolCallView(f"{self.title} ({self.server.spec.name})", self.kind, raw_input=args)

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        return ()

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True  # nothing to confine it by: "always" is remembered per tool

    def always_asks(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False  # the editor configured the server: its calls follow the mode

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return not self.read_only  # a read-only tool runs without asking, like read_file

    async def run(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        timeout_ms = env_vars.mcp_call_timeout_ms()

        async def report_progress(
            progress: float, total: float | None, message: str | None
        ) -> None:
            env.report(
                (
                    {
                        "type": "content",
                        "content": {
                            "type": "text",
                            "text": progress_text(progress, total, message),
                        },
                    },
                )
            )

        try:
            result = await self.server.call(
                self.tool.name,
                args,
                env.token,
                timeout_ms / 1000 if timeout_ms else None,
                on_progress=report_progress,
                call_id=env.call_id if env.asks_user else None,
            )
        except (McpCallFailed, McpUnavailable) as exc:
            return ToolOutcome(str(exc), is_error=True)
        return outcome(result)


_COMBINATORS = ("allOf", "anyOf", "oneOf")


def model_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A server's input schema as both providers accept it: an object schema (OpenAI and
    Anthropic require `type: object`; Anthropic refuses `allOf`, `anyOf` and `oneOf` at the
    top level), without `$schema` (some OpenAI-compatible servers refuse it). Combinators at
    the top are folded into one object: every branch's properties; required, what all of
    `allOf` require, or what every branch of `anyOf` / `oneOf` requires. The server still
    checks the arguments it gets against its own schema."""
    folded = {k: v for k, v in schema.items() if k not in (*_COMBINATORS, "$schema")}
    properties = dict(folded.get("properties") or {})
    required = list(folded.get("required") or ())
    for keyword in _COMBINATORS:
        branches = [b for b in schema.get(keyword) or () if isinstance(b, dict)]
        if not branches:
            continue
        for branch in branches:
            for name, prop in (branch.get("properties") or {}).items():
                properties.setdefault(name, prop)
        sets = [set(b.get("required") or ()) for b in branches]
        needed = set.union(*sets) if keyword == "allOf" else set.intersection(*sets)
        required += sorted(needed - set(required))
    folded.update(type="object", properties=properties)
    if required:
        folded["required"] = required
    return folded


def progress_text(done: float, total: float | None, message: str | None) -> str:
    """A progress notification as one line: `message (3/10)`."""
    count = f"{done:g}/{total:g}" if total else f"{done:g}"
    return f"{message} ({count})" if message else f"Progress: {count}"


def outcome(result: types.CallToolResult) -> ToolOutcome:
    """A tool result as ACP content for the editor and text for the model."""
    blocks = [_acp_block(block) for block in result.content]
    texts = [_model_text(block) for block in result.content]
    if result.structured_content is not None and not any(
        isinstance(block, types.TextContent) for block in result.content
    ):
        structured = json.dumps(result.structured_content, ensure_ascii=False)
        texts.append(structured)
        blocks.append({"type": "text", "text": structured})
    output = "\n".join(t for t in texts if t) or EMPTY_RESULT
    content: tuple[ToolCallContent, ...] = tuple(
        {"type": "content", "content": block} for block in blocks
    )
    return ToolOutcome(output, is_error=bool(result.is_error), content=content)


def _acp_block(block: Any) -> ContentBlock:
    """An MCP content block as ACP's (the members ACP defines; checked when sent)."""
    data = block.model_dump(by_alias=True, mode="json", exclude_none=True)
    if data["type"] == "resource":
        resource = {
            key: data["resource"][key] for key in _RESOURCE_FIELDS if key in data["resource"]
        }
        return cast("ContentBlock", {"type": "resource", "resource": resource})
    return cast(
        "ContentBlock", {key: data[key] for key in _ACP_FIELDS[data["type"]] if key in data}
    )


def _model_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return (
            f"[{block.type} {block.mime_type}, {len(block.data):,} base64 characters, "
            "shown to the user]"
        )
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.name} <{block.uri}>]"
    resource = block.resource
    if isinstance(resource, types.TextResourceContents):
        return f"[resource {resource.uri}]\n{resource.text}"
    return f"[resource {resource.uri}: {resource.mime_type or 'binary'} data]"
