"""`acp-fsm demo`: a short coding session, offline, as a person would read it.

It starts the scripted provider (`providers.scripted`) on loopback, spawns `acp-fsm` with that
provider configured, and drives it as an editor would, with this package's own JSON-RPC
`Connection` on the client side: the prompt, streamed thinking and text, tool calls with their
diff, a permission prompt answered automatically, a cancel in the middle of a long stream, and
a reload of the session in a new process with its replay. After each turn it prints the path
the turn machine took (the agent reports it in the response's `_meta`).

`--provider openai|anthropic` picks the wire format; `--live` runs one prompt against the
provider configured in the environment instead (an API key is needed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import schemas
from acp_fsm.methods import AGENT_TO_CLIENT, spec_of
from protocol.connection import Connection, OutboundKind
from protocol.errors import InvalidParams, MethodNotFound, RemoteError
from protocol.jsonrpc import Notification, Request

PROJECT_FILES = {
    "app.py": (
        "def total(prices):\n"
        '    """Sum of all prices."""\n'
        "    result = 0\n"
        "    for i in range(len(prices) - 1):\n"
        "        result += prices[i]\n"
        "    return result\n"
    ),
    "test_app.py": (
        "from app import total\n\n\n"
        "def test_total():\n"
        "    assert total([1, 2, 3]) == 6\n"
    ),
}
FIXED_LINE = "    for i in range(len(prices)):\n"
BUGGY_LINE = "    for i in range(len(prices) - 1):\n"
LONG_ANSWER = ("Off-by-one errors happen when a loop bound is computed one step too short or "
               "too long. ") * 40
CANCEL_AFTER_S = 0.6


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


class Editor:
    """The client side: answers the agent's requests the way an editor would, and prints the
    session updates as they stream."""

    def __init__(self, project: Path, style: Style) -> None:
        self.project = project
        self.style = style
        self.conn: Connection | None = None
        self.replayed: list[dict[str, Any]] = []
        self.replaying = False
        self._line_open: str | None = None  # who the streamed line being printed is from
        self._titles: dict[str, str] = {}

    # -- Dispatcher (what the Connection needs) -------------------------------------

    def dispatch(self, message: Request | Notification) -> Coroutine[Any, Any, Any] | None:
        handlers = {
            "session/update": self._update,
            "session/request_permission": self._permission,
            "fs/read_text_file": self._read,
            "fs/write_text_file": self._write,
        }
        handler = handlers.get(message.method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {message.method}")
        spec = spec_of(message.method)
        if spec is not None:
            violation = schemas.validate(spec.params_ref, message.params)
            if violation is not None:
                raise InvalidParams(f"Invalid params: {violation}")
        return handler(message.params)

    def check_outbound(self, method: str, kind: OutboundKind, payload: Any) -> str | None:
        spec = spec_of(method)
        if spec is None:
            return f"unknown method {method}"
        ref = spec.result_ref if kind == "result" else spec.params_ref
        if ref is None or (kind == "result") != (spec.direction == AGENT_TO_CLIENT):
            return None if kind == "notification" else f"{method} is not ours to send"
        violation = schemas.validate(ref, payload)
        return None if violation is None else str(violation)

    def check_response(self, method: str, result: Any) -> str | None:
        spec = spec_of(method)
        if spec is None or spec.result_ref is None:
            return None
        violation = schemas.validate(spec.result_ref, result)
        return None if violation is None else str(violation)

    def cancel_request(self, request: Request) -> bool:
        return False  # the agent never cancels our (instant) answers

    # -- the agent's requests -------------------------------------------------------

    async def _permission(self, params: dict[str, Any]) -> dict[str, Any]:
        call = params["toolCall"]
        self._end_line()
        print(f"    {self.style.yellow('?')} permission asked for "
              f"{self.style.bold(call.get('title', call['toolCallId']))} → "
              f"{self.style.green('allow once')} {self.style.dim('(answered by the demo)')}")
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    async def _read(self, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(params["path"])
        self._note(f"← fs/read_text_file {self._short(path)} (the editor's buffer)")
        return {"content": await asyncio.to_thread(path.read_text, encoding="utf-8")}

    async def _write(self, params: dict[str, Any]) -> dict[str, Any]:
        path = Path(params["path"])
        await asyncio.to_thread(path.write_text, params["content"], encoding="utf-8")
        self._note(f"← fs/write_text_file {self._short(path)} (saved by the editor)")
        return {}

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
            self._end_line()
            print(f"    {self.style.cyan('⚙')} {self.style.bold(update['title'])} "
                  f"{self.style.dim('[' + update.get('kind', 'other') + ']')} "
                  f"{self.style.dim('pending')}")
        elif kind == "tool_call_update":
            self._tool_update(update)
        elif kind == "session_info_update" and update.get("title"):
            self._note(f"session title: {update['title']!r}")

    def _tool_update(self, update: dict[str, Any]) -> None:
        status = update.get("status")
        title = self._titles.get(update["toolCallId"], update["toolCallId"])
        for block in update.get("content") or ():
            if block.get("type") == "diff":
                self._diff(block)
        if status in ("completed", "failed"):
            mark = self.style.green("✓") if status == "completed" else self.style.red("✗")
            print(f"    {mark} {title} {self.style.dim(status)}")
            texts = [b["content"].get("text", "") for b in update.get("content") or ()
                     if b.get("type") == "content"]
            if status == "failed" and texts:
                print(f"      {self.style.dim(texts[0].splitlines()[0])}")

    def _diff(self, block: dict[str, Any]) -> None:
        old = (block.get("oldText") or "").splitlines()
        new = block["newText"].splitlines()
        self._end_line()
        print(f"      diff {self._short(Path(block['path']))}:")
        for line in old:
            if line not in new:
                print("      " + self.style.red(f"- {line}"))
        for line in new:
            if line not in old:
                print("      " + self.style.green(f"+ {line}"))

    def _stream(self, who: str, text: str, paint: Any) -> None:
        if self._line_open != who:
            self._end_line()
            label = f"  {who}: " if who == "agent" else f"  ({who}) "
            print(self.style.dim(label), end="")
            self._line_open = who
        print(paint(text), end="", flush=True)

    def _end_line(self) -> None:
        if self._line_open is not None:
            print()
            self._line_open = None

    def _note(self, text: str) -> None:
        self._end_line()
        print(f"      {self.style.dim(text)}")

    def _short(self, path: Path) -> str:
        with contextlib.suppress(ValueError):
            return str(path.relative_to(self.project))
        return str(path)

    def end_turn(self) -> None:
        self._end_line()


class Agent:
    """One `acp-fsm` process, driven through a client-side Connection."""

    def __init__(self, proc: asyncio.subprocess.Process, conn: Connection,
                 pump: asyncio.Task[None]) -> None:
        self.proc = proc
        self.conn = conn
        self._pump = pump

    @classmethod
    async def spawn(cls, editor: Editor, env: dict[str, str]) -> Agent:
        command = [sys.executable, "-m", "acp_fsm"]
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env, limit=64 * 1024 * 1024)
        assert proc.stdin is not None and proc.stdout is not None
        conn = Connection(editor, proc.stdin.write)
        editor.conn = conn
        stdout = proc.stdout

        async def pump() -> None:
            while chunk := await stdout.read(1 << 16):
                conn.feed(chunk)
            conn.feed_eof()

        return cls(proc, conn, asyncio.create_task(pump()))

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        return await self.conn.request(method, params)

    async def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), 10)
        await self._pump
        return code


def _script(provider: str) -> list[Any]:
    """The model's side of the demo conversation."""
    from providers.scripted import Call, Hang, Reply

    read = Call("call_read", "read_file", json.dumps({"path": "app.py"}))
    edit = Call("call_edit", "edit_file", json.dumps(
        {"path": "app.py", "old_text": BUGGY_LINE, "new_text": FIXED_LINE}))
    thinking = ("The user reports an off-by-one; total() probably skips an element. "
                "Read the file before changing anything.")
    return [
        Reply(thinking=_words(thinking), signature="demo-signature", text="Let me read app.py.",
              calls=(read,), delay_s=0.01),
        Reply(text=_words("The loop stops one element early: range(len(prices) - 1) skips the "
                          "last price. I'll fix the bound."), calls=(edit,), delay_s=0.01),
        Reply(text=_words("Fixed: total() now adds every price, so total([1, 2, 3]) == 6."),
              delay_s=0.01),
        Reply(text=_words(LONG_ANSWER), delay_s=0.005, fault=Hang(120)),
        Reply(text=_words("You're welcome! The history I was given includes the fix and the "
                          "interrupted explanation, so we can pick up from there."), delay_s=0.01),
    ]


