"""In-memory implementations of a turn's ports (`acp_fsm.turn.ports`), for the tests of each
turn state's work: no process, no socket. `Setup` builds a `Turn` over them:

- `Editor` (the `Effects`): every update sent, in order; a permission or client request
  waits until the test answers it (or the turn's token fires); `behind` makes it slow;
- `Channel` (the `ClientChannel` the editor's requests go through);
- `Memory` (the `Entries`): the entries stored, in order; `hold` keeps commits waiting;
- `Model` (the `OpenModelCall`): each call streams the next scripted `Reply`, or waits
  mid-stream until the token fires, or fails;
- `Gate`, a tool that runs until the test opens it (or the token fires).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from acp_fsm import updates
from acp_fsm.config_options import Settings
from acp_fsm.context_budget import ContextBudget
from acp_fsm.conversation import Conversation
from acp_fsm.credentials import InForce
from acp_fsm.initialize import ClientInfo
from acp_fsm.ledger import Ledger
from acp_fsm.library import EMPTY
from acp_fsm.pricing import Charge
from acp_fsm.protocol.cancel import CancellationToken
from acp_fsm.protocol.errors import OutboundCancelled
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.errors import ProviderError, StreamCancelled
from acp_fsm.providers.types import (
    AssistantMessage,
    Event,
    Finished,
    Message,
    ModelRequest,
    StopReason,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ToolCallPart,
    Usage,
    UserMessage,
)
from acp_fsm.tools.base import Drafts, ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.job import BackgroundJobs
from acp_fsm.turn.ports import ModelCall, TurnContext
from acp_fsm.turn.runner import Turn

if TYPE_CHECKING:
    from acp_fsm.commands import Command
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.tools.base import Tool
    from acp_fsm.updates import ChunkKind

CONFIG = ProviderConfig(
    "openai", "gpt-4o", "https://api.openai.com/v1", api_key="sk-test", model_set=True
)


# ------------------------------------------------------------------ the editor


SESSION_ID = "sess_test"  # the session of every turn here


@dataclass
class Request:
    """A request the turn sent the editor, answered by the test (`answer`)."""

    method: str
    params: Any
    reply: asyncio.Future[Any]

    def answer(self, result: Any) -> None:
        self.reply.set_result(result)


class Channel:
    """The editor's end of the connection: what it advertised, and the requests it got."""

    def __init__(self, capabilities: dict[str, Any] | None = None) -> None:
        self.client = ClientInfo({"protocolVersion": 1, "clientCapabilities": capabilities or {}})
        self.requests: list[Request] = []
        self.sent = asyncio.Event()  # set at every request

    def call_client(
        self,
        method: str,
        params: Any,
        *,
        token: CancellationToken | None = None,
        timeout_ms: int | None = None,
        verbatim: bool = False,
    ) -> asyncio.Future[Any]:
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.requests.append(Request(method, params, reply))
        if token is not None:  # released by the token, as `AcpServer.call_client` is

            def released() -> None:
                if not reply.done():
                    reply.set_exception(OutboundCancelled(f"{method} cancelled"))

            remove = token.on_cancel(released)
            reply.add_done_callback(lambda _: remove())
        self.sent.set()
        return reply

    async def next_request(self) -> Request:
        """The first request not answered yet, once it is sent."""
        while True:
            pending = [r for r in self.requests if not r.reply.done()]
            if pending:
                return pending[0]
            self.sent.clear()
            await self.sent.wait()


