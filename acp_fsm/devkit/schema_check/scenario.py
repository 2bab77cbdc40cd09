"""The scripted session: the real agent (`python -m acp_fsm`) against the scripted model server
(`acp_fsm.devkit.provider`), driven by the scripted editor (`acp_fsm.devkit.editor`) the way an
editor would: the handshake and its errors, every session method, a prompt with every kind of
content, streamed text and thinking, each tool with a permission request answered each way, the
editor's files and terminals, a cancel in the middle of a stream, `$/cancel_request` both ways,
and a reload in a second process. Every message the agent writes is kept as a `Record`."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.editor import HOLD, AgentLink, Choice, Editor, NoAnswer, Record, Sent
from acp_fsm.devkit.schema_check.coverage import update_kinds

EXTRA_SESSIONS: Final = 50  # with the main session, one more than a session/list page


class ScenarioError(Exception):
    """The scripted session could not go on (the agent died, hung or answered off-script)."""


# The tool calls of the script: call id -> (tool, the editor's answer to its permission request;
# None: no request expected).
CALLS: Final[dict[str, tuple[str, Choice | None]]] = {
    "call_read": ("read_file", "allow_once"),  # outside the roots, so the user is asked
    "call_write": ("write_file", "allow_once"),
    "call_edit": ("edit_file", "reject_once"),
    "call_run": ("run_command", "allow_always"),
    "call_list": ("list_directory", "reject_always"),  # outside the roots
    "call_search": ("search_files", "cancelled"),  # outside the roots; the client's own cancel
    "call_edit2": ("edit_file", "allow_once"),
    "call_multi": ("multi_edit", "allow_once"),
    "call_patch": ("apply_patch", "allow_once"),
    "call_glob": ("glob", "reject_once"),  # outside the roots
    "call_fetch": ("fetch_url", "reject_once"),  # a page is outside the project
    "call_slow": ("run_command", None),  # allowed always, earlier in the session
    "call_held": ("write_file", HOLD),  # answered after the agent's $/cancel_request
    "call_plan": ("update_plan", None),  # never asks
    "call_task": ("task", None),  # never asks: its subagent cannot
    "call_ask": ("ask_user", None),  # a question: a form (`elicitation/create`), not a permission
}
# The editor's answer to the question's form.
FORM_ANSWER: Final = {"action": "accept", "content": {"answer": "Report"}}


def scripted_editor() -> Editor:
    """The editor of the session: permissions answered per call as `CALLS` says; files from
    its buffers, else the disk; terminals that print "hello" and exit 0, except `sleep`, which
    never exits (its `wait_for_exit` answered -32800 when the agent withdraws it)."""
    return Editor(
        permission_for={
            call_id: answer for call_id, (_, answer) in CALLS.items() if answer is not None
        },
        terminal_output="hello\n",
        terminal_exit={"exitCode": 0, "signal": None},
        hang_commands=("sleep",),
        overrides={"elicitation/create": FORM_ANSWER},
    )


@dataclass
class Turn:
    """A prompt turn: the response, and the session's updates written before it."""

    response: dict[str, Any]
    updates: list[dict[str, Any]]


@dataclass
class SessionRun:
    """Everything the scripted session saw."""

    records: list[Record] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> the response
    turns: dict[str, Turn] = field(default_factory=dict)
    replay: list[dict[str, Any]] = field(default_factory=list)  # updates of session/load
    editor: Editor = field(default_factory=scripted_editor)
    exit_codes: list[int] = field(default_factory=list)
    bad_lines: list[bytes] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # failures of the scripted editor
    schema_violations: list[dict[str, Any]] = field(default_factory=list)  # the agent's logs

    @property
    def update_kinds(self) -> set[str]:
        return update_kinds(self.records)


