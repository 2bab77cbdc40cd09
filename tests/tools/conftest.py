"""Fixtures for the tool tests: a session environment and an in-memory editor.

`Editor` is a small, real `ClientBridge`: a dict of open buffers (what fs/read_text_file and
fs/write_text_file see) and terminals that run real subprocesses. Every request it gets, and
every `report` of the environment, is appended to one `calls` log so tests can check order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acp_fsm.library import EMPTY, Library
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.questions import Answer, NotAskable, Question
from acp_fsm.tools import TOOLS
from acp_fsm.tools.base import Checkpoint, ToolOutcome
from acp_fsm.tools.job import BackgroundJobs

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import (
        PlanEntry,
        ToolCallContent,
        ToolCallContentDiff,
        ToolCallLocation,
    )


class EditorError(Exception):
    """What the editor answers with for a request it cannot serve (`not_found`: it says
    there is no such file, as the agent's client bridge reports it)."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    limit: int
    reader: asyncio.Task[None] | None = None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    async def pump(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(4096):
            self.output += chunk
            if len(self.output) > self.limit:  # ACP: the client drops from the beginning
                del self.output[: len(self.output) - self.limit]
                self.truncated = True

    def exit_status(self) -> dict[str, Any] | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}


class Editor:
    """An in-memory ACP client: buffers by absolute path, terminals backed by subprocesses."""

    def __init__(
        self,
        *,
        read: bool = False,
        write: bool = False,
        terminal: bool = False,
        fail_create: bool = False,
        shows_terminals: bool = False,
    ) -> None:
        self.can_read_files = read
        self.can_write_files = write
        self.has_terminal = terminal
        self.shows_terminals = shows_terminals  # ACP v2's terminals of the agent's own
        self.shows_forms = False  # questions are asked through the real agent (tests/e2e)
        self.fail_create = fail_create
        self.buffers: dict[str, str] = {}
        self.unreadable: set[str] = set()  # paths the editor fails to read
        self.terminals: dict[str, Terminal] = {}
        self.released: set[str] = set()
        self.calls: list[tuple[Any, ...]] = []
        self.waiting = asyncio.Event()  # set once an agent waits for a terminal to exit
        self._reaping: list[asyncio.Future[None]] = []

    async def ask(self, question: Question, call_id: str | None, title: str) -> Answer:
        raise NotAskable("this in-memory editor asks nothing")

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        self.calls.append(("read", path, line, limit))
        if path in self.unreadable:
            raise EditorError(f"cannot open {path}")
        if path in self.buffers:
            text = self.buffers[path]
        else:
            try:
                text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
            except FileNotFoundError as exc:
                raise EditorError(f"no such file: {path}", not_found=True) from exc
            except OSError as exc:
                raise EditorError(f"cannot open {path}") from exc
        lines = text.splitlines(keepends=True)
        start = (line or 1) - 1
        return "".join(lines[start : start + limit if limit else None])

    async def write_text_file(self, path: str, content: str) -> None:
        self.calls.append(("write", path))
        self.buffers[path] = content

    async def create_terminal(
        self, command: str, args: list[str], cwd: str, output_byte_limit: int
    ) -> str:
        self.calls.append(("create", command, tuple(args), cwd, output_byte_limit))
        if self.fail_create:
            raise EditorError("terminals are disabled")
        process = await asyncio.create_subprocess_exec(
            command,
            *args,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        terminal = Terminal(process, output_byte_limit)
        terminal.reader = asyncio.create_task(terminal.pump())
        self.terminals[terminal_id] = terminal
        return terminal_id

    def _terminal(self, terminal_id: str) -> Terminal:
        if terminal_id in self.released:
            raise EditorError(f"terminal {terminal_id} was released")
        return self.terminals[terminal_id]

    async def wait_for_terminal_exit(self, terminal_id: str) -> dict[str, Any]:
        self.calls.append(("wait", terminal_id))
        self.waiting.set()
        terminal = self._terminal(terminal_id)
        await terminal.process.wait()
        status = terminal.exit_status()
        assert status is not None
        return status

    async def terminal_output(self, terminal_id: str) -> dict[str, Any]:
        self.calls.append(("output", terminal_id))
        terminal = self._terminal(terminal_id)
        if terminal.process.returncode is not None and terminal.reader is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(terminal.reader), 1)
        return {
            "output": terminal.output.decode("utf-8", "replace"),
            "truncated": terminal.truncated,
            "exitStatus": terminal.exit_status(),
        }

    async def kill_terminal(self, terminal_id: str) -> None:
        self.calls.append(("kill", terminal_id))
        self._kill(self._terminal(terminal_id))

    async def release_terminal(self, terminal_id: str) -> None:
        self.calls.append(("release", terminal_id))
        terminal = self._terminal(terminal_id)
        self.released.add(terminal_id)
        self._kill(terminal)
        await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader

    def abandon_terminal(self, terminal_id: str) -> None:
        self.calls.append(("kill", terminal_id))
        self.calls.append(("release", terminal_id))
        terminal = self._terminal(terminal_id)
        self.released.add(terminal_id)
        self._kill(terminal)
        self._reaping.append(asyncio.ensure_future(self._reap(terminal)))

    async def _reap(self, terminal: Terminal) -> None:
        await terminal.process.wait()
        if terminal.reader is not None:
            await terminal.reader

    async def settle(self) -> None:
        """Wait until abandoned terminals' processes are reaped."""
        await asyncio.gather(*self._reaping)

    @staticmethod
    def _kill(terminal: Terminal) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(terminal.process.pid, signal.SIGKILL)

    async def close(self) -> None:
        await self.settle()
        for terminal_id in list(self.terminals):
            if terminal_id not in self.released:
                await self.release_terminal(terminal_id)

    def names(self) -> list[str]:
        """The kinds of calls made so far, in order."""
        return [call[0] for call in self.calls]


@dataclass
class Env:
    """A `ToolEnv` for one session."""

    cwd: Path
    client: Editor
    roots: tuple[Path, ...] = ()
    token: CancellationToken = field(default_factory=CancellationToken)
    previewed: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] = ()
    call_id: str = "call_1"
    asks_user: bool = True
    background: BackgroundJobs = field(default_factory=BackgroundJobs)
    library: Library = EMPTY
    checkpoints: list[Checkpoint] = field(default_factory=list)  # what the calls recorded

    def __post_init__(self) -> None:
        self.roots = self.roots or (self.cwd,)

    @property
    def readable(self) -> tuple[Path, ...]:
        return (*self.roots, *(skill.folder for skill in self.library.skills.values()))

    def report(self, content: tuple[ToolCallContent, ...]) -> None:
        self.client.calls.append(("report", content))

    def show_plan(self, entries: list[PlanEntry]) -> None:
        self.client.calls.append(("plan", entries))

    def show_terminal(self, update: dict[str, Any]) -> None:
        self.client.calls.append(("terminal", update))

    async def delegate(self, description: str, prompt: str) -> ToolOutcome:
        self.client.calls.append(("delegate", (description, prompt)))
        return ToolOutcome(f"report on {description}")

    async def checkpoint(self, changes: list[Checkpoint]) -> None:
        self.checkpoints.extend(changes)


