"""The editor's MCP entries read, tool names made safe for providers, and MCP results turned
into ACP content and the model's text (pure functions, no server)."""

from __future__ import annotations

from typing import cast

import mcp_types as types

from acp_fsm.mcp import connection
from acp_fsm.mcp.specs import MAX_TOOL_NAME, ServerSpec, server_specs, tool_name
from acp_fsm.schemas import acp_types as acp
from acp_fsm.tools.mcp import EMPTY_RESULT, McpTool, model_schema, outcome


def test_the_three_kinds_of_entry_are_read() -> None:
    assert server_specs(
        [
            {
                "name": "fs",
                "command": "/bin/fs",
                "args": ["-v"],
                "env": [{"name": "K", "value": "v"}],
            },
            {
                "type": "http",
                "name": "web",
                "url": "http://h/mcp",
                "headers": [{"name": "Authorization", "value": "Bearer t"}],
            },
            {"type": "sse", "name": "old", "url": "http://h/sse", "headers": []},
        ]
    ) == [
        ServerSpec("fs", "stdio", command="/bin/fs", args=("-v",), env=(("K", "v"),)),
        ServerSpec("web", "http", url="http://h/mcp", headers=(("Authorization", "Bearer t"),)),
        ServerSpec("old", "sse", url="http://h/sse"),
    ]


def test_tool_names_are_what_providers_accept_and_unique() -> None:
    taken: set[str] = set()
    assert tool_name("my server", "read.file", taken) == "mcp__my_server__read_file"
    assert tool_name("my.server", "read file", taken) == "mcp__my_server__read_file_2"
    long = tool_name("s", "x" * 100, taken)
    again = tool_name("s", "x" * 100, taken)
    assert len(long) == len(again) == MAX_TOOL_NAME and long != again
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in long + again)
    assert tool_name("é", "ü", set()) == "mcp______"


def test_text_results_reach_both_sides_and_errors_stay_errors() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="a"),
            types.TextContent(type="text", text="b"),
        ],
        is_error=True,
    )
    told = outcome(result)
    assert told.output == "a\nb" and told.is_error
    assert told.content == (
        {"type": "content", "content": {"type": "text", "text": "a"}},
        {"type": "content", "content": {"type": "text", "text": "b"}},
    )


def test_resources_links_audio_and_structured_content() -> None:
    result = types.CallToolResult(
        content=[
            types.ResourceLink(
                type="resource_link", name="spec", uri="file:///spec.md", mime_type="text/markdown"
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///a.txt", mime_type="text/plain", text="hello"
                ),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri="file:///b.bin", blob="AAEC"),
            ),
            types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
        ],
        structured_content={"temperature": 21},
    )
    told = outcome(result)
    assert [cast("acp.ToolCallContentContent", c)["content"] for c in told.content] == [
        {
            "type": "resource_link",
            "name": "spec",
            "uri": "file:///spec.md",
            "mimeType": "text/markdown",
        },
        {
            "type": "resource",
            "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"},
        },
        {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAEC"}},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "text", "text": '{"temperature": 21}'},  # no text block said it
    ]
    assert told.output.split("\n") == [
        "[resource link: spec <file:///spec.md>]",
        "[resource file:///a.txt]",
        "hello",
        "[resource file:///b.bin: binary data]",
        "[audio audio/wav, 8 base64 characters, shown to the user]",
        '{"temperature": 21}',
    ]
    assert not told.is_error


def test_an_empty_result_still_says_something_to_the_model() -> None:
    told = outcome(types.CallToolResult(content=[]))
    assert told.output == EMPTY_RESULT and told.content == ()


def test_a_schema_is_made_what_both_providers_accept() -> None:
    assert model_schema({}) == {"type": "object", "properties": {}}
    plain = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert model_schema(plain) == plain  # untouched
    folded = model_schema(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {"mode": {"type": "string"}},
            "anyOf": [
                {"properties": {"path": {"type": "string"}}, "required": ["path", "mode"]},
                {"properties": {"url": {"type": "string"}}, "required": ["url", "mode"]},
            ],
            "allOf": [{"properties": {"depth": {"type": "integer"}}, "required": ["depth"]}],
        }
    )
    assert folded == {
        "type": "object",
        "required": ["depth", "mode"],
        "properties": {
            "mode": {"type": "string"},
            "depth": {"type": "integer"},
            "path": {"type": "string"},
            "url": {"type": "string"},
        },
    }


class _Lines:
    """Stands where the connection receives the server's stderr lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def _stderr_line(self, line: str) -> None:
        self.lines.append(line)


def test_stderr_without_newlines_costs_no_memory_and_lines_stay_whole() -> None:
    sink = _Lines()
    reader = connection._StderrLines(sink)  # type: ignore[arg-type]
    reader.data_received(b"first li")
    reader.data_received(b"ne\nsecond\nthi")
    for _ in range(2_000):  # 16 MB without a newline
        reader.data_received(b"E" * 8192)
        assert len(reader._partial) <= reader.LIMIT
    reader.data_received(b"EEE\nafter\nlast")
    reader.eof_received()
    assert sink.lines[:2] == ["first line", "second"]
    assert sink.lines[2] == "thi" + "E" * (reader.LIMIT - 3)  # cut once, the rest dropped
    assert sink.lines[3:] == ["after", "last"]


def test_a_tools_own_title_comes_before_its_annotations_title() -> None:
    spec = ServerSpec("srv", "stdio", command="x")
    tool = types.Tool(
        name="t",
        title="Own",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(title="Annotated"),
    )
    assert McpTool(connection.McpConnection(spec, "/"), tool, "mcp__srv__t").title == "Own"
    bare = types.Tool(
        name="t",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(title="Annotated"),
    )
    assert McpTool(connection.McpConnection(spec, "/"), bare, "mcp__srv__t").title == "Annotated"
