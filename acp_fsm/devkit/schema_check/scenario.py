"""The scripted session: the real agent (`python -m acp_fsm`) against the scripted model server
(`acp_fsm.devkit.provider`), driven by the scripted editor (`acp_fsm.devkit.editor`) the way an
editor would: the handshake and its errors, every session method, a prompt with every kind of
content, streamed text and thinking, each tool with a permission request answered each way, the
editor's files and terminals, a cancel in the middle of a stream, `$/cancel_request` both ways,
and a reload in a second process. Every message the agent writes is kept as a `Record`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.editor import AgentLink, NoAnswer
from acp_fsm.devkit.editor.v1_view import V1View
from acp_fsm.devkit.schema_check.session_run import SessionRun, Turn
from acp_fsm.devkit.schema_check.session_script import (
    PNG_1X1,
    TITLE_MODEL,
    agent_env,
    model_replies,
)

EXTRA_SESSIONS: Final = 50  # with the main session, one more than a session/list page


class ScenarioError(Exception):
    """The scripted session could not go on (the agent died, hung or answered off-script)."""


class _Session:
    """The steps of the scripted session, on one run's state."""

    def __init__(self, run: SessionRun, workdir: Path, protocol: int = 1) -> None:
        self.run = run
        self.protocol = protocol  # 2: v2 has no providers/* to end with
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
                    "subagents": {},  # its task is a child session
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
        title = {"sessionId": ids[0], "title": "Named by the user"}
        await self.step(link, "set_title", "session/set_title", title)
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
        if self.protocol == 1:
            await self.providers(link)

    async def providers(self, link: AgentLink) -> None:
        """The model endpoint an editor sets (unstable): listed, set where it is, a header
        added, and an unknown provider disabled. Last: the process ends after it."""
        listed = await self.step(link, "providers_list", "providers/list", {})
        [main] = listed["result"]["providers"]
        where = {"providerId": main["providerId"], **main["current"]}
        await self.step(
            link, "providers_set", "providers/set", {**where, "headers": {"x-team": "blue"}}
        )
        await self.step(link, "providers_disable", "providers/disable", {"providerId": "nope"})


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


async def run_session(workdir: Path, protocol: int = 1) -> SessionRun:
    """Drive two agent processes through the scripted session (files go under `workdir`);
    with `protocol` 2, in ACP v2 on the wire, the session's steps said in v1's words through
    the client's view (`acp_fsm.devkit.editor.v1_view`)."""
    from acp_fsm.devkit.provider import Reply, ScriptedProvider

    run = SessionRun()
    session = _Session(run, workdir, protocol)
    async with ScriptedProvider(
        *model_replies(session.project, session.outside),
        fallback=Reply(text="Noted."),
        lanes={TITLE_MODEL: Reply(text="Schema check session")},
    ) as server:
        env = agent_env(workdir / "home", server.openai_base_url)
        if protocol == 2:
            env["ACP_FSM_PROTOCOL_V2"] = "1"

        async def in_process(work: Callable[[AgentLink], Awaitable[Any]]) -> Any:
            link = await AgentLink.spawn(
                env,
                editor=run.editor,
                records=run.records,
                sent=run.sent,
                view=V1View() if protocol == 2 else None,
            )
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
