"""The client side of the end-to-end suite.

`Agent` is one real `acp-fsm` process with the product's scripted `Editor` (`acp_fsm.devkit.editor`)
answering its requests (permission answers from a queue, in-memory buffers for fs/*, scripted
terminals; a request the agent withdraws stays held, for the test to answer late).
Turns are read back from the process's message log, so a test can check exactly which updates
came before the `session/prompt` response and that nothing came after it. The last helpers read
the history a model call carried, in either wire format, from the scripted provider's records.

`ACP_FSM_TEST_OPENAI_API=responses` in the test run's environment runs every scenario started on
the `openai` provider on OpenAI's Responses API instead (the agent gets `ACP_FSM_OPENAI_API`),
the scripted provider answering as a reasoning model (every reply with a reasoning item its
calls must come back with); the history helpers read a Responses call's `input` items in the
Chat Completions shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

from acp_fsm.devkit.editor import Editor
from acp_fsm.devkit.provider import RecordedRequest, ScriptedProvider
from acp_fsm.dialects import diff_v2
from tests.conftest import assert_clean
from tests.harness import PROTOCOL, AgentProcess, agent_env, title_lane, wait_until

API_KEY: Final = "sk-e2e-4f7c-TOP-SECRET-KEY-91d2"
# Client capabilities: an editor that serves fs/* and terminal/*, and a bare client (disk and
# local processes).
EDITOR: Final[dict[str, Any]] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
}
BARE: Final[dict[str, Any]] = {
    "fs": {"readTextFile": False, "writeTextFile": False},
    "terminal": False,
}
SETTLE_S: Final = 0.15  # how long "nothing else arrives" is watched for
# OpenAI's API the `openai` provider's scenarios run on (see the module docstring).
OPENAI_API: Final = os.environ.get("ACP_FSM_TEST_OPENAI_API") or None
RESPONSES: Final = OPENAI_API == "responses"

Message = dict[str, Any]


def shown_diff(path: str, old: str | None, new: str) -> dict[str, Any]:
    """A change as the agent shows it: v1's `diff` of the file's texts, v2's list of changes
    and git patch on the v2 run."""
    block: dict[str, Any] = {"type": "diff", "path": path, "oldText": old, "newText": new}
    return diff_v2(block) if PROTOCOL == 2 else block


# A scenario of the client's own files and terminals, which ACP v2 does not have (its run skips
# it: tests/conftest.py).
CLIENT_FS: Final = pytest.mark.v1_only("the client's fs/* and terminal/* are v1's")

# Session metadata updates, sent besides the conversation: the title (the first prompt's words,
# then the model's), the context-window use after each model call, the options and commands.
METADATA = frozenset(
    {
        "session_info_update",
        "usage_update",
        "config_option_update",
        "current_mode_update",
        "available_commands_update",
    }
)


# ------------------------------------------------------------------------------ update shapes


def text(text_value: str) -> dict[str, Any]:
    return {"type": "text", "text": text_value}


def chunk(kind: str, text_value: str) -> dict[str, Any]:
    """An `agent_message_chunk` / `agent_thought_chunk` / `user_message_chunk` update."""
    return {"sessionUpdate": kind, "content": text(text_value)}


CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})


def without_message_id(update: dict[str, Any]) -> dict[str, Any]:
    """`update` without its `messageId`, which it must have if it is a message chunk."""
    if update.get("sessionUpdate") not in CHUNKS:
        return update
    assert isinstance(update.get("messageId"), str), f"a chunk without a messageId: {update}"
    return {k: v for k, v in update.items() if k != "messageId"}


def message_chunks(*texts: str) -> list[dict[str, Any]]:
    return [chunk("agent_message_chunk", t) for t in texts]


def thought_chunks(*texts: str) -> list[dict[str, Any]]:
    return [chunk("agent_thought_chunk", t) for t in texts]


def text_content(text_value: str) -> dict[str, Any]:
    """A ToolCallContent block of text."""
    return {"type": "content", "content": text(text_value)}


def of_kind(updates: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] == kind]


def made_titles(agent: Agent, session_id: str, after: int) -> list[dict[str, Any]]:
    """The `session_info_update`s of `session_id` after `agent.messages[after]` (the answer
    of the first completed turn, that the title call follows)."""
    return of_kind(agent.updates(session_id, after + 1, metadata=True), "session_info_update")


def for_call(updates: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("toolCallId") == call_id]


def statuses(updates: list[dict[str, Any]]) -> list[str]:
    """The status path of a call: the statuses its updates set, in order (an update that only
    adds content, such as the diff shown before asking, sets none)."""
    return [u["status"] for u in updates if "status" in u]


def content_text(update: dict[str, Any]) -> str:
    """The text of a tool call update's content blocks, joined."""
    return "".join(
        block["content"]["text"]
        for block in update.get("content") or ()
        if block["type"] == "content"
    )