def _words(text: str) -> list[str]:
    """Split text into token-like deltas (each word with its trailing space)."""
    parts = text.split(" ")
    return [p + " " for p in parts[:-1]] + [parts[-1]]


def _path_line(style: Style, result: dict[str, Any]) -> str:
    meta = (result.get("_meta") or {}).get("acpFsm") or {}
    path = " → ".join(meta.get("statePath") or [])
    stop = result.get("stopReason", "?")
    paint = style.green if stop == "end_turn" else style.yellow
    return f"  {style.dim('stop:')} {paint(stop)}   {style.dim('turn states:')} {path}"


async def _prompt(agent: Agent, editor: Editor, style: Style, session: str, text: str,
                  cancel_after: float | None = None) -> None:
    print(f"\n  {style.bold('you:')} {text}")
    asking = asyncio.create_task(agent.call("session/prompt", {
        "sessionId": session, "prompt": [{"type": "text", "text": text}]}))
    if cancel_after is not None:
        await asyncio.sleep(cancel_after)
        editor.end_turn()
        print(f"\n    {style.yellow('■')} the user presses Stop: session/cancel")
        started = time.perf_counter()
        assert agent.conn is not None
        agent.conn.notify("session/cancel", {"sessionId": session})
        result = await asyncio.wait_for(asyncio.shield(asking), 10)
        elapsed = (time.perf_counter() - started) * 1000
        print(f"    {style.dim(f'answered {elapsed:.1f} ms after the cancel')}")
    else:
        result = await asyncio.wait_for(asking, 30)
    editor.end_turn()
    print(_path_line(style, result))