PNG_1X1: Final = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def _script(project: Path, outside: Path) -> list[Any]:
    """The model's replies, in the order the turns below consume them."""
    from acp_fsm.devkit.provider import Call, HttpError, Reply

    def call(call_id: str, **arguments: Any) -> Call:
        return Call(call_id, CALLS[call_id][0], json.dumps(arguments))

    slow = tuple(f"word{i} " for i in range(60))
    return [
        Reply(
            thinking=("Let me look ", "at the project first."),
            text=("I will read the notes, ", "write a module ", "and fix main.py."),
            calls=(
                call("call_read", path=str(outside / "notes.txt")),
                call("call_write", path="hello.py", content="print('hello')\n"),
                call("call_edit", path="main.py", old_text="x = 1", new_text="x = 2"),
            ),
        ),
        Reply(text="The edit was rejected; the rest is done."),
        Reply(
            text="Running the tools.",
            calls=(
                call("call_run", command="echo hello"),
                call("call_list", path=str(outside)),
                call("call_search", pattern="note", path=str(outside)),
                call(
                    "call_edit2", path=str(project / "main.py"), old_text="x = 1", new_text="x = 3"
                ),
                call(
                    "call_plan",
                    entries=[
                        {"content": "Run the tools", "priority": "high", "status": "completed"},
                        {"content": "Report", "priority": "low", "status": "pending"},
                    ],
                ),
                call(
                    "call_multi",
                    path="hello.py",
                    edits=[{"old_text": "print(", "new_text": 'print("hi", '}],
                ),
                call(
                    "call_patch",
                    patch="*** Begin Patch\n*** Add File: patched.py\n+x = 1\n*** End Patch\n",
                ),
                call("call_glob", pattern="*.txt", path=str(outside)),
                call("call_fetch", url="https://example.com/"),
                call("call_ask", question="Which step next?", options=["Report", "Stop"]),
                call("call_task", description="Find notes", prompt="Where are the notes?"),
            ),
        ),
        Reply(text="The notes are in notes.txt."),  # the subagent's report
        Reply(text="All done."),
        Reply(calls=(call("call_slow", command="sleep 30", timeout_ms=300),)),
        Reply(text="The command timed out."),
        Reply(text=slow, delay_s=0.05),  # cancelled by session/cancel
        Reply(text="Writing it.", calls=(call("call_held", path="later.py", content="later\n"),)),
        Reply(text=slow, delay_s=0.05),  # cancelled by $/cancel_request
        Reply(text="Still here."),
        Reply(text="SUMMARY: the tools ran; the notes are in notes.txt."),  # /compact
        HttpError(500, "the scripted model is down"),  # the prompt fails (error with data)
    ]


# The title call after the first turn is made with a model of its own, answered on the
# scripted server's lane for it (`ScriptedProvider.lanes`): the session's script stays whole.
TITLE_MODEL = "schema-check-title-model"