class Editor:
    """The `Effects` of a turn, in memory: `updates` holds every update, streamed text
    included, in order; while `behind` is set, `pace` waits for it to clear."""

    def __init__(
        self, capabilities: dict[str, Any] | None = None, session_id: str = SESSION_ID
    ) -> None:
        self.channel = Channel(capabilities)
        self.session_id = session_id
        self.children: dict[str, Editor] = {}  # by child session id: what each was sent
        self.updates: list[acp.SessionUpdate] = []
        self.gathered: list[str] = []  # the session's news, told with the next model call
        self.told: set[str] = set()
        self.behind: asyncio.Event | None = None  # set when the editor caught up
        self.sent = asyncio.Event()  # set at every update

    @property
    def client(self) -> Channel:
        return self.channel

    def child(self, session_id: str) -> Editor:
        found = self.children.get(session_id)
        if found is None:
            found = self.children[session_id] = Editor(session_id=session_id)
            found.channel = self.channel
        return found

    def send(self, update: acp.SessionUpdate) -> None:
        self.updates.append(update)
        self.sent.set()

    def text_sender(self, kind: ChunkKind, message_id: str) -> Callable[[str], object]:
        return lambda text: self.send(updates.chunk(kind, updates.text_content(text), message_id))

    def pace(self, token: CancellationToken | None) -> Awaitable[None] | None:
        if self.behind is None or self.behind.is_set():
            return None
        caught_up = _caught_up(self.behind)
        return token.race(caught_up) if token is not None else caught_up

    def notices(self, found: Iterable[str] = ()) -> list[str]:
        for notice in found:
            if notice not in self.told:
                self.told.add(notice)
                self.gathered.append(notice)
        told, self.gathered = self.gathered, []
        return told

    def kinds(self) -> list[str]:
        """The kind of every update sent, in order."""
        return [u["sessionUpdate"] for u in self.plain()]

    def text(self, kind: str = "agent_message_chunk") -> str:
        """The text of every `kind` chunk, joined."""
        chunks = [u["content"] for u in self.plain() if u["sessionUpdate"] == kind]
        return "".join(c["text"] for c in chunks if c["type"] == "text")

    def statuses(self, call_id: str) -> list[str]:
        """The statuses the editor was shown for tool call `call_id`, in order."""
        return [
            u["status"]
            for u in self.plain()
            if u.get("toolCallId") == call_id and u.get("status") is not None
        ]

    def plain(self) -> list[dict[str, Any]]:
        """The updates as the editor reads them (JSON objects)."""
        return cast("list[dict[str, Any]]", self.updates)


async def _caught_up(behind: asyncio.Event) -> None:
    await behind.wait()


# ------------------------------------------------------------------ the store


class Memory:
    """The `Entries` of a turn, in memory: `entries` as (kind, body), in order; while
    `hold` is set, writes stay uncommitted until it clears."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, dict[str, Any]]] = []
        self.rewritten: list[int] = []
        self.hold: asyncio.Event | None = None
        self.queued = asyncio.Event()  # set at every entry queued
        self._pending: list[asyncio.Future[int]] = []
        self._releases: set[asyncio.Task[None]] = set()

    def queue(
        self, kind: str, body: dict[str, Any], *, required: bool = False
    ) -> asyncio.Future[int] | None:
        self.entries.append((kind, body))
        self.queued.set()
        written: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        seq = len(self.entries)
        if self.hold is None or self.hold.is_set():
            written.set_result(seq)
        else:
            self._pending.append(written)
            release = asyncio.ensure_future(_release(self.hold, written, seq))
            self._releases.add(release)
            release.add_done_callback(self._releases.discard)
        return written

    async def commit(self, kind: str, written: asyncio.Future[int] | None) -> None:
        if written is not None:
            await asyncio.shield(written)

    def rewrite(self, seq: int, body: dict[str, Any]) -> None:
        self.entries[seq - 1] = (self.entries[seq - 1][0], body)
        self.rewritten.append(seq)

    async def settle(self) -> None:
        if self._pending:
            await asyncio.wait(self._pending)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.entries]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [body for k, body in self.entries if k == kind]


async def _release(hold: asyncio.Event, written: asyncio.Future[int], seq: int) -> None:
    await hold.wait()
    if not written.done():
        written.set_result(seq)


# ------------------------------------------------------------------ the model


@dataclass
class Reply:
    """One model call's answer: `text` streamed in `pieces` (and `thinking` first), then its
    tool `calls`; or, with `hang`, the text and then nothing until the token fires; or
    `error` before anything streamed."""

    text: str = ""
    calls: tuple[ToolCallPart, ...] = ()
    thinking: str = ""
    pieces: int = 1
    usage: Usage = field(default_factory=lambda: Usage(100, 10))
    stop: StopReason | None = None
    hang: bool = False
    error: ProviderError | None = None

    def events(self) -> list[Event]:
        events: list[Event] = []
        if self.thinking:
            events.append(ThinkingDelta(self.thinking))
        size = max(1, -(-len(self.text) // self.pieces))
        events += [TextDelta(self.text[i : i + size]) for i in range(0, len(self.text), size)]
        if self.hang:
            return events
        parts = ((TextPart(self.text),) if self.text else ()) + self.calls
        stop = self.stop or (StopReason.TOOL_USE if self.calls else StopReason.END_TURN)
        events.append(Finished(stop, AssistantMessage(parts), self.usage))
        return events


def call(call_id: str, name: str, **arguments: Any) -> ToolCallPart:
    return ToolCallPart(call_id, name, arguments)


class Model:
    """The `OpenModelCall` of a turn, in memory: each call takes the next `Reply`; the
    requests made are kept (`requests`), and `streaming` is set while one hangs."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = collections.deque(replies)
        self.requests: list[ModelRequest] = []
        self.streaming = asyncio.Event()

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def __call__(
        self,
        request: ModelRequest,
        token: CancellationToken,
        config: ProviderConfig | None = None,
        *,
        scrub: Callable[[bytes], bytes] | None = None,
        close_later: Callable[[Callable[[], None]], None] | None = None,
    ) -> ModelCall:
        self.requests.append(request)
        return Stream(self.replies.popleft(), token, self.streaming)