def _section(style: Style, title: str) -> None:
    print("\n" + style.bold(f"── {title} " + "─" * max(0, 60 - len(title))))


def _summarise_replay(updates: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for update in updates:
        counts[update["sessionUpdate"]] = counts.get(update["sessionUpdate"], 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


async def run_demo(provider: str, style: Style) -> int:
    from providers.scripted import ScriptedProvider

    project = Path(tempfile.mkdtemp(prefix="acp-fsm-demo-"))
    home = Path(tempfile.mkdtemp(prefix="acp-fsm-demo-home-"))
    for name, text in PROJECT_FILES.items():
        (project / name).write_text(text, encoding="utf-8")
    async with ScriptedProvider(*_script(provider)) as server:
        env = dict(os.environ, ACP_FSM_PROVIDER=provider, ACP_FSM_HOME=str(home),
                   ACP_FSM_LOG_LEVEL="warning", ACP_FSM_MAX_RETRIES="0")
        if provider == "openai":
            env.update(OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-demo")
        else:
            env.update(ANTHROPIC_BASE_URL=server.anthropic_base_url,
                       ANTHROPIC_API_KEY="sk-ant-demo")
        print(style.bold("acp-fsm demo") + style.dim(
            f" — offline: a scripted {provider}-format model on {server.url}"))
        print(style.dim(f"  project {project}"))
        editor = Editor(project, style)
        session = await _first_process(editor, env, style, project)
        await _second_process(editor, env, style, project, session)
    fixed = FIXED_LINE in (project / "app.py").read_text(encoding="utf-8")
    print("\n" + (style.green("app.py is fixed on disk.") if fixed
                  else style.red("app.py was not changed.")))
    return 0 if fixed else 1


async def _first_process(editor: Editor, env: dict[str, str], style: Style,
                         project: Path) -> str:
    started = time.perf_counter()
    agent = await Agent.spawn(editor, env)
    info = await agent.call("initialize", {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True},
                               "terminal": False},
        "clientInfo": {"name": "acp-fsm-demo", "version": "1"}})
    elapsed = (time.perf_counter() - started) * 1000
    agent_info = info["agentInfo"]
    print(f"  {style.dim('initialize:')} protocol v{info['protocolVersion']}, "
          f"{agent_info['name']} {agent_info['version']} "
          f"{style.dim(f'(spawn to answer: {elapsed:.0f} ms)')}")
    session = (await agent.call("session/new", {"cwd": str(project), "mcpServers": []}))
    session_id: str = session["sessionId"]
    print(f"  {style.dim('session/new:')} {session_id}")
    _section(style, "turn 1: a bug fix with two tool calls and a permission prompt")
    await _prompt(agent, editor, style, session_id,
                  "total() in app.py returns the wrong sum. Please fix it.")
    _section(style, "turn 2: a long answer, cancelled midway")
    await _prompt(agent, editor, style, session_id,
                  "Explain off-by-one errors in detail.", cancel_after=CANCEL_AFTER_S)
    code = await agent.close()
    print(f"\n  {style.dim(f'the editor closes the agent (exit code {code})')}")
    return session_id


async def _second_process(editor: Editor, env: dict[str, str], style: Style, project: Path,
                          session_id: str) -> None:
    _section(style, "a new agent process: session/load replays the conversation")
    agent = await Agent.spawn(editor, env)
    await agent.call("initialize", {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}}})
    listed = await agent.call("session/list", {"cwd": str(project)})
    titles = [s.get("title", "") for s in listed["sessions"]]
    print(f"  {style.dim('session/list:')} {titles}")
    editor.replaying = True
    await agent.call("session/load", {"sessionId": session_id, "cwd": str(project),
                                      "mcpServers": []})
    editor.replaying = False
    print(f"  {style.dim('replayed:')} {_summarise_replay(editor.replayed)}")
    _section(style, "turn 3: the conversation goes on")
    await _prompt(agent, editor, style, session_id, "Thanks!")
    await agent.close()


