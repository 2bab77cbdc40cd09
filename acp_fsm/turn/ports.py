"""What a turn stands on (docs/architecture.md, "Seams"): a read-only `TurnContext` built once
per turn, the `Effects` it has on the world, the `Entries` it stores, how it calls a model
(`OpenModelCall`); and the tools' view of the turn (`TurnEnv`). A session implements them for
its turns (`acp_fsm.session`), a subagent for its own (`turn.subagent`); the conversation,
the context budget and the ledger are one class each, the same for both. The failure that
ends a turn is `acp_fsm.errors.TurnFailed`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from acp_fsm import checkpoints, updates
from acp_fsm.client import Client, ClientChannel
from acp_fsm.errors import NotStored
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.steering import Inbox
from acp_fsm.tools.base import Checkpoint, Tool, ToolOutcome
from acp_fsm.tools.common import ToolError

if TYPE_CHECKING:
    from acp_fsm.client_prompt import ClientPrompt
    from acp_fsm.config_options import Settings
    from acp_fsm.library import Library
    from acp_fsm.providers.config import ProviderConfig
    from acp_fsm.providers.types import AssistantMessage, Event, ModelRequest
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.store import Entry
    from acp_fsm.tools.job import BackgroundJobs
    from acp_fsm.updates import ChunkKind


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a turn reads of its session, built when its prompt comes. What may change within a
    turn is read through the three callables, each time it is needed."""

    session_id: str
    roots: tuple[Path, ...]  # the working directory first, then the additional directories
    library: Library  # the user's commands and skills, as read for this prompt
    subagent: bool  # a subagent's turn: it cannot ask the user, nor start a subagent
    rejected: set[str]  # the tools the user answered "always reject" (the permission step adds)
    background: BackgroundJobs  # the commands still running after their call
    settings: Callable[[], Settings]  # as chosen now: a choice applies from the next model call
    tools: Callable[[], Awaitable[dict[str, Tool]]]  # now, by name (its MCP servers' included)
    status: Callable[[], list[str]]  # a line per MCP server of the session: its state, its tools
    client_prompt: ClientPrompt | None = None  # the editor's system prompt, when it sent one
    # What the user steers the turn with (`acp_fsm.steering`): read at each model call.
    steering: Inbox = field(default_factory=Inbox)
    # The session's subagents at work, by child session id (`acp_fsm.child_sessions`): the
    # token a `session/cancel` of that id fires.
    children: dict[str, CancellationToken] = field(default_factory=dict)
    # Stores `checkpoint` entries in the session's journal, committed (in one group) before
    # it returns (a subagent's too: its own entries are kept only when it ends); `NotStored`
    # when one cannot be. None: nowhere to keep them.
    checkpoint: Callable[[list[dict[str, Any]]], Awaitable[None]] | None = None
    history: History | None = None  # None: no store to rewind (a test's turn)


class History(Protocol):
    """The session's stored entries, for a rewind (`acp_fsm.turn.rewinding`)."""

    async def stored(self) -> list[Entry]:
        """Every entry of the session, once all written so far is committed."""

    async def reload(self) -> None:
        """The conversation read again from the stored entries (after a rewind)."""


class Effects(Protocol):
    """What a turn does to the world besides storing: the editor, and the user's notices."""

    @property
    def client(self) -> ClientChannel:
        """The editor, for permission and client requests."""

    @property
    def session_id(self) -> str:
        """The session the turn's updates and requests name (a subagent's child session's,
        when the editor shows it as one)."""

    def child(self, session_id: str) -> Effects:
        """The same editor, for child session `session_id` (`acp_fsm.child_sessions`)."""

    def send(self, update: acp.SessionUpdate) -> None:
        """Send a `session/update`."""

    def text_sender(self, kind: ChunkKind, message_id: str) -> Callable[[str], object]:
        """What sends a `kind` chunk of message `message_id`'s text as a `session/update`, for
        each streamed delta."""

    def pace(self, token: CancellationToken | None) -> Awaitable[None] | None:
        """What to wait for while the editor is behind (a cancel of `token` ends it); None when
        it is not."""

    def notices(self, found: Iterable[str] = ()) -> list[str]:
        """What the user is to be told now, apart from the answer: what the session gathered
        (an MCP server lost) and `found` (an instruction file not read), each once a session."""