class Stream:
    """One model call: its reply's events, as a `ModelStream` gives them."""

    def __init__(self, reply: Reply, token: CancellationToken, streaming: asyncio.Event) -> None:
        self._reply = reply
        self._events = collections.deque(reply.events())
        self._token = token
        self._streaming = streaming
        self._text = ""

    @property
    def partial(self) -> AssistantMessage:
        return AssistantMessage((TextPart(self._text),) if self._text else ())

    async def __aenter__(self) -> Stream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    def __aiter__(self) -> Stream:
        return self

    async def __anext__(self) -> Event:
        await asyncio.sleep(0)  # a network read: the loop goes on
        if self._reply.error is not None:
            raise self._reply.error
        if self._token.is_cancelled:
            raise StreamCancelled(self.partial, self._token.reason or "cancelled")
        if not self._events:
            if not self._reply.hang:
                raise StopAsyncIteration
            self._streaming.set()
            await self._token.wait()
            raise StreamCancelled(self.partial, self._token.reason or "cancelled")
        event = self._events.popleft()
        if isinstance(event, TextDelta):
            self._text += event.text
        return event


# ------------------------------------------------------------------ a tool


class Gate:
    """A tool whose calls run until the test opens the gate (or the token fires): `kind`
    and whether it asks are the test's."""

    description = "waits for the test"
    unpredictable = False

    def __init__(
        self,
        name: str = "gate",
        kind: str = "read",
        *,
        asks: bool = False,
        concurrent: bool = False,
    ) -> None:
        self.name = name
        self.kind = kind
        self.asks = asks
        self.concurrent = concurrent
        self.opened = asyncio.Event()
        self.running = asyncio.Event()
        self.runs: list[dict[str, Any]] = []
        self.started: asyncio.Queue[dict[str, Any]] = asyncio.Queue()  # each run, as it starts

    @property
    def input_schema(self) -> dict[str, Any]:
        return {"type": "object"}

    def validate(self, args: dict[str, Any]) -> str | None:
        return None

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        return ToolCallView(title=f"{self.name} {args}", kind=self.kind, raw_input=args)

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[acp.ToolCallContent, ...]:
        return ()

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return self.asks

    def always_asks(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False

    async def run(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        self.runs.append(args)
        self.running.set()
        self.started.put_nowait(args)
        await env.token.race(self.opened.wait())
        return ToolOutcome(f"{self.name} ran with {args}")


class Stall:
    """A wait that never ends by itself (an MCP server slow to list its tools): `reached`
    once something waits in it."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()

    async def __call__(self) -> None:
        self.reached.set()
        await asyncio.Event().wait()


# ------------------------------------------------------------------ a turn


@dataclass
class Setup:
    """A turn's ports, in memory; `turn()` builds a turn over them."""

    root: Path
    model: Model = field(default_factory=Model)
    editor: Editor = field(default_factory=Editor)
    memory: Memory = field(default_factory=Memory)
    tools: dict[str, Tool] = field(default_factory=dict)
    settings: Settings = field(default_factory=Settings)
    rejected: set[str] = field(default_factory=set)
    messages: list[Message] = field(default_factory=lambda: [UserMessage((TextPart("hi"),))])
    config: ProviderConfig = CONFIG
    status: list[str] = field(default_factory=list)
    charges: list[Charge] = field(default_factory=list)
    listing: Callable[[], Awaitable[None]] | None = None  # awaited before the tools are listed

    def __post_init__(self) -> None:
        self.conversation = Conversation(self.messages)
        self.budget = ContextBudget()
        self.ledger = Ledger(self.charges.append)
        self.background = BackgroundJobs()

    def turn(self, command: Command | None = None, token: CancellationToken | None = None) -> Turn:
        async def tools() -> dict[str, Tool]:
            if self.listing is not None:
                await self.listing()
            return self.tools

        context = TurnContext(
            SESSION_ID,
            (self.root,),
            EMPTY,
            False,
            self.rejected,
            self.background,
            lambda: self.settings,
            tools,
            lambda: self.status,
        )
        turn = Turn(
            context,
            self.editor,
            self.memory,
            self.conversation,
            self.budget,
            self.ledger,
            token or CancellationToken("test turn"),
            command,
            open_stream=self.model,
        )
        turn.provider = InForce(self.config)
        return turn
