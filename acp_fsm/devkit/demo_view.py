"""What `acp-fsm demo` shows: the editor's screen (`Viewer`), printing each message of the
agent as the link reads it, in colour on a terminal (`Style`), streamed text kept on its line
(`Console`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_fsm.devkit.editor import AgentLink, Editor


class Style:
    """ANSI styling when stdout is a terminal, plain text otherwise."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)


class Console:
    """The demo's only writer to stdout: whole lines, and the one streamed line being built.

    Streamed text goes on an open line as it arrives; `line` ends that line before printing,
    so a chunk never lands inside another line. Everything is printed when it happens (an
    inbound message when the connection reads it), so the output keeps the order of arrival.
    """

    def __init__(self) -> None:
        self._open: str | None = None  # the label of the streamed line left open

    def line(self, text: str = "") -> None:
        self.end_stream()
        print(text)

    def stream(self, label: str, text: str) -> None:
        if self._open != label:
            self.end_stream()
            print(label, end="")
            self._open = label
        print(text, end="", flush=True)

    def end_stream(self) -> None:
        if self._open is not None:
            print()
            self._open = None


class Viewer:
    """The editor's screen: prints each message of the agent when the link reads it (`watch`),
    so the output keeps the order of arrival. Its `editor` answers the agent's requests as the
    demo's user would: every tool call allowed once, files read from and saved to disk."""

    def __init__(self, project: Path, style: Style) -> None:
        self.project = project
        self.style = style
        self.out = Console()
        self.editor = Editor(default_permission="allow_once", save_to_disk=True)
        self.replayed: list[dict[str, Any]] = []
        self.replaying = False
        self.stopped = False  # the user pressed Stop in this turn: later chunks say so
        self.checked = 0  # messages of the agent checked against the project's schemas
        self.invalid: list[str] = []  # what was wrong with them
        self._titles: dict[str, str] = {}
        # (toolCallId, path, oldText, newText) of each diff shown: the agent sends an edit's
        # diff with its preview and again once applied; the screen shows one unless it changed
        self._diffs: set[tuple[str, str, str | None, str]] = set()

    def check(self, link: AgentLink) -> None:
        """Hold every message the agent wrote to the project's schemas."""
        from acp_fsm.devkit.schema_check.checker import own_problems

        self.checked += len(link.records)
        self.invalid.extend(
            f"{record.kind} {record.method}: {problem}"
            for record in link.records
            for problem in own_problems(record)
        )

    def watch(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "session/update":
            self._update(params)
        elif method == "session/request_permission":
            call = params["toolCall"]
            self.out.line(
                f"    {self.style.yellow('?')} permission asked for "
                f"{self.style.bold(call.get('title', call['toolCallId']))} → "
                f"{self.style.green('allow once')} "
                f"{self.style.dim('(answered by the demo)')}"
            )
        elif method == "fs/read_text_file":
            self._note(
                f"← fs/read_text_file {self._short(Path(params['path']))} (the editor's buffer)"
            )
        elif method == "fs/write_text_file":
            self._note(
                f"← fs/write_text_file {self._short(Path(params['path']))} (the editor saves it)"
            )

    # -- updates ----------------------------------------------------------------------

    def _update(self, params: dict[str, Any]) -> None:
        update = params["update"]
        if self.replaying:
            self.replayed.append(update)
            return
        kind = update["sessionUpdate"]
        if kind == "agent_message_chunk":
            self._stream("agent", update["content"].get("text", ""), self.style.bold)
        elif kind == "agent_thought_chunk":
            self._stream("thinking", update["content"].get("text", ""), self.style.dim)
        elif kind == "tool_call":
            self._titles[update["toolCallId"]] = update["title"]
            self.out.line(
                f"    {self.style.cyan('⚙')} {self.style.bold(update['title'])} "
                f"{self.style.dim('[' + update.get('kind', 'other') + ']')} "
                f"{self.style.dim('pending')}"
            )
        elif kind == "tool_call_update":
            self._tool_update(update)
        elif kind == "session_info_update" and update.get("title"):
            self._note(f"session title: {update['title']!r}")

    def _tool_update(self, update: dict[str, Any]) -> None:
        status = update.get("status")
        title = self._titles.get(update["toolCallId"], update["toolCallId"])
        for block in update.get("content") or ():
            shown = (
                update["toolCallId"],
                block.get("path"),
                block.get("oldText"),
                block.get("newText"),
            )
            if block.get("type") == "diff" and shown not in self._diffs:
                self._diffs.add(shown)
                self._diff(block)
        if status in ("completed", "failed"):
            mark = self.style.green("✓") if status == "completed" else self.style.red("✗")
            self.out.line(f"    {mark} {title} {self.style.dim(status)}")
            texts = [
                b["content"].get("text", "")
                for b in update.get("content") or ()
                if b.get("type") == "content"
            ]
            if status == "failed" and texts:
                self.out.line(f"      {self.style.dim(texts[0].splitlines()[0])}")

    def _diff(self, block: dict[str, Any]) -> None:
        old = (block.get("oldText") or "").splitlines()
        new = block["newText"].splitlines()
        self.out.line(f"      diff {self._short(Path(block['path']))}:")
        for line in old:
            if line not in new:
                self.out.line("      " + self.style.red(f"- {line}"))
        for line in new:
            if line not in old:
                self.out.line("      " + self.style.green(f"+ {line}"))

    def _stream(self, who: str, text: str, paint: Callable[[str], str]) -> None:
        # ACP lets the agent send updates after a cancel, until it answers the prompt.
        late = ", after the cancel" if self.stopped else ""
        label = f"  {who}{late}: " if who == "agent" else f"  ({who}{late}) "
        self.out.stream(self.style.dim(label), paint(text))

    def _note(self, text: str) -> None:
        self.out.line(f"      {self.style.dim(text)}")

    def _short(self, path: Path) -> str:
        with contextlib.suppress(ValueError):
            return str(path.relative_to(self.project))
        return str(path)