class Entries(Protocol):
    """The entries a turn stores, in order (`turn.storing` writes them)."""

    def queue(
        self, kind: str, body: dict[str, Any], *, required: bool = False
    ) -> asyncio.Future[int] | None:
        """Queue an entry; its write (None: not stored). A `required` one that cannot be
        stored raises the error that answers the prompt."""

    async def commit(self, kind: str, written: asyncio.Future[int] | None) -> None:
        """Wait until a queued write is committed (a cancel does not cut it short)."""

    def rewrite(self, seq: int, body: dict[str, Any]) -> None:
        """Queue a new body for the stored entry `seq` (a message cut by a cancel)."""

    async def settle(self) -> None:
        """Wait until everything queued is committed."""


class ModelCall(Protocol):
    """A streaming model call as a turn reads it (`providers.stream.ModelStream` is one): its
    events, and what was streamed when it stopped short."""

    @property
    def partial(self) -> AssistantMessage: ...
    async def __aenter__(self) -> ModelCall: ...
    async def __aexit__(self, *exc: object) -> None: ...
    def __aiter__(self) -> AsyncIterator[Event]: ...


class OpenModelCall(Protocol):
    """How a turn starts a model call (`providers.open_stream`)."""

    def __call__(
        self,
        request: ModelRequest,
        token: CancellationToken,
        config: ProviderConfig | None = None,
        *,
        scrub: Callable[[bytes], bytes] | None = None,
        close_later: Callable[[Callable[[], None]], None] | None = None,
    ) -> ModelCall: ...


class TurnEnv:
    """The `ToolEnv` of one turn."""

    def __init__(
        self,
        context: TurnContext,
        send: Callable[[acp.SessionUpdate], None],
        token: CancellationToken,
        client: Client,
        report: Callable[[tuple[acp.ToolCallContent, ...]], None],
        delegate: Callable[[str, str], Awaitable[ToolOutcome]],
        previewed: tuple[acp.ToolCallContent, ...] = (),
        call_id: str = "",
        locations: tuple[acp.ToolCallLocation, ...] = (),
    ) -> None:
        self.call_id = call_id
        self._context = context
        self._send = send
        self._token = token
        self._client = client
        self._report = report
        self._delegate = delegate
        self._previewed = previewed
        self._locations = locations

    @property
    def cwd(self) -> Path:
        return self._context.roots[0]

    @property
    def asks_user(self) -> bool:
        return not self._context.subagent

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._context.roots

    @property
    def readable(self) -> tuple[Path, ...]:
        skills = self._context.library.skills.values()
        return (*self._context.roots, *(skill.folder for skill in skills))

    @property
    def library(self) -> Library:
        return self._context.library

    @property
    def token(self) -> CancellationToken:
        return self._token

    @property
    def client(self) -> Client:
        return self._client

    @property
    def previewed(self) -> tuple[acp.ToolCallContent, ...]:
        return self._previewed

    @property
    def locations(self) -> tuple[acp.ToolCallLocation, ...]:
        return self._locations

    @property
    def background(self) -> BackgroundJobs:
        return self._context.background

    def report(self, content: tuple[acp.ToolCallContent, ...]) -> None:
        self._report(content)

    def show_plan(self, entries: list[acp.PlanEntry]) -> None:
        self._send(updates.plan(entries))

    def show_terminal(self, update: dict[str, Any]) -> None:
        self._send(cast("acp.SessionUpdate", update))

    async def delegate(self, description: str, prompt: str) -> ToolOutcome:
        return await self._delegate(description, prompt)

    async def checkpoint(self, changes: list[Checkpoint]) -> None:
        record = self._context.checkpoint
        if record is None:  # nowhere to keep them (a test's turn)
            return
        bodies = [
            {
                "callId": self.call_id,
                "path": str(change.path),
                **checkpoints.before_fields(change.before),
                "after": checkpoints.digest(change.after),
            }
            for change in changes
        ]
        try:
            await record(bodies)
        except NotStored as exc:  # a deleted session still fails the turn (SessionNotFound)
            raise ToolError(
                f"Could not record the files as they were before this change, so nothing was "
                f"written: {exc}"
            ) from exc