async def run_live(style: Style) -> int:
    """One prompt against the configured provider, permissions answered automatically."""
    from providers.config import ConfigError, load_config

    try:
        config = load_config()
    except ConfigError as exc:
        print(style.red(f"configuration error: {exc}"))
        return 2
    if not config.api_key and ("api.openai.com" in config.base_url
                               or "api.anthropic.com" in config.base_url):
        print(style.red("--live needs ANTHROPIC_API_KEY or OPENAI_API_KEY (or a local "
                        "OPENAI_BASE_URL)"))
        return 2
    project = Path(tempfile.mkdtemp(prefix="acp-fsm-live-"))
    for name, text in PROJECT_FILES.items():
        (project / name).write_text(text, encoding="utf-8")
    print(style.bold("acp-fsm demo --live") + style.dim(f" — {config!r}"))
    editor = Editor(project, style)
    agent = await Agent.spawn(editor, dict(os.environ))
    await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": True, "writeTextFile": True}}})
    session = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
    try:
        await _prompt(agent, editor, style, session["sessionId"],
                      "total() in app.py returns the wrong sum. Find the bug and fix it.")
    except RemoteError as exc:
        print(style.red(f"the turn failed: {exc.message}"))
        return 1
    finally:
        await agent.close()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="acp-fsm demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", choices=("openai", "anthropic"), default="anthropic",
                        help="the wire format the scripted model speaks (default anthropic)")
    parser.add_argument("--live", action="store_true",
                        help="use the provider configured in the environment instead")
    parser.add_argument("--no-color", action="store_true", help="plain output")
    args = parser.parse_args(argv)
    from acp_fsm import logs

    logs.configure("warning")  # the demo's own client side logs only trouble, to stderr
    style = Style(color=sys.stdout.isatty() and not args.no_color)
    # When the reader goes away (`acp-fsm demo | head`), end quietly like other command-line
    # tools; the agents it spawned see their stdin close and exit on their own.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.live:
        return asyncio.run(run_live(style))
    return asyncio.run(run_demo(args.provider, style))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
