"""Interop with the official Python SDK's client side (`agent-client-protocol`, `import acp`).

`acp.spawn_agent_process` starts the real `acp-fsm` and `Editor` below is the SDK `Client` we
plug into it: it answers `session/request_permission`, `fs/read_text_file` and
`fs/write_text_file` and records every `session/update`. Everything the agent sends reaches our
code only after the SDK parsed it with its pydantic models, and every response the SDK returns
to us is such a model; a message the SDK cannot parse fails the call (responses), is answered
with an error (agent requests) or is dropped with an ERROR log (notifications). `running_agent`
watches the wire to catch the last two: at the end of each agent process it checks that every
`session/update` on the wire reached `Editor.session_update`, that the SDK answered no agent
request with an error and logged no error, that the agent flagged no outbound schema violation,
and that it exited 0 when the SDK closed its stdin.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import acp
import pytest
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    ClientCapabilities,
    ConfigOptionUpdate,
    ContentToolCallContent,
    CurrentModeUpdate,
    FileEditToolCallContent,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
    WriteTextFileResponse,
)

from acp_fsm.devkit.provider import Call, Hang, Reply, ScriptedProvider
from tests.harness import MADE_TITLE, wait_until
from tests.interop.support import (
    SETUP_UPDATES,
    args,
    command,
    environment,
    log_events,
    log_tail,
    schema_violations,
    tool_results,
    user_texts,
)

T = TypeVar("T")

CALL_TIMEOUT_S: Final = 10.0
SETTLE_S: Final = 0.15
READ_LIMIT: Final = 50 * 1024 * 1024
PROVIDER: Final = "openai"  # the TypeScript interop test uses the Anthropic wire format

READ_PROMPT: Final = "What is in notes.txt?"
WRITE_PROMPT: Final = "Please update greeting.txt"
CANCEL_PROMPT: Final = "Tell me a long story"
BUFFER: Final = "unsaved line 1\nunsaved line 2\n"  # the editor's text, not the disk's

# What the SDK hands `Client.session_update`: the models of `SessionNotification.update`.
Update = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)
Chunk = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk


async def within(awaitable: Awaitable[T], seconds: float = CALL_TIMEOUT_S) -> T:
    """Await an SDK call, failing (instead of hanging the suite) after `seconds`."""
    return await asyncio.wait_for(awaitable, seconds)


# ----------------------------------------------------------------------------- the client


@dataclass
class Editor:
    """Our implementation of the SDK's `Client` protocol: an editor with unsaved buffers."""

    project: Path
    buffers: dict[str, str] = field(default_factory=dict)  # path -> unsaved text
    permission_kind: str = "allow_once"
    # (session id, update model) as the SDK handed them to us
    updates: list[tuple[str, Update]] = field(default_factory=list)
    # (method, SDK-parsed params) of every agent request we answered
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # every message on the wire, in order, as the SDK's observer saw it
    wire: list[StreamEvent] = field(default_factory=list)

    # ---- the SDK Client protocol

    async def request_permission(
        self,
        options: list[PermissionOption],
        session_id: str,
        tool_call: ToolCallUpdate,
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.calls.append(
            (
                "session/request_permission",
                {"session_id": session_id, "tool_call": tool_call, "options": options},
            )
        )
        option = next(o for o in options if o.kind == self.permission_kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def session_update(self, session_id: str, update: Update, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.calls.append(
            (
                "fs/read_text_file",
                {"session_id": session_id, "path": path, "line": line, "limit": limit},
            )
        )
        text = self.buffers.get(path)
        if text is None:
            try:
                text = await asyncio.to_thread(Path(path).read_text)
            except OSError as exc:
                raise acp.RequestError.resource_not_found(path) from exc
        lines = text.splitlines(keepends=True)[(line or 1) - 1 :]
        return ReadTextFileResponse(content="".join(lines if limit is None else lines[:limit]))

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.calls.append(
            ("fs/write_text_file", {"session_id": session_id, "path": path, "content": content})
        )
        self.buffers[path] = content
        return WriteTextFileResponse()

    # ---- records

    def observe(self, event: StreamEvent) -> None:
        self.wire.append(event)

    def session_updates(self, session_id: str, start: int = 0) -> list[Update]:
        return [u for s, u in self.updates[start:] if s == session_id]

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        return [params for m, params in self.calls if m == method]

    def incoming(self) -> list[dict[str, Any]]:
        return [e.message for e in self.wire if e.direction == StreamDirection.INCOMING]

    def outgoing(self) -> list[dict[str, Any]]:
        return [e.message for e in self.wire if e.direction == StreamDirection.OUTGOING]

    def around_response(self, method: str) -> tuple[int, int]:
        """How many `session/update`s came before and after the response to our last
        `method` request, on the wire."""
        request_id = [m["id"] for m in self.outgoing() if m.get("method") == method][-1]
        incoming = self.incoming()
        answer = next(
            i for i, m in enumerate(incoming) if "method" not in m and m.get("id") == request_id
        )
        before = sum(m.get("method") == "session/update" for m in incoming[:answer])
        after = sum(m.get("method") == "session/update" for m in incoming[answer + 1 :])
        return before, after


class ErrorLogs(logging.Handler):
    """Collects the ERROR records the SDK logs (e.g. a notification it could not parse)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass
class Running:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    editor: Editor
    log: Path


@asynccontextmanager
async def running_agent(
    server: ScriptedProvider, home: Path, editor: Editor, log: Path
) -> AsyncIterator[Running]:
    """One agent process driven by the SDK; checks the SDK took every message (see the module
    docstring) and that the agent exited 0 once the SDK closed its stdin."""
    errors = ErrorLogs()
    logging.getLogger().addHandler(errors)
    try:
        program, *rest = command()
        with log.open("wb") as stderr:
            # The SDK calls the `Client` methods a client has (looked up by name) and answers
            # the others method_not_found: this editor has only those the agent calls here.
            async with acp.spawn_agent_process(
                cast(acp.Client, editor),
                program,
                *rest,
                env=environment(server, home, PROVIDER),
                transport_kwargs={"stderr": stderr.fileno(), "limit": READ_LIMIT},
                observers=[editor.observe],
            ) as (conn, process):
                yield Running(conn, process, editor, log)
        code = await within(process.wait())
        assert code == 0, f"the agent exited {code}:\n{log_tail(log)}"
        wire_updates = [m for m in editor.incoming() if m.get("method") == "session/update"]
        assert len(editor.updates) == len(wire_updates), (
            "session/update notifications the SDK did not hand to the client (it failed to "
            f"parse them): {len(wire_updates)} on the wire, {len(editor.updates)} delivered"
        )
        refused = [m for m in editor.outgoing() if "error" in m]
        assert refused == [], f"the SDK answered agent requests with errors: {refused}"
        assert [r.getMessage() for r in errors.records] == []
        assert schema_violations(log) == []
        failures = [e for e in log_events(log) if e.get("level") in ("error", "critical")]
        assert failures == [], failures
    finally:
        logging.getLogger().removeHandler(errors)


def capabilities() -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
    )


async def initialize(
    conn: ClientSideConnection, version: int = acp.PROTOCOL_VERSION
) -> InitializeResponse:
    return await within(
        conn.initialize(
            protocol_version=version,
            client_capabilities=capabilities(),
            client_info=Implementation(name="acp-fsm-interop-python", version="0"),
        )
    )


async def new_session(conn: ClientSideConnection, cwd: Path) -> str:
    response = await within(conn.new_session(cwd=str(cwd), mcp_servers=[]))
    assert isinstance(response, NewSessionResponse)
    return response.session_id


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> PromptResponse:
    response = await within(conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]))
    assert isinstance(response, PromptResponse)
    return response


def texts(updates: list[Update], kind: type[Chunk] = AgentMessageChunk) -> list[str]:
    return [
        u.content.text
        for u in updates
        if isinstance(u, kind) and isinstance(u.content, TextContentBlock)
    ]


def of_call(updates: list[Update], call_id: str) -> list[ToolCallStart | ToolCallProgress]:
    return [
        u
        for u in updates
        if isinstance(u, ToolCallStart | ToolCallProgress) and u.tool_call_id == call_id
    ]


def diffs(update: Update) -> list[FileEditToolCallContent]:
    return [
        c for c in getattr(update, "content", None) or () if isinstance(c, FileEditToolCallContent)
    ]


# -------------------------------------------------------------------------------- turns


def script_read_turn(server: ScriptedProvider) -> None:
    server.script(
        Reply(text="Let me look.", calls=(Call("read-1", "read_file", args(path="notes.txt")),)),
        Reply(text="It has two lines."),
    )


def script_write_turn(server: ScriptedProvider) -> None:
    server.script(
        Reply(
            text="Writing.",
            calls=(Call("write-1", "write_file", args(path="greeting.txt", content="new\n")),),
        ),
        Reply(text="Done."),
    )


def script_cancel_turn(server: ScriptedProvider) -> None:
    # OpenAI events: the role chunk and two text chunks, then silence until the client leaves
    server.script(Reply(text=("partial ", "answer ", "never sent"), fault=Hang(3)))


async def cancel_mid_stream(
    running: Running, server: ScriptedProvider, session_id: str
) -> PromptResponse:
    """A prompt whose model stream hangs after two chunks; cancelled through the SDK."""
    editor, conn = running.editor, running.conn
    start = len(editor.updates)
    script_cancel_turn(server)
    turn = asyncio.create_task(
        conn.prompt(session_id=session_id, prompt=[acp.text_block(CANCEL_PROMPT)])
    )
    await wait_until(
        lambda: len(texts(editor.session_updates(session_id, start))) == 2, "two streamed chunks"
    )
    assert not turn.done()
    await within(conn.cancel(session_id=session_id))
    response = await within(turn, 3.0)
    assert isinstance(response, PromptResponse)
    return response


@pytest.fixture
def files(project: Path) -> Path:
    (project / "notes.txt").write_text("on disk\n")
    (project / "greeting.txt").write_text("old\n")
    return project


def editor_for(project: Path) -> Editor:
    return Editor(project, buffers={str(project / "notes.txt"): BUFFER})


# -------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("client_version", [acp.PROTOCOL_VERSION, 2], ids=["v1", "newer-client"])
async def test_initialize_and_new_session(
    server: ScriptedProvider, home: Path, files: Path, tmp_path: Path, client_version: int
) -> None:
    editor = editor_for(files)
    async with running_agent(server, home, editor, tmp_path / "agent.log") as running:
        init = await initialize(running.conn, client_version)

        assert isinstance(init, InitializeResponse)
        assert init.protocol_version == 1  # ours whatever the client asked for
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session is True
        assert caps.prompt_capabilities is not None
        assert caps.prompt_capabilities.embedded_context is True
        assert caps.prompt_capabilities.image is True
        sessions = caps.session_capabilities
        assert sessions is not None
        assert sessions.list is not None and sessions.resume is not None
        assert sessions.close is not None
        assert init.agent_info is not None and init.agent_info.name == "acp-fsm"
        assert init.auth_methods is not None
        assert [m.id for m in init.auth_methods] == ["api-key"]  # the SDK parses it

        session_id = await new_session(running.conn, files)
        assert session_id


async def test_prompt_reads_through_the_client(
    server: ScriptedProvider, home: Path, files: Path, tmp_path: Path
) -> None:
    editor = editor_for(files)
    async with running_agent(server, home, editor, tmp_path / "agent.log") as running:
        await initialize(running.conn)
        session_id = await new_session(running.conn, files)
        script_read_turn(server)

        response = await prompt(running.conn, session_id, READ_PROMPT)

        assert response.stop_reason == "end_turn"
        path = str(files / "notes.txt")
        reads = editor.calls_of("fs/read_text_file")
        assert [(r["session_id"], r["path"]) for r in reads] == [(session_id, path)]
        assert tool_results(server.requests[-1])["read-1"] == BUFFER  # the model got it
        updates = editor.session_updates(session_id)
        assert texts(updates) == ["Let me look.", "It has two lines."]
        call = of_call(updates, "read-1")
        assert isinstance(call[0], ToolCallStart) and call[0].kind == "read"
        assert call[-1].status == "completed"
        shown = [
            c.content.text for c in call[-1].content or () if isinstance(c, ContentToolCallContent)
        ]
        assert shown == [BUFFER]


async def test_write_with_permission_allow_once(
    server: ScriptedProvider, home: Path, files: Path, tmp_path: Path
) -> None:
    editor = editor_for(files)
    async with running_agent(server, home, editor, tmp_path / "agent.log") as running:
        await initialize(running.conn)
        session_id = await new_session(running.conn, files)
        script_write_turn(server)

        response = await prompt(running.conn, session_id, WRITE_PROMPT)

        assert response.stop_reason == "end_turn"
        path = str(files / "greeting.txt")
        asked = editor.calls_of("session/request_permission")
        assert len(asked) == 1
        assert asked[0]["tool_call"].tool_call_id == "write-1"
        assert {"allow_once", "reject_once"} <= {o.kind for o in asked[0]["options"]}
        methods = [m for m, _ in editor.calls]
        assert methods.index("session/request_permission") < methods.index("fs/write_text_file")
        assert editor.calls_of("fs/write_text_file") == [
            {"session_id": session_id, "path": path, "content": "new\n"}
        ]
        assert editor.buffers[path] == "new\n"
        assert (files / "greeting.txt").read_text() == "old\n"  # the editor writes, not us
        final = of_call(editor.session_updates(session_id), "write-1")[-1]
        assert final.status == "completed"
        assert [(d.path, d.old_text, d.new_text) for d in diffs(final)] == [
            (path, "old\n", "new\n")
        ]
        assert tool_results(server.requests[-1])["write-1"].startswith("Wrote greeting.txt")


async def test_cancel_mid_stream(
    server: ScriptedProvider, home: Path, files: Path, tmp_path: Path
) -> None:
    editor = editor_for(files)
    async with running_agent(server, home, editor, tmp_path / "agent.log") as running:
        await initialize(running.conn)
        session_id = await new_session(running.conn, files)

        response = await cancel_mid_stream(running, server, session_id)

        assert response.stop_reason == "cancelled"
        assert texts(editor.session_updates(session_id)) == ["partial ", "answer "]
        await wait_until(lambda: server.disconnects, "the provider to see the disconnect", 2.0)
        await asyncio.sleep(SETTLE_S)
        assert editor.around_response("session/prompt")[1] == 0  # nothing after the answer
        # the session goes on
        server.script(Reply(text="Still here."))
        after = len(editor.updates)
        assert (await prompt(running.conn, session_id, "and now?")).stop_reason == "end_turn"
        assert texts(editor.session_updates(session_id, after)) == ["Still here."]
        assert user_texts(server.requests[-1]) == [CANCEL_PROMPT, "and now?"]


def summary(updates: list[Update]) -> list[tuple[str, str]]:
    """(kind, text or call id:status) of each update, for an ordered comparison."""
    rows: list[tuple[str, str]] = []
    for update in updates:
        if isinstance(update, UserMessageChunk | AgentMessageChunk):
            assert isinstance(update.content, TextContentBlock), update
            rows.append((update.session_update, update.content.text))
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            rows.append((update.session_update, f"{update.tool_call_id}:{update.status}"))
    return rows


async def test_load_in_a_new_process_replays(
    server: ScriptedProvider, home: Path, files: Path, tmp_path: Path
) -> None:
    first = editor_for(files)
    async with running_agent(server, home, first, tmp_path / "first.log") as running:
        await initialize(running.conn)
        session_id = await new_session(running.conn, files)
        script_read_turn(server)
        assert (await prompt(running.conn, session_id, READ_PROMPT)).stop_reason == "end_turn"
        script_write_turn(server)
        assert (await prompt(running.conn, session_id, WRITE_PROMPT)).stop_reason == "end_turn"
        cancelled = await cancel_mid_stream(running, server, session_id)
        assert cancelled.stop_reason == "cancelled"

    second = editor_for(files)
    async with running_agent(server, home, second, tmp_path / "second.log") as running:
        await initialize(running.conn)
        response = await within(
            running.conn.load_session(cwd=str(files), session_id=session_id, mcp_servers=[])
        )

        assert isinstance(response, LoadSessionResponse)
        replayed = second.session_updates(session_id)
        assert summary(replayed) == [
            ("user_message_chunk", READ_PROMPT),
            ("agent_message_chunk", "Let me look."),
            ("tool_call", "read-1:pending"),
            ("tool_call_update", "read-1:completed"),
            ("agent_message_chunk", "It has two lines."),
            ("user_message_chunk", WRITE_PROMPT),
            ("agent_message_chunk", "Writing."),
            ("tool_call", "write-1:pending"),
            ("tool_call_update", "write-1:completed"),
            ("agent_message_chunk", "Done."),
            ("user_message_chunk", CANCEL_PROMPT),
            ("agent_message_chunk", "partial answer "),
        ]
        path = str(files / "greeting.txt")
        final_write = of_call(replayed, "write-1")[-1]
        assert [(d.path, d.old_text, d.new_text) for d in diffs(final_write)] == [
            (path, "old\n", "new\n")
        ]
        # the whole replay came before the response; only the session's setup after it
        await asyncio.sleep(SETTLE_S)
        replayed = second.session_updates(session_id)
        setup = [u for u in replayed if u.session_update in SETUP_UPDATES]
        assert setup and setup[0].session_update == "available_commands_update"
        assert second.around_response("session/load") == (len(replayed) - len(setup), len(setup))
        # the loaded session goes on, with its history
        server.script(Reply(text="Still here."))
        assert (await prompt(running.conn, session_id, "and now?")).stop_reason == "end_turn"
        assert user_texts(server.requests[-1]) == [
            READ_PROMPT,
            WRITE_PROMPT,
            CANCEL_PROMPT,
            "and now?",
        ]


async def test_list_sessions(
    server: ScriptedProvider, home: Path, files: Path, tmp_path: Path
) -> None:
    elsewhere = (tmp_path / "elsewhere").resolve()
    elsewhere.mkdir()
    editor = editor_for(files)
    async with running_agent(server, home, editor, tmp_path / "agent.log") as running:
        await initialize(running.conn)
        idle = await new_session(running.conn, elsewhere)
        busy = await new_session(running.conn, files)
        server.script(Reply(text="Hi."))
        assert (await prompt(running.conn, busy, "Hello there")).stop_reason == "end_turn"

        def titles() -> list[str | None]:
            updates = editor.session_updates(busy)
            return [u.title for u in updates if isinstance(u, SessionInfoUpdate)]

        # the first prompt's words, then the title the model made after the answer
        await wait_until(lambda: titles() == ["Hello there", MADE_TITLE], "the model's title")
        everything = await within(running.conn.list_sessions())
        mine = await within(running.conn.list_sessions(cwd=str(files)))

        assert isinstance(everything, ListSessionsResponse)
        # only sessions with a prompt: an empty one has nothing to resume
        assert [(s.session_id, s.cwd) for s in everything.sessions] == [(busy, str(files))]
        assert idle not in [s.session_id for s in everything.sessions]
        assert everything.next_cursor is None
        assert everything.sessions[0].title == MADE_TITLE
        for listed in everything.sessions:
            assert listed.updated_at is not None
            datetime.fromisoformat(listed.updated_at)
        assert [s.session_id for s in mine.sessions] == [busy]