async def call(env: Env, name: str, **args: Any) -> ToolOutcome:
    """Run tool `name`; every outcome must say something to the model."""
    outcome = await TOOLS[name].run(args, env)
    assert outcome.output.strip(), f"{name} returned an empty output"
    return outcome


def diff_block(block: ToolCallContent) -> ToolCallContentDiff:
    """`block`, which must be a `diff` (narrowed so its diff fields can be read)."""
    assert block["type"] == "diff", block
    return block


def assert_strict_json(value: Any) -> None:
    """`value` serializes as JSON that a strict UTF-8 parser (serde_json) accepts."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate fails here


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agent's home during a tool test (where disk writes are journaled), never the
    user's."""
    path = tmp_path / "home"
    monkeypatch.setenv("ACP_FSM_HOME", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The session cwd (a real directory under tmp_path)."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
async def editor() -> AsyncIterator[Editor]:
    """An editor with no capabilities: every tool uses the disk and local processes."""
    bridge = Editor()
    yield bridge
    await bridge.close()


@pytest.fixture
async def capable_editor() -> AsyncIterator[Editor]:
    """An editor that advertised fs read/write and terminals."""
    bridge = Editor(read=True, write=True, terminal=True)
    yield bridge
    await bridge.close()


@pytest.fixture
def env(project: Path, editor: Editor) -> Env:
    return Env(cwd=project, client=editor)


@pytest.fixture
def editor_env(project: Path, capable_editor: Editor) -> Env:
    return Env(cwd=project, client=capable_editor)
