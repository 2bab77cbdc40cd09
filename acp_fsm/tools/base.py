"""What a tool is, and what it may use while running.

A tool is described to the model by `name`, `description` and a JSON Schema for its arguments
(names and arguments are a public contract). The runtime asks it, for one call, how the call
looks to the editor (`view`), whether it needs the user's permission (`needs_permission`), and
then runs it with a `ToolEnv`. A tool never raises for a failure of the action itself: it
returns a `ToolOutcome` with `is_error` set, which becomes the tool result the model reads.
It raises `protocol.cancel.Cancelled` when the turn's token fires, after cleaning up (processes
killed, client terminals killed and released).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.codec import utf8_json

if TYPE_CHECKING:
    from acp_fsm.library import Library
    from acp_fsm.questions import Answer, Question
    from acp_fsm.schemas.acp_types import PlanEntry, ToolCallContent, ToolCallLocation
    from acp_fsm.tools.job import BackgroundJobs


def _make_utf8(instance: object, *names: str) -> None:
    """Replace fields of a frozen dataclass by their `utf8_json` form."""
    for name in names:
        object.__setattr__(instance, name, utf8_json(getattr(instance, name)))


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """How a call looks in the editor (ACP ToolCall fields).

    Every string is valid UTF-8 (made so on construction): the editor may parse strictly.
    """

    title: str
    kind: str  # ACP ToolKind: read, edit, delete, move, search, execute, think, fetch, other
    locations: tuple[ToolCallLocation, ...] = ()
    raw_input: dict[str, Any] = field(default_factory=dict)
    content: tuple[ToolCallContent, ...] = ()  # shown before it runs

    def __post_init__(self) -> None:
        _make_utf8(self, "title", "locations", "raw_input", "content")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of running a call.

    `output` is what the model reads (never empty); `content` the ACP ToolCallContent blocks
    the editor shows (text, `diff` for edits; the output as text when empty); `locations`
    replaces the view's when set (e.g. the lines an edit touched). `replay`, when set, is what
    `session/load` shows instead of the live content, which then stays as the editor already
    shows it: an editor terminal is embedded while it runs and is gone after its release, so a
    reload shows the command's output as text. Every string is valid UTF-8.
    """

    output: str
    is_error: bool = False
    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[ToolCallLocation, ...] | None = None
    replay: tuple[ToolCallContent, ...] | None = None

    def __post_init__(self) -> None:
        _make_utf8(self, "output", "content", "locations", "replay")


class ClientBridge(Protocol):
    """The editor's file system and terminals (ACP fs/* and terminal/*), as advertised."""

    @property
    def can_read_files(self) -> bool: ...
    @property
    def can_write_files(self) -> bool: ...
    @property
    def has_terminal(self) -> bool: ...
    @property
    def shows_terminals(self) -> bool:
        """It follows the agent's own display-only terminals (ACP v2)."""

    @property
    def shows_forms(self) -> bool:
        """The editor shows forms (`elicitation.form`)."""

    async def ask(self, question: Question, call_id: str | None, title: str) -> Answer:
        """Ask the user (`acp_fsm.client.Client.ask`)."""

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        """The editor's text; its failure carries `not_found` True when the editor said
        there is no such file."""

    async def write_text_file(self, path: str, content: str) -> None: ...
    async def create_terminal(
        self, command: str, args: list[str], cwd: str, output_byte_limit: int
    ) -> str: ...
    async def terminal_output(self, terminal_id: str) -> dict[str, Any]: ...
    async def wait_for_terminal_exit(self, terminal_id: str) -> dict[str, Any]: ...
    async def kill_terminal(self, terminal_id: str) -> None: ...
    async def release_terminal(self, terminal_id: str) -> None: ...

    def abandon_terminal(self, terminal_id: str) -> None:
        """Kill and release now without waiting for the editor's answers (a cancel must not
        wait on a slow editor); both requests are on their way when this returns."""


class ToolEnv(Protocol):
    """What a running call may use."""

    @property
    def call_id(self) -> str:
        """The id of the call (the editor's tool call)."""

    @property
    def asks_user(self) -> bool:
        """The call may ask the user (a subagent's cannot)."""

    @property
    def cwd(self) -> Path: ...
    @property
    def roots(self) -> tuple[Path, ...]: ...  # cwd and the session's additionalDirectories
    @property
    def readable(self) -> tuple[Path, ...]:
        """The roots, and the folders of the session's skills: read without asking."""

    @property
    def library(self) -> Library:
        """The user's commands and skills, as last read."""

    @property
    def token(self) -> CancellationToken: ...
    @property
    def client(self) -> ClientBridge: ...
    @property
    def previewed(self) -> tuple[ToolCallContent, ...]:
        """What `Tool.preview` showed before the call ran (the diff the user approved)."""

    @property
    def locations(self) -> tuple[ToolCallLocation, ...]:
        """Where the call's view said it acts when it was announced (its paths resolved
        then): what the user was asked about."""

    @property
    def background(self) -> BackgroundJobs:
        """The session's background commands."""

    def report(self, content: tuple[ToolCallContent, ...]) -> None:
        """Show progress content now (e.g. a terminal block while a command runs)."""

    def show_plan(self, entries: list[PlanEntry]) -> None:
        """Show the agent's plan (an ACP `plan` update)."""

    def show_terminal(self, update: dict[str, Any]) -> None:
        """Show a terminal of the agent's own (`tools.shown_terminal`): its update."""

    async def delegate(self, description: str, prompt: str) -> ToolOutcome:
        """Run `prompt` in a subagent (`task`): its report as the outcome, its progress shown
        in the call meanwhile. Raises `Cancelled` when the token fires."""

    async def checkpoint(self, changes: list[Checkpoint]) -> None:
        """Record, durably, what the call is about to change (each file's text before it and
        after it), before it writes anything: what `/rewind` restores. Raises `ToolError` when
        it cannot be recorded (then nothing may be written)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One file as a call changes it: `before` None creates it, `after` None deletes it."""

    path: Path
    before: str | bytes | None  # bytes: a file that was not UTF-8 text
    after: str | None


# Files as the earlier calls of the same assistant message will leave them (absolute path →
# text), so a call that builds on an earlier one (write a file, then edit it) is previewed
# against what it will really find.
Drafts = dict[Path, str]


class Tool(Protocol):
    name: str
    description: str
    kind: str
    # Running it may change files in ways no preview can show (a shell command): the calls
    # after it in the same message are not previewed.
    unpredictable: bool
    # Its calls of one message run at once with each other (`task`), not one after another.
    concurrent: bool

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of its arguments (read-only: `BaseTool` derives it from
        schemas/tools.json)."""

    def validate(self, args: dict[str, Any]) -> str | None:
        """Why `args` cannot be run (the model is told), or None."""

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView: ...

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        """What the call will change, as ToolCallContent (a `diff` against `drafts` or the
        file), shown before the user is asked; () when there is nothing to show. Records its
        result in `drafts`. Raises `ToolError` when the call cannot work (the model is told,
        and nobody is asked). When it runs, a call changes nothing that differs from what it
        showed."""

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """The call stays within what the session's roots confine (a remembered "always"
        answer allows only such calls: it never widens the boundary)."""

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool: ...
    def always_asks(self, args: dict[str, Any], env: ToolEnv) -> bool:
        """The user is asked in every mode, whatever was answered "always" before."""

    async def run(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome: ...