def agent_env(home: Path, openai_base_url: str) -> dict[str, str]:
    """The agent's environment: the scripted provider, a private store, strict schemas, JSON
    logs, the `_acp_fsm/*` diagnostics; nothing inherited that would configure it otherwise."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(
        ACP_FSM_PROVIDER="openai",
        OPENAI_BASE_URL=openai_base_url,
        OPENAI_API_KEY="sk-schema-check",
        ACP_FSM_HOME=str(home),
        ACP_FSM_MAX_RETRIES="0",
        ACP_FSM_STRICT_SCHEMAS="1",
        ACP_FSM_DEBUG_METHODS="1",
        ACP_FSM_LOG_FORMAT="json",
        ACP_FSM_LOG_LEVEL="info",
        ACP_FSM_TITLE_MODEL=TITLE_MODEL,
    )
    return env


class _Session:
    """The steps of the scripted session, on one run's state."""

    def __init__(self, run: SessionRun, workdir: Path) -> None:
        self.run = run
        self.project = workdir / "project"
        self.extra = workdir / "extra"
        self.outside = workdir / "outside"
        for directory in (self.project, self.extra, self.outside):
            directory.mkdir(parents=True, exist_ok=True)
        (self.project / "main.py").write_text("x = 1\n", encoding="utf-8")
        (self.outside / "notes.txt").write_text("a note\nanother note\n", encoding="utf-8")
        # the user's own command and skill: announced with the built-in commands
        commands = self.project / ".claude" / "commands"
        commands.mkdir(parents=True, exist_ok=True)
        (commands / "tidy.md").write_text(
            "---\ndescription: Tidy a file\nargument-hint: <file>\n---\nTidy $1.\n",
            encoding="utf-8",
        )
        skill = self.project / ".agents" / "skills" / "notes"
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text(
            "---\nname: notes\ndescription: Keep notes in notes.txt\n---\nAppend a line.\n",
            encoding="utf-8",
        )

    async def step(
        self, link: AgentLink, name: str, method: str, params: Any = None, **options: Any
    ) -> dict[str, Any]:
        response = await link.request(method, params, **options)
        self.run.steps[name] = response
        return response

    async def probe_line(self, link: AgentLink, name: str, data: bytes) -> None:
        """Write a malformed line; its answer is the next response with an id the client
        never used."""
        start = len(link.messages)
        await link.send_raw(data)
        self.run.steps[name] = await link.wait_for(
            f"the answer to {data!r}",
            lambda m: "method" not in m and m.get("id") in (None, "probe"),
            start,
        )

    async def handshake(self, link: AgentLink) -> None:
        cwd = str(self.project)
        await self.step(
            link, "before_initialize", "session/new", {"cwd": cwd, "mcpServers": []}, probe=True
        )
        await self.step(
            link,
            "initialize",
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": True, "writeTextFile": True},
                    "terminal": True,
                    "elicitation": {"form": {}},
                    # notices (its MCP server fails) and compactions (/compact) as updates
                    "session": {"notices": {}, "compaction": {}},
                },
                "clientInfo": {"name": "acp-fsm-schema-check", "version": "1"},
            },
        )
        await self.step(link, "initialize_again", "initialize", {"protocolVersion": 1}, probe=True)
        await self.step(link, "authenticate", "authenticate", {"methodId": "none"})
        await self.step(link, "unknown_method", "no/such_method", {}, probe=True)
        await self.step(link, "logout", "logout", {})
        await self.probe_line(link, "parse_error", b'{"jsonrpc": "2.0", "id": 1, \n')
        await self.probe_line(
            link, "invalid_request", b'{"jsonrpc": "2.0", "id": "probe", "method": 5}\n'
        )
        await self.probe_line(link, "empty_batch", b"[]\n")
        await self.step(
            link,
            "invalid_params",
            "session/new",
            {"cwd": "relative/dir", "mcpServers": []},
            probe=True,
        )
        await self.step(
            link,
            "unknown_session",
            "session/prompt",
            {"sessionId": "sess_missing", "prompt": [{"type": "text", "text": "hi"}]},
        )

    async def new_session(self, link: AgentLink) -> str:
        response = await self.step(
            link,
            "session/new",
            "session/new",
            {
                "cwd": str(self.project),
                "additionalDirectories": [str(self.extra)],
                "mcpServers": [
                    {
                        "name": "files",
                        "command": "/usr/bin/env",
                        "args": ["mcp-files"],
                        "env": [{"name": "MODE", "value": "ro"}],
                    }
                ],
            },
        )
        if "result" not in response:
            raise ScenarioError(f"session/new failed: {response}")
        session_id = str(response["result"]["sessionId"])
        # Each way of choosing announces the choice the other way (config_option_update,
        # current_mode_update); the mode ends as Ask, so the turns below ask as they did.
        await self.step(
            link, "set_mode", "session/set_mode", {"sessionId": session_id, "modeId": "plan"}
        )
        await self.step(
            link,
            "set_mode_unknown",
            "session/set_mode",
            {"sessionId": session_id, "modeId": "code"},
        )
        await self.step(
            link,
            "set_config_option",
            "session/set_config_option",
            {"sessionId": session_id, "configId": "mode", "value": "ask"},
        )
        await self.step(
            link,
            "set_config_option_unknown",
            "session/set_config_option",
            {"sessionId": session_id, "configId": "model", "value": "fast"},
        )
        return session_id

    async def prompt(
        self,
        link: AgentLink,
        name: str,
        session_id: str,
        blocks: list[Any],
        interrupt: Callable[[Any, int], Awaitable[None]] | None = None,
    ) -> Turn:
        """One turn; `interrupt(prompt id, start index)` runs while it streams."""
        start = len(link.messages)
        msg_id, future = await link.start_request(
            "session/prompt", {"sessionId": session_id, "prompt": blocks}
        )
        if interrupt is not None:
            await interrupt(msg_id, start)
        response = await link.response(future, f"the prompt of turn {name}")
        end = next(i for i, m in enumerate(link.messages) if m is response)
        turn = Turn(response, _updates(link.messages[start:end], session_id))
        self.run.steps[name] = response
        self.run.turns[name] = turn
        return turn

    async def turns(self, link: AgentLink, session_id: str) -> None:
        text = {"type": "text", "text": "Tidy up the project, please."}
        await self.prompt(
            link,
            "prompt_content",
            session_id,
            [
                text,
                {
                    "type": "resource_link",
                    "uri": (self.project / "main.py").as_uri(),
                    "name": "main.py",
                    "mimeType": "text/x-python",
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": (self.project / "README.md").as_uri(),
                        "mimeType": "text/markdown",
                        "text": "# Project\n",
                    },
                },
                {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
            ],
        )
        await self.prompt(link, "prompt_tools", session_id, [text])
        await self.prompt(link, "prompt_terminal_timeout", session_id, [text])

        async def first_chunk(start: int) -> None:
            await link.wait_for(
                "the first streamed chunk",
                lambda m: _is_update(m, session_id, "agent_message_chunk"),
                start,
            )

        async def session_cancel(msg_id: Any, start: int) -> None:
            await first_chunk(start)
            # A prompt while the turn runs is queued; the cancel cancels it too.
            _, queued = await link.start_request(
                "session/prompt", {"sessionId": session_id, "prompt": [text]}
            )
            await link.notify("session/cancel", {"sessionId": session_id})
            self.run.steps["prompt_queued"] = await link.response(queued, "the queued prompt")

        async def cancel_permission(msg_id: Any, start: int) -> None:
            await link.wait_for(
                "the held permission request",
                lambda m: m.get("method") == "session/request_permission",
                start,
            )
            await link.notify("session/cancel", {"sessionId": session_id})

        async def cancel_request(msg_id: Any, start: int) -> None:
            await first_chunk(start)
            await link.notify("$/cancel_request", {"requestId": msg_id})

        await self.prompt(link, "prompt_cancel", session_id, [text], session_cancel)
        await self.prompt(link, "prompt_cancel_permission", session_id, [text], cancel_permission)
        await self.prompt(link, "prompt_cancel_request", session_id, [text], cancel_request)
        await self.prompt(link, "prompt_after_cancels", session_id, [text])
        await self.prompt(
            link, "prompt_compact", session_id, [{"type": "text", "text": "/compact"}]
        )
        await self.prompt(link, "prompt_provider_error", session_id, [text])
        # A request the agent stops on `$/cancel_request` is answered -32800. Its prompts stop
        # themselves (stopReason cancelled), so the diagnostic `_acp_fsm/sleep` shows that error.
        msg_id, future = await link.start_request("_acp_fsm/sleep", {"ms": 5000})
        await link.notify("$/cancel_request", {"requestId": msg_id})
        self.run.steps["sleep_cancel_request"] = await link.response(future, "_acp_fsm/sleep")

    async def sessions(self, link: AgentLink) -> list[str]:
        """Enough sessions for two pages of session/list; close one, delete one."""
        pending = [
            await link.start_request("session/new", {"cwd": str(self.extra), "mcpServers": []})
            for _ in range(EXTRA_SESSIONS)
        ]
        created = [await link.response(future, "session/new") for _, future in pending]
        ids = [str(r["result"]["sessionId"]) for r in created if "result" in r]
        if len(ids) != EXTRA_SESSIONS:
            raise ScenarioError(f"session/new failed: {created[0]}")
        # session/list shows only sessions that hold a prompt: give each one
        prompts = [
            await link.start_request(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]},
            )
            for session_id in ids
        ]
        for _, future in prompts:
            await link.response(future, "a prompt of an extra session")
        first = await self.step(link, "list", "session/list", {})
        cursor = first.get("result", {}).get("nextCursor")
        if not isinstance(cursor, str):
            raise ScenarioError(
                f"session/list gave no cursor for {EXTRA_SESSIONS + 1} sessions:"
                f" {json.dumps(first)[:300]}"
            )
        await self.step(link, "list_next", "session/list", {"cursor": cursor})
        await self.step(link, "close", "session/close", {"sessionId": ids[0]})
        await self.step(
            link,
            "prompt_closed",
            "session/prompt",
            {"sessionId": ids[0], "prompt": [{"type": "text", "text": "hi"}]},
        )
        await self.step(link, "delete", "session/delete", {"sessionId": ids[1]})
        await self.step(link, "delete_again", "session/delete", {"sessionId": ids[1]})
        return ids

    async def reload(self, link: AgentLink, session_id: str, other: str) -> None:
        """A second process: load with replay, resume, list for one directory."""
        await self.step(
            link,
            "initialize_reload",
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {}},
        )
        start = len(link.messages)
        response = await self.step(
            link,
            "load",
            "session/load",
            {"sessionId": session_id, "cwd": str(self.project), "mcpServers": []},
        )
        end = next(i for i, m in enumerate(link.messages) if m is response)
        self.run.replay = _updates(link.messages[start:end], session_id)
        await self.step(
            link,
            "resume",
            "session/resume",
            {"sessionId": other, "cwd": str(self.extra), "mcpServers": []},
        )
        await self.step(
            link,
            "load_unknown",
            "session/load",
            {"sessionId": "sess_missing", "cwd": str(self.project), "mcpServers": []},
        )
        await self.step(link, "list_cwd", "session/list", {"cwd": str(self.project)})
        forked = await self.step(
            link,
            "fork",
            "session/fork",
            {"sessionId": session_id, "cwd": str(self.project), "mcpServers": []},
        )
        await self.step(
            link,
            "set_model",
            "session/set_model",
            {"sessionId": forked["result"]["sessionId"], "modelId": "gpt-5-mini"},
        )


