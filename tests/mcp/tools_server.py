"""A real MCP server for the tests, written with the SDK's MCPServer:
`python tests/mcp/tools_server.py [stdio | http PORT | sse PORT]`. Its tools cover what the
agent must handle: a plain result, a read-only tool, an error result, an image, progress, a
changing tool list, a slow call that records its own cancellation, questions to the user
(elicitation: a choice, a form of two fields), and a crash."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

app = MCPServer("tools")
# Where the slow tool notes that it was cancelled (the server's own view of a cancel).
MARKS = Path(os.environ.get("TOOLS_SERVER_MARKS", os.devnull))
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    print(f"add {a} {b}", file=sys.stderr, flush=True)
    return a + b


@app.tool(annotations=ToolAnnotations(title="Echo back", read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text (read-only)."""
    return text


@app.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"failed on purpose: {reason}")


@app.tool()
def image() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG_1X1, format="png")


@app.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _mark("slow cancelled")
        raise
    return "slept"


@app.tool()
async def steps(ctx: Context) -> str:
    """Three steps, each reported as progress."""
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"step {step}")
    return "three steps"


def late(word: str) -> str:
    """A tool that exists once `grow` has run."""
    return word.upper()


@app.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `late` and say that the tools changed."""
    app.add_tool(late)
    await ctx.session.send_tool_list_changed()
    return "grown"


class Colour(BaseModel):
    colour: Literal["red", "green", "blue"] = Field(description="The colour to paint")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age", ge=0)


@app.tool()
async def paint(ctx: Context) -> str:
    """Ask the user which colour, then paint."""
    answer = await ctx.elicit("Which colour should I paint it?", Colour)
    return f"painted {answer.data.colour}" if answer.action == "accept" else answer.action


@app.tool()
async def register(ctx: Context) -> str:
    """Ask the user for a name and an age."""
    answer = await ctx.elicit("Who are you?", Person)
    if answer.action == "accept":
        return f"registered {answer.data.name}, {answer.data.age}"
    return answer.action


def _mark(line: str) -> None:
    with MARKS.open("a") as marks:
        marks.write(line + "\n")


@app.tool()
def crash() -> str:
    """The server dies."""
    print("crashing now", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1:2] == ["sse"]:
        app.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    elif os.environ.get("TOOLS_SERVER_STUBBORN"):  # outlives its stdin and ignores SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        app.run("stdio")
        time.sleep(120)
    else:
        app.run("stdio")
