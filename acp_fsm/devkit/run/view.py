"""What a headless run shows: for people, the answer's text on stdout and its progress (tool
calls and their outcome, the plan, the agent's notices; a spinner where stderr is a terminal)
on stderr; for programs (`--json`), one JSON object a line on stdout: each `session/update`
as ACP has it (`{"type": "update", "sessionId", "update"}`), then `{"type": "result", ...}`
or `{"type": "error", ...}`."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Final, Protocol, TextIO

FRAMES: Final = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S: Final = 0.1
SHOWN_CHARS: Final = 300  # of a failed call's text, on its line


class View(Protocol):
    def update(self, params: dict[str, Any]) -> None: ...
    def result(self, result: dict[str, Any]) -> None: ...
    def error(self, code: int, message: str) -> None: ...
    def close(self) -> None: ...


class JsonView:
    """One JSON object a line on stdout, flushed as it comes."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self._out = out

    def _line(self, value: dict[str, Any]) -> None:
        self._out.write(json.dumps(value, ensure_ascii=False) + "\n")
        self._out.flush()

    def update(self, params: dict[str, Any]) -> None:
        self._line({"type": "update", **params})

    def result(self, result: dict[str, Any]) -> None:
        self._line({"type": "result", **result})

    def error(self, code: int, message: str) -> None:
        self._line({"type": "error", "code": code, "message": message})

    def close(self) -> None:
        pass


class TextView:
    """The answer on stdout, the rest on stderr (with a spinner where it is a terminal)."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self._out, self._err = out, err
        self._titles: dict[str, str] = {}
        self._ended_line = True  # the answer's text so far ends a line
        self._message: str | None = None  # the id of the message whose text came last
        self._status = "working"
        self._spinner: asyncio.Task[None] | None = None
        self._drawn = False
        if err.isatty():
            self._spinner = asyncio.get_running_loop().create_task(self._spin())

    async def _spin(self) -> None:
        """Redraw the spinner and the status, except over an answer's unfinished line (on a
        terminal both streams share)."""
        frame = 0
        while True:
            if self._ended_line or not self._out.isatty():
                self._err.write(f"\r\x1b[K{FRAMES[frame % len(FRAMES)]} {self._status}")
                self._err.flush()
                self._drawn = True
            frame += 1
            await asyncio.sleep(TICK_S)

    def _clear(self) -> None:
        if self._drawn:
            self._err.write("\r\x1b[K")
            self._err.flush()
            self._drawn = False

    def _say(self, text: str) -> None:
        """A line of progress on stderr, on a line of its own."""
        self._clear()
        if not self._ended_line and self._out.isatty() and self._err.isatty():
            self._out.write("\n")
            self._ended_line = True
        self._err.write(text + "\n")
        self._err.flush()

    def update(self, params: dict[str, Any]) -> None:
        update = params.get("update") or {}
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = update.get("content") or {}
            if content.get("type") == "text" and content.get("text"):
                self._clear()
                message = update.get("messageId")
                if message != self._message and self._message is not None:  # another message
                    self._out.write("\n" if self._ended_line else "\n\n")
                self._message = message
                self._out.write(content["text"])
                self._out.flush()
                self._ended_line = content["text"].endswith("\n")
                self._status = "answering"
        elif kind == "agent_thought_chunk":
            self._status = "thinking"
        elif kind == "tool_call":
            title = str(update.get("title") or update.get("kind") or "tool call")
            self._titles[update.get("toolCallId", "")] = title
            self._status = title
            self._say(f"• {title}")
        elif kind == "tool_call_update":
            self._call_update(update)
        elif kind == "plan":
            entries = update.get("entries") or []
            marks = {"completed": "[x]", "in_progress": "[~]"}
            lines = [
                f"  {marks.get(e.get('status'), '[ ]')} {e.get('content', '')}" for e in entries
            ]
            self._say("Plan:\n" + "\n".join(lines))
        elif kind == "notice":
            self._say(f"! {update.get('title', '')}")

    def _call_update(self, update: dict[str, Any]) -> None:
        status = update.get("status")
        title = self._titles.get(update.get("toolCallId", ""), "tool call")
        if status == "completed":
            self._say(f"  ✓ {title}")
        elif status == "failed":
            self._say(f"  ✗ {title}: {_first_text(update)}")
        elif status == "in_progress":
            self._status = title

    def result(self, result: dict[str, Any]) -> None:
        self.close()
        if not self._ended_line:
            self._out.write("\n")
            self._out.flush()
        usage = result.get("usage") or {}
        parts = [str(result.get("stopReason"))]
        if usage.get("totalTokens"):
            parts.append(f"{usage['totalTokens']:,} tokens")
        if cost := result.get("cost"):
            amount = f"{cost['amount']:.6f}".rstrip("0").rstrip(".")
            parts.append(f"{amount} {cost['currency']}")
        parts.append(f"session {result.get('sessionId')}")
        self._err.write("— " + " · ".join(parts) + "\n")
        self._err.flush()

    def error(self, code: int, message: str) -> None:
        self.close()
        self._err.write(f"acp-fsm run: {message}\n")
        self._err.flush()

    def close(self) -> None:
        if self._spinner is not None:
            self._spinner.cancel()
            self._spinner = None
        self._clear()


def _first_text(update: dict[str, Any]) -> str:
    """The first line of a failed call's text (why it failed)."""
    for block in update.get("content") or ():
        inner = block.get("content") if block.get("type") == "content" else None
        if isinstance(inner, dict) and inner.get("type") == "text":
            text = " ".join(str(inner.get("text", "")).split())
            return text[:SHOWN_CHARS] + ("…" if len(text) > SHOWN_CHARS else "")
    return "failed"
