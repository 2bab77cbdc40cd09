"""The editor's MCP entries read, tool names made safe for providers, and MCP results turned
into ACP content and the model's text (pure functions, no server)."""

from __future__ import annotations

from typing import Any, cast

import mcp_types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fsm import schemas
from acp_fsm.errors import BadRequest
from acp_fsm.mcp import connection, transport
from acp_fsm.mcp.specs import MAX_TOOL_NAME, ServerSpec, server_specs, tool_name
from acp_fsm.methods import answer
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


def test_stderr_without_newlines_costs_no_memory_and_lines_stay_whole() -> None:
    lines: list[str] = []
    reader = transport.StderrLines(lines.append)
    reader.data_received(b"first li")
    reader.data_received(b"ne\nsecond\nthi")
    for _ in range(2_000):  # 16 MB without a newline
        reader.data_received(b"E" * 8192)
        assert len(reader._partial) <= reader.LIMIT
    reader.data_received(b"EEE\nafter\nlast")
    reader.eof_received()
    assert lines[:2] == ["first line", "second"]
    assert lines[2] == "thi" + "E" * (reader.LIMIT - 3)  # cut once, the rest dropped
    assert lines[3:] == ["after", "last"]


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


# Any JSON value, and values a field of an entry may hold when it is well made.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
PAIRS = st.lists(st.fixed_dictionaries({"name": st.text(max_size=3), "value": st.text(max_size=3)}))
WELL_MADE = {
    "type": st.sampled_from([None, "stdio", "http", "sse", "acp"]),
    "name": st.text(max_size=5),
    "command": st.text(max_size=5),
    "args": st.lists(st.text(max_size=3), max_size=2),
    "env": PAIRS,
    "url": st.text(max_size=5),
    "headers": PAIRS,
}
ABSENT = object()


@st.composite
def entries(draw: st.DrawFn) -> Any:
    """An `mcpServers` entry whose every field is absent, well made or any JSON value."""
    entry = {}
    for key, good in WELL_MADE.items():
        value = draw(st.one_of(st.just(ABSENT), good, JSON))
        if value is not ABSENT:
            entry[key] = value
    return draw(st.one_of(st.just(entry), JSON))


@settings(max_examples=400, deadline=None)
@given(entries())
def test_any_entry_is_a_server_or_refused_naming_its_field(entry: Any) -> None:
    """Whatever the editor sends, the parser gives a server or -32602 naming the entry's
    field (`mcpServers[0]`, `mcpServers[0].type`, ...): never another error."""
    try:
        [spec] = server_specs([entry])
    except BadRequest as exc:
        assert answer(exc).code == -32602
        assert answer(exc).message.startswith("Invalid params: mcpServers[0]")
        return
    assert spec.transport in ("stdio", "http", "sse")
    assert spec.transport == (entry.get("type") or "stdio")
    assert all(isinstance(text, str) for text in (spec.name, spec.command, spec.url, *spec.args))


@settings(max_examples=400, deadline=None)
@given(entries())
def test_an_entry_the_schema_admits_is_refused_only_for_its_type(entry: Any) -> None:
    """What ACP's schema lets through (`session/new`'s params are checked first) is a server
    unless its `type` names none this agent serves: then the error names that field."""
    params = {"cwd": "/p", "mcpServers": [entry]}
    if schemas.validate("acp.NewSessionRequest", params) is not None:
        return
    try:
        server_specs([entry])
    except BadRequest as exc:
        assert answer(exc).message.startswith(
            ("Invalid params: mcpServers[0].type: ", "Invalid params: mcpServers[0]: MCP over")
        )
        assert entry.get("type") not in (None, "stdio", "http", "sse")