# ------------------------------------------------------------------------------------ turns


@dataclass
class TurnResult:
    """A finished prompt: its response and the session's updates before it."""

    response: Message
    updates: list[dict[str, Any]]
    start: int  # index in `agent.messages` when the prompt was sent
    end: int  # index of the response

    @property
    def stop_reason(self) -> str:
        assert "result" in self.response, f"the prompt failed: {self.response}"
        return str(self.response["result"]["stopReason"])

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.response, f"the prompt did not fail: {self.response}"
        return dict(self.response["error"])


@dataclass
class PendingTurn:
    agent: Agent
    session_id: str
    msg_id: str
    start: int
    future: asyncio.Future[Message]

    async def result(self, timeout: float = 10.0) -> TurnResult:
        response = await asyncio.wait_for(asyncio.shield(self.future), timeout)
        messages = self.agent.proc.messages
        end = next(i for i in range(self.start, len(messages)) if messages[i] is response)
        updates = self.agent.updates(self.session_id, self.start, end)
        return TurnResult(response, updates, self.start, end)

    def done(self) -> bool:
        return self.future.done()


@dataclass
class Agent:
    """One agent process, initialized, with its editor."""

    proc: AgentProcess
    editor: Editor
    server: ScriptedProvider
    killed: bool = False
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def messages(self) -> list[Message]:
        return self.proc.messages

    async def request(self, method: str, params: Any) -> Message:
        return await self.proc.request(method, params)

    async def result(self, method: str, params: Any) -> Any:
        response = await self.request(method, params)
        assert "result" in response, f"{method} failed: {response}"
        return response["result"]

    async def new_session(self, cwd: Path, *additional: Path) -> str:
        params: dict[str, Any] = {"cwd": str(cwd), "mcpServers": []}
        if additional:
            params["additionalDirectories"] = [str(d) for d in additional]
        return str((await self.result("session/new", params))["sessionId"])

    def prompt_message(self, session_id: str, prompt: str) -> tuple[str, Message]:
        msg_id = f"prompt-{next(self._ids)}"
        return msg_id, {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [text(prompt)]},
        }

    async def start_prompt(self, session_id: str, prompt: str) -> PendingTurn:
        msg_id, message = self.prompt_message(session_id, prompt)
        start = len(self.messages)
        future = self.proc.expect(msg_id, "session/prompt")
        await self.proc.send(message)
        return PendingTurn(self, session_id, msg_id, start, future)

    async def prompt(self, session_id: str, prompt: str) -> TurnResult:
        return await (await self.start_prompt(session_id, prompt)).result()

    async def cancel(self, session_id: str) -> None:
        await self.proc.notify("session/cancel", {"sessionId": session_id})

    def updates(
        self,
        session_id: str,
        start: int = 0,
        end: int | None = None,
        *,
        metadata: bool = False,
        ids: bool = False,
    ) -> list[dict[str, Any]]:
        """The `session/update` payloads for `session_id` in `messages[start:end]`: the
        conversation's own (chunks and tool calls), plus session metadata (title, usage)
        when `metadata` is set. Every message chunk must carry a `messageId`; it is left out
        unless `ids` is set (tests/e2e/test_message_ids.py checks them)."""
        return [
            m["params"]["update"] if ids else without_message_id(m["params"]["update"])
            for m in self.messages[start:end]
            if m.get("method") == "session/update"
            and m["params"]["sessionId"] == session_id
            and (metadata or m["params"]["update"]["sessionUpdate"] not in METADATA)
        ]

    async def assert_quiet_after(self, turn: TurnResult, session_id: str) -> None:
        """Nothing about `session_id` arrives after the response (watched for a moment) but
        the title a model makes after a first completed turn."""
        await asyncio.sleep(SETTLE_S)
        late = [
            u
            for u in self.updates(session_id, turn.end + 1, metadata=True)
            if u["sessionUpdate"] != "session_info_update"
        ]
        assert late == [], f"updates after the prompt response: {late}"

    def notifications(self, method: str, start: int = 0) -> list[Message]:
        return [m for m in self.messages[start:] if m.get("method") == method and "id" not in m]

    def position(self, message: Message) -> int:
        return next(i for i, m in enumerate(self.messages) if m is message)

    async def wait_request(self, method: str, count: int = 1) -> Message:
        """The `count`-th request of `method` the editor received (waiting for it)."""
        await wait_until(
            lambda: len(self.editor.of_method(method)) >= count, f"request #{count} of {method}"
        )
        return self.editor.of_method(method)[count - 1]

    async def answer_held(self, request: Message, answer: Any) -> None:
        await self.proc.answer_held(request, answer)

    def stop_editor(self) -> None:
        """The editor answers nothing more (its requests wait in `proc.requests`)."""
        self.proc.editor = None

    def log(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.proc.log_events() if e["event"] == event]

    def assert_strict_json(self) -> None:
        """Every line the agent wrote parses as a strict parser (serde_json, Zed's) reads it:
        orjson refuses a lone surrogate, escaped or not, as they do."""
        import orjson

        for line in self.proc.raw_lines:
            orjson.loads(line)


