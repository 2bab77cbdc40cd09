"""What a turn stands on: its session (`Host`), the tools' view of the turn (`TurnEnv`), and
the failure that ends it (`TurnFailed`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from acp_fsm import settings, updates
from acp_fsm.client import Client, ClientChannel
from acp_fsm.conversation import Conversation
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.errors import RpcError
from acp_fsm.providers.endpoint import ProviderConfig
from acp_fsm.providers.types import AssistantMessage, Message, ToolResultPart
from acp_fsm.tools.base import Tool, ToolOutcome

if TYPE_CHECKING:
    from acp_fsm.context_budget import ContextBudget
    from acp_fsm.ledger import Ledger
    from acp_fsm.library import Library
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.tools.background import BackgroundJobs
    from acp_fsm.updates import ChunkKind


class TurnFailed(Exception):
    """The turn cannot go on; `error` answers the prompt."""

    def __init__(self, error: RpcError) -> None:
        super().__init__(error.message)
        self.error = error


class Host(Protocol):
    """What a turn needs of its session (`session.Session` is one): where it works, the
    conversation, the store behind it, and the editor."""

    id: str
    cwd: Path
    roots: tuple[Path, ...]
    always: dict[str, bool]  # tool name -> the user's remembered "always" answer
    asks_user: bool  # its calls may ask the user (a subagent's may not)
    library: Library  # the user's commands and skills, as last read
    budget: ContextBudget  # the context window of the conversation's model calls
    ledger: Ledger  # the tokens and cost of the session's model calls

    @property
    def background(self) -> BackgroundJobs:
        """The commands still running after their call."""

    def background_summary(self) -> str:
        """The background commands, for the system prompt ("" when none)."""

    @property
    def settings(self) -> settings.Settings:
        """The model, mode and thought level chosen now."""

    def model(self, config: ProviderConfig) -> str:
        """The model the next model call uses."""

    @property
    def server(self) -> ClientChannel:
        """The editor, for permission and client requests."""

    @property
    def conversation(self) -> Conversation:
        """The conversation, kept ready for a model call (`messages_for_model`)."""

    def messages_for_model(self) -> tuple[Message, ...]:
        """The conversation to send, repaired."""

    async def tools(self) -> dict[str, Tool]:
        """The tools the model may call now (its MCP servers' included), by name."""

    def take_notices(self) -> list[str]:
        """What the user is still to be told about the session (an MCP server lost)."""

    def tell_once(self, notice: str) -> None:
        """Have the user told `notice` with the next ones, unless the session already did."""

    async def add_assistant(
        self,
        message: AssistantMessage,
        stop_reason: str,
        views: dict[str, dict[str, Any]],
        *,
        wait: bool = True,
    ) -> None:
        """Store the model's message (and its tool calls' views)."""

    async def add_result(
        self, result: ToolResultPart, view: dict[str, Any], *, wait: bool = True
    ) -> None:
        """Store a tool call's result."""

    def mark_cancelled(self) -> None:
        """The last stored assistant message now ends the turn as cancelled."""

    async def compact_to(self, messages: list[Message], body: dict[str, Any]) -> None:
        """Replace the conversation by its compacted form (stored first)."""

    async def add_notice(self, text: str) -> None:
        """Store something the user was told apart from the conversation."""

    async def record_turn_end(self, stop_reason: str) -> None:
        """Store that the turn ended, and why."""

    def mcp_status(self) -> list[str]:
        """A line per MCP server of the session: its state and its tools."""

    def record_subagent(self, body: dict[str, Any]) -> None:
        """Store a subagent's transcript (`turn.subagent`) with the session."""

    async def settle(self) -> None:
        """Wait until everything queued is stored."""

    def after_answer(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the prompt is answered (at once outside a prompt)."""

    def send_update(self, update: acp.SessionUpdate) -> None:
        """Send a `session/update`."""

    def text_sender(self, kind: ChunkKind) -> Callable[[str], object]:
        """What sends a `kind` chunk of text as a `session/update`, for each streamed delta."""

    @property
    def behind(self) -> bool:
        """The editor is behind: `keep_pace` would wait."""

    async def keep_pace(self, token: CancellationToken | None = None) -> None:
        """Wait while the editor is behind."""


class TurnEnv:
    """The `ToolEnv` of one turn."""

    def __init__(
        self,
        session: Host,
        token: CancellationToken,
        client: Client,
        report: Callable[[tuple[acp.ToolCallContent, ...]], None],
        delegate: Callable[[str, str], Awaitable[ToolOutcome]],
        previewed: tuple[acp.ToolCallContent, ...] = (),
        call_id: str = "",
        locations: tuple[acp.ToolCallLocation, ...] = (),
    ) -> None:
        self.call_id = call_id
        self._session = session
        self._token = token
        self._client = client
        self._report = report
        self._delegate = delegate
        self._previewed = previewed
        self._locations = locations

    @property
    def cwd(self) -> Path:
        return self._session.cwd

    @property
    def asks_user(self) -> bool:
        return self._session.asks_user

    @property
    def roots(self) -> tuple[Path, ...]:
        return self._session.roots

    @property
    def readable(self) -> tuple[Path, ...]:
        skills = self._session.library.skills.values()
        return (*self._session.roots, *(skill.folder for skill in skills))

    @property
    def library(self) -> Library:
        return self._session.library

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
        return self._session.background

    def report(self, content: tuple[acp.ToolCallContent, ...]) -> None:
        self._report(content)

    def show_plan(self, entries: list[acp.PlanEntry]) -> None:
        self._session.send_update(updates.plan(entries))

    async def delegate(self, description: str, prompt: str) -> ToolOutcome:
        return await self._delegate(description, prompt)