def _is_update(message: dict[str, Any], session_id: str, kind: str) -> bool:
    params = message.get("params")
    return (
        message.get("method") == "session/update"
        and isinstance(params, dict)
        and params.get("sessionId") == session_id
        and params.get("update", {}).get("sessionUpdate") == kind
    )


def _updates(messages: list[dict[str, Any]], session_id: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update"
        and "id" not in m
        and m["params"].get("sessionId") == session_id
    ]


async def run_session(workdir: Path) -> SessionRun:
    """Drive two agent processes through the scripted session (files go under `workdir`)."""
    from acp_fsm.devkit.provider import Reply, ScriptedProvider

    run = SessionRun()
    session = _Session(run, workdir)
    async with ScriptedProvider(
        *_script(session.project, session.outside),
        fallback=Reply(text="Noted."),
        lanes={TITLE_MODEL: Reply(text="Schema check session")},
    ) as server:
        env = agent_env(workdir / "home", server.openai_base_url)

        async def in_process(work: Callable[[AgentLink], Awaitable[Any]]) -> Any:
            link = await AgentLink.spawn(env, editor=run.editor, records=run.records, sent=run.sent)
            try:
                result = await work(link)
                run.exit_codes.append(await link.close())
                return result
            except NoAnswer as exc:
                raise ScenarioError(str(exc)) from None
            finally:
                await link.kill()
                run.bad_lines += link.bad_lines
                run.client_errors += link.editor_errors
                run.schema_violations += link.log_events("outbound_schema_violation")

        async def first(link: AgentLink) -> tuple[str, list[str]]:
            await session.handshake(link)
            session_id = await session.new_session(link)
            await session.turns(link, session_id)
            return session_id, await session.sessions(link)

        session_id, others = await in_process(first)
        await in_process(lambda link: session.reload(link, session_id, others[2]))
    return run