class Launcher:
    """Starts agents against one scripted provider, each with the same ACP_FSM_HOME, and
    closes them all at teardown (exit code 0, clean stdout, no editor surprise)."""

    def __init__(
        self, server: ScriptedProvider, home: Path, command: list[str] | None = None
    ) -> None:
        self.server = server
        self.home = home
        self.command = command  # the agent to run: this checkout's unless given
        self.agents: list[Agent] = []
        self.defaults: dict[str, str | None] = {}  # a test module's environment for all

    def env(self, provider: str, **overrides: str | None) -> dict[str, str]:
        return agent_env(
            **{
                "ACP_FSM_PROVIDER": provider,
                "OPENAI_BASE_URL": self.server.openai_base_url,
                "ANTHROPIC_BASE_URL": self.server.anthropic_base_url,
                "OPENAI_API_KEY": API_KEY,
                "ANTHROPIC_API_KEY": API_KEY,
                "ACP_FSM_HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / "config"),  # no user commands of the machine's
                "ACP_FSM_MAX_RETRIES": "0",
                "ACP_FSM_MODEL": None,
                "ACP_PERMISSION_TIMEOUT_MS": None,
                "ACP_CLIENT_RPC_TIMEOUT_MS": None,
                "ACP_FSM_MAX_TURN_REQUESTS": None,
                "ACP_FSM_OPENAI_API": OPENAI_API if provider == "openai" else None,
                # The scripted model is a capable one: every tool, as the providers' APIs
                # get (tests/e2e/test_call_modes.py unsets it: a local server's default).
                "ACP_FSM_TOOLS": "full",
                **title_lane(self.server),
                **self.defaults,
                **overrides,
            }
        )

    async def start(
        self,
        provider: str = "openai",
        *,
        capabilities: dict[str, Any] | None = None,
        **env: str | None,
    ) -> Agent:
        # Held requests stay unanswered when the agent withdraws them: tests answer them late.
        editor = Editor(answer_withdrawn=False)
        proc = await AgentProcess.start(
            self.env(provider, **env), editor=editor, command=self.command
        )
        agent = Agent(proc, editor, self.server)
        self.agents.append(agent)
        await proc.initialize(**(capabilities or BARE))
        return agent

    async def kill(self, agent: Agent) -> None:
        """`kill -9` the process."""
        agent.killed = True
        agent.stop_editor()
        await agent.proc.kill()

    async def close(self, agent: Agent) -> None:
        """Close stdin: the agent exits 0 with clean output and no request left unanswered."""
        self.agents.remove(agent)
        try:
            agent.stop_editor()
            assert agent.proc.editor_errors == [], agent.proc.editor_errors
            if agent.killed:
                assert_clean(agent.proc)
                return
            code = await agent.proc.close()
            assert_clean(agent.proc)
            assert code == 0, f"exit status {code}:\n" + agent.proc.stderr_tail(3000)
            assert agent.editor.unexpected == [], agent.editor.unexpected
        finally:
            await agent.proc.kill()

    async def close_all(self) -> None:
        failures: list[str] = []
        for agent in list(self.agents):
            try:
                await self.close(agent)
            except (AssertionError, TimeoutError) as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
        assert not failures, "\n".join(failures)


# --------------------------------------------------------------------- recorded model calls


def assert_restored(result: dict[str, Any], mode: str = "ask") -> None:
    """A `session/load` or `session/resume` answer: the session's options, and its mode the
    older way too (v1: ACP v2 has no modes)."""
    if PROTOCOL == 2:
        assert set(result) == {"configOptions"}, result
    else:
        assert set(result) == {"configOptions", "modes"}, result
        assert result["modes"]["currentModeId"] == mode
    first = result["configOptions"][0]
    assert (first["id"], first["currentValue"]) == ("mode", mode)


def is_openai(request: RecordedRequest) -> bool:
    """A call on either of OpenAI's APIs."""
    return request.path.endswith(("/chat/completions", "/responses"))


def is_responses(request: RecordedRequest) -> bool:
    return request.path.endswith("/responses")


def chat_view(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses input items as the Chat Completions messages of the same conversation: an
    assistant's output messages and function calls in a row one message (its texts joined by a
    blank line, `""` beside calls), each output a `tool` message, user messages in a row one
    (plain text a string); reasoning items left out (tests/e2e/test_responses.py holds them)."""
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        last = messages[-1] if messages else {"role": None}
        if kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]}
            )
        elif kind == "function_call" or item.get("role") == "assistant":
            if last["role"] != "assistant":
                last = {"role": "assistant", "content": ""}
                messages.append(last)
            _add_output(last, item)
        elif kind == "message":
            parts = [_chat_part(part) for part in item["content"]]
            merged = last["role"] == "user"
            if merged:
                parts = [*_chat_parts(messages.pop()["content"]), *parts]
            plain = (merged or len(parts) == 1) and all(p["type"] == "text" for p in parts)
            content = "\n\n".join(p["text"] for p in parts) if plain else parts
            messages.append({"role": item["role"], "content": content})
    return messages


def _add_output(message: dict[str, Any], item: dict[str, Any]) -> None:
    """An assistant's output message or function call into its Chat message."""
    if item["type"] == "function_call":
        function = {"name": item["name"], "arguments": item["arguments"]}
        call = {"id": item["call_id"], "type": "function", "function": function}
        message.setdefault("tool_calls", []).append(call)
        return
    texts = [message["content"], *(part["text"] for part in item["content"])]
    message["content"] = "\n\n".join(t for t in texts if t)


def _chat_part(part: dict[str, Any]) -> dict[str, Any]:
    if part["type"] == "input_image":
        return {"type": "image_url", "image_url": {"url": part["image_url"]}}
    return {"type": "text", "text": part["text"]}


def _chat_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def system_of(request: RecordedRequest) -> str:
    """The system prompt a model call carried, in any of the wire formats."""
    body: dict[str, Any] = request.body or {}
    if "system" in body:  # Anthropic: a string, or text blocks
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    if "input" in body:  # the Responses API
        return str(body["instructions"])
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def history(request: RecordedRequest) -> list[dict[str, Any]]:
    """The conversation a model call carried (OpenAI's system message left out), without
    Anthropic's cache breakpoints (which move to the last block at every call;
    tests/e2e/test_prompt_cache.py holds where they stand)."""
    if is_responses(request):
        return chat_view(request.body["input"])
    messages = [m for m in request.body["messages"] if m.get("role") != "system"]
    return [
        dict(
            m, content=[{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]
        )
        if isinstance(m.get("content"), list)
        else m
        for m in messages
    ]


def offered_tools(request: RecordedRequest) -> dict[str, Any]:
    """The tools a model call offered, by name: their parameters' schema."""
    offered: dict[str, Any] = {}
    for tool in request.body.get("tools") or ():
        tool = tool.get("function", tool)  # Chat Completions nests it
        offered[tool["name"]] = tool.get("parameters", tool.get("input_schema"))
    return offered


def reasoning_effort(request: RecordedRequest) -> str | None:
    """The reasoning effort an OpenAI call asked for, on either API."""
    body = request.body
    effort = body.get("reasoning_effort") or (body.get("reasoning") or {}).get("effort")
    return None if effort is None else str(effort)


def tool_results(request: RecordedRequest) -> dict[str, tuple[str, bool | None]]:
    """call id -> (result text, is_error) as the model was sent them (is_error is None for
    OpenAI, whose tool messages cannot carry it)."""
    results: dict[str, tuple[str, bool | None]] = {}
    for message in history(request):
        if message.get("role") == "tool":
            results[message["tool_call_id"]] = (str(message["content"]), None)
            continue
        if not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result":
                content = block["content"]
                if isinstance(content, list):
                    content = "".join(b.get("text", "") for b in content)
                results[block["tool_use_id"]] = (str(content), block.get("is_error"))
    return results


def tool_call_ids(request: RecordedRequest) -> list[str]:
    """Every tool call id the assistant messages of a model call contain, in order."""
    ids: list[str] = []
    for message in history(request):
        if message.get("role") != "assistant":
            continue
        ids += [c["id"] for c in message.get("tool_calls") or ()]
        if isinstance(message.get("content"), list):
            ids += [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
    return ids


def user_texts(request: RecordedRequest) -> list[str]:
    """The text of every user prompt in a model call, in order."""
    texts: list[str] = []
    for message in history(request):
        if message.get("role") != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        texts += [b["text"] for b in content if b.get("type") == "text"]
    return texts


def text_events(pieces: int) -> int:
    """The wire events the `openai` provider's route streams up to a text-only reply's first
    `pieces` texts, for a fault's `after`: Chat Completions' role chunk, or the Responses
    API's `response.created`, the reasoning item (added, done), the message's
    `output_item.added` and its content part's, then a chunk (delta) each."""
    return pieces + (5 if RESPONSES else 1)


def args(**arguments: Any) -> str:
    """Tool call arguments as the model streams them."""
    return json.dumps(arguments)


# ------------------------------------------------------------------------------- processes


def entries(directory: Path) -> list[str]:
    """The names in `directory`, sorted."""
    return sorted(os.listdir(directory))


def unique_sleep() -> str:
    """A long `sleep` command whose command line no other process has."""
    return f"sleep 30.{random.randrange(10**6):06d}"


def unseen(command: str) -> str:
    """`command` (a word and its argument) written so that the shell running it does not
    carry its text on its own command line: a search for `command` then finds the process
    itself, never the shell (`sleep 30.1` as `sleep ${_unset:-30.1}`)."""
    word, _, argument = command.partition(" ")
    return f"{word} ${{_unset:-{argument}}}"


# ---------------------------------------------------------------------------------- storage


def unreasoned(entries: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """Stored entries, their assistant messages without thinking parts (the reasoning items
    of every answer on the Responses run)."""
    return [
        (kind, {**body, "parts": [p for p in body["parts"] if p["type"] != "thinking"]})
        if kind == "assistant"
        else (kind, body)
        for kind, body in entries
    ]


def stored(home: Path, session_id: str, *, ids: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """The committed transcript of a session, read from the agent's SQLite file; without the
    ids its messages were shown with unless `ids` is set (test_message_ids.py checks them)."""
    import sqlite3

    with contextlib.closing(
        sqlite3.connect(f"file:{home / 'sessions.db'}?mode=ro", uri=True)
    ) as conn:
        rows = conn.execute(
            "SELECT kind, body FROM entries WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
    entries = [(kind, json.loads(body)) for kind, body in rows]
    if ids:
        return entries
    return [
        (kind, {k: v for k, v in body.items() if k not in MESSAGE_IDS}) for kind, body in entries
    ]


MESSAGE_IDS = ("messageId", "messageIds")  # where an entry keeps its messages' ids
