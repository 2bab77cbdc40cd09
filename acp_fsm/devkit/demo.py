"""`acp-fsm demo`: a short coding session, offline, as a person would read it.

It starts the scripted provider (`acp_fsm.devkit.provider`) on loopback, spawns `acp-fsm`
with that provider configured, and drives it as an editor would, with the devkit's scripted
editor (`acp_fsm.devkit.editor`) on the client side: the prompt, streamed thinking and text,
tool calls with their diff, a permission prompt answered automatically, a cancel in the
middle of a long stream, and a reload of the session in a new process with its replay. After
each turn it prints the path the turn machine took (the agent reports it in the response's
`_meta`). Its temporary project and home are removed when it ends.

`--provider openai|openai-responses|anthropic` picks the wire format (Chat Completions, the
Responses API, the Messages API); `--live` runs one prompt against the provider configured in
the environment instead (an API key is needed).
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
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_fsm.devkit.editor import AgentLink, Editor, NoAnswer, result_of
from acp_fsm.protocol.errors import RemoteError

if TYPE_CHECKING:
    from acp_fsm.devkit.provider import ScriptedProvider
    from acp_fsm.providers.config import ProviderConfig

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
        "from app import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n"
    ),
}
FIXED_LINE = "    for i in range(len(prices)):\n"
BUGGY_LINE = "    for i in range(len(prices) - 1):\n"
LONG_ANSWER = (
    "An off-by-one error is a loop or an index that is wrong by exactly one step. "
    "The bug we just fixed is the classic case: range(len(prices) - 1) stops before the last "
    "element, so the sum quietly leaves out one price. "
    "The opposite mistake runs one step too far, and in Python that usually ends in an "
    "IndexError instead of a wrong answer. "
    "Most of these bugs come from mixing two conventions: a Python range includes its start "
    "and excludes its end, while people tend to count the last index as part of it. "
    "A half-open range from start to end holds end - start items, so range(len(items)) visits "
    "every index once and never goes past the end. "
    "Fence posts are the same bug in another shape: a ten-metre fence with a post every metre "
    "needs eleven posts, not ten. "
    "Slices follow the same rule, so items[:n] holds the first n items and items[n:] the rest, "
    "with nothing lost or counted twice. "
    "The safest habit is to avoid index arithmetic: loop over the items themselves, call "
    "sum(prices), or use enumerate() when the position matters. "
    "When indices cannot be avoided, test the edges: an empty list, a single item, and the "
    "last item. "
    "A test like total([1, 2, 3]) == 6 catches this bug because it depends on the last price, "
    "which is exactly the one the loop skipped."
)
# The title call after the first turn is made with a model of its own, on the scripted server's
# lane for it (`ScriptedProvider.lanes`): the conversation's script stays whole.
TITLE_MODEL = "demo-title-model"
TITLE = "Off-by-one fix in total()"
# The wire formats the scripted model speaks, by ACP_FSM_PROVIDER: OpenAI's two APIs share its
# base URL and key.
PROVIDERS = ("anthropic", "openai", "openai-responses")
LONG_ANSWER_DELAY_S = 0.008  # before each streamed word: the whole answer takes over 1.5 s
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


class Console:
    """The demo's only writer to stdout: whole lines, and the one streamed line being built.

    Streamed text goes on an open line as it arrives; `line` ends that line before printing,
    so a chunk never lands inside another line. Everything is printed when it happens (an
    inbound message when the connection reads it), so the output keeps the order of arrival.
    """

    def __init__(self) -> None:
        self._open: str | None = None  # the label of the streamed line left open

    def line(self, text: str = "") -> None:
        self.end_stream()
        print(text)

    def stream(self, label: str, text: str) -> None:
        if self._open != label:
            self.end_stream()
            print(label, end="")
            self._open = label
        print(text, end="", flush=True)

    def end_stream(self) -> None:
        if self._open is not None:
            print()
            self._open = None


class Viewer:
    """The editor's screen: prints each message of the agent when the link reads it (`watch`),
    so the output keeps the order of arrival. Its `editor` answers the agent's requests as the
    demo's user would: every tool call allowed once, files read from and saved to disk."""

    def __init__(self, project: Path, style: Style) -> None:
        self.project = project
        self.style = style
        self.out = Console()
        self.editor = Editor(default_permission="allow_once", save_to_disk=True)
        self.replayed: list[dict[str, Any]] = []
        self.replaying = False
        self.stopped = False  # the user pressed Stop in this turn: later chunks say so
        self.checked = 0  # messages of the agent checked against the project's schemas
        self.invalid: list[str] = []  # what was wrong with them
        self._titles: dict[str, str] = {}
        # (toolCallId, path, oldText, newText) of each diff shown: the agent sends an edit's
        # diff with its preview and again once applied; the screen shows one unless it changed
        self._diffs: set[tuple[str, str, str | None, str]] = set()

    def check(self, link: AgentLink) -> None:
        """Hold every message the agent wrote to the project's schemas."""
        from acp_fsm.devkit.schema_check.checker import own_problems

        self.checked += len(link.records)
        self.invalid.extend(
            f"{record.kind} {record.method}: {problem}"
            for record in link.records
            for problem in own_problems(record)
        )

    def watch(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "session/update":
            self._update(params)
        elif method == "session/request_permission":
            call = params["toolCall"]
            self.out.line(
                f"    {self.style.yellow('?')} permission asked for "
                f"{self.style.bold(call.get('title', call['toolCallId']))} → "
                f"{self.style.green('allow once')} "
                f"{self.style.dim('(answered by the demo)')}"
            )
        elif method == "fs/read_text_file":
            self._note(
                f"← fs/read_text_file {self._short(Path(params['path']))} (the editor's buffer)"
            )
        elif method == "fs/write_text_file":
            self._note(
                f"← fs/write_text_file {self._short(Path(params['path']))} (the editor saves it)"
            )

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
            self.out.line(
                f"    {self.style.cyan('⚙')} {self.style.bold(update['title'])} "
                f"{self.style.dim('[' + update.get('kind', 'other') + ']')} "
                f"{self.style.dim('pending')}"
            )
        elif kind == "tool_call_update":
            self._tool_update(update)
        elif kind == "session_info_update" and update.get("title"):
            self._note(f"session title: {update['title']!r}")

    def _tool_update(self, update: dict[str, Any]) -> None:
        status = update.get("status")
        title = self._titles.get(update["toolCallId"], update["toolCallId"])
        for block in update.get("content") or ():
            shown = (
                update["toolCallId"],
                block.get("path"),
                block.get("oldText"),
                block.get("newText"),
            )
            if block.get("type") == "diff" and shown not in self._diffs:
                self._diffs.add(shown)
                self._diff(block)
        if status in ("completed", "failed"):
            mark = self.style.green("✓") if status == "completed" else self.style.red("✗")
            self.out.line(f"    {mark} {title} {self.style.dim(status)}")
            texts = [
                b["content"].get("text", "")
                for b in update.get("content") or ()
                if b.get("type") == "content"
            ]
            if status == "failed" and texts:
                self.out.line(f"      {self.style.dim(texts[0].splitlines()[0])}")

    def _diff(self, block: dict[str, Any]) -> None:
        old = (block.get("oldText") or "").splitlines()
        new = block["newText"].splitlines()
        self.out.line(f"      diff {self._short(Path(block['path']))}:")
        for line in old:
            if line not in new:
                self.out.line("      " + self.style.red(f"- {line}"))
        for line in new:
            if line not in old:
                self.out.line("      " + self.style.green(f"+ {line}"))

    def _stream(self, who: str, text: str, paint: Callable[[str], str]) -> None:
        # ACP lets the agent send updates after a cancel, until it answers the prompt.
        late = ", after the cancel" if self.stopped else ""
        label = f"  {who}{late}: " if who == "agent" else f"  ({who}{late}) "
        self.out.stream(self.style.dim(label), paint(text))

    def _note(self, text: str) -> None:
        self.out.line(f"      {self.style.dim(text)}")

    def _short(self, path: Path) -> str:
        with contextlib.suppress(ValueError):
            return str(path.relative_to(self.project))
        return str(path)


@contextlib.asynccontextmanager
async def _running(viewer: Viewer, env: dict[str, str]) -> AsyncIterator[AgentLink]:
    """An agent process that has exited when the block ends, however it ends."""
    link = await AgentLink.spawn(env, editor=viewer.editor, watch=viewer.watch)
    try:
        yield link
    finally:
        await _close(link)
        viewer.check(link)


async def _close(link: AgentLink) -> int:
    """Close the agent's input and wait for it to exit; kill it after 10 s, or when the wait
    is interrupted, so it has always exited when this returns or raises."""
    try:
        with contextlib.suppress(NoAnswer):
            await link.close()
    finally:
        await link.kill()
    assert link.proc is not None and link.proc.returncode is not None
    return link.proc.returncode


def _script(provider: str) -> list[Any]:
    """The model's side of the demo conversation."""
    from acp_fsm.devkit.provider import Call, Hang, Reply

    read = Call("call_read", "read_file", json.dumps({"path": "app.py"}))
    edit = Call(
        "call_edit",
        "edit_file",
        json.dumps({"path": "app.py", "old_text": BUGGY_LINE, "new_text": FIXED_LINE}),
    )
    thinking = (
        "The user reports an off-by-one; total() probably skips an element. "
        "Read the file before changing anything."
    )
    return [
        Reply(
            thinking=_words(thinking),
            signature="demo-signature",
            text="Let me read app.py.",
            calls=(read,),
            delay_s=0.01,
        ),
        Reply(
            text=_words(
                "The loop stops one element early: range(len(prices) - 1) skips the "
                "last price. I'll fix the bound."
            ),
            calls=(edit,),
            delay_s=0.01,
        ),
        Reply(
            text=_words("Fixed: total() now adds every price, so total([1, 2, 3]) == 6."),
            delay_s=0.01,
        ),
        Reply(text=_words(LONG_ANSWER), delay_s=LONG_ANSWER_DELAY_S, fault=Hang(120)),
        Reply(
            text=_words(
                "You're welcome! The history I was given includes the fix and the "
                "interrupted explanation, so we can pick up from there."
            ),
            delay_s=0.01,
        ),
    ]


def _words(text: str) -> list[str]:
    """Split text into token-like deltas (each word with its trailing space)."""
    parts = text.split(" ")
    return [p + " " for p in parts[:-1]] + [parts[-1]]


def _write_project(project: Path) -> None:
    for name, text in PROJECT_FILES.items():
        (project / name).write_text(text, encoding="utf-8")


def _path_line(style: Style, result: dict[str, Any]) -> str:
    meta = (result.get("_meta") or {}).get("acpFsm") or {}
    path = " → ".join(meta.get("statePath") or [])
    stop = result.get("stopReason", "?")
    paint = style.green if stop == "end_turn" else style.yellow
    return f"  {style.dim('stop:')} {paint(stop)}   {style.dim('turn states:')} {path}"


async def _prompt(
    link: AgentLink, viewer: Viewer, session: str, text: str, cancel_after: float | None = None
) -> None:
    """One turn, printed as it streams; with `cancel_after`, the user presses Stop then."""
    style, out = viewer.style, viewer.out
    out.line(f"\n  {style.bold('you:')} {text}")
    viewer.stopped = False
    _, asking = await link.start_request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )
    if cancel_after is not None:
        await asyncio.sleep(cancel_after)
        out.line(f"\n    {style.yellow('■')} the user presses Stop: session/cancel")
        viewer.stopped = True
        started = time.perf_counter()
        await link.notify("session/cancel", {"sessionId": session})
        response = await link.response(asking, "the cancelled prompt", 10)
        elapsed = (time.perf_counter() - started) * 1000
        out.line(f"    {style.dim(f'answered {elapsed:.1f} ms after the cancel')}")
    else:
        response = await link.response(asking, "the prompt", 30)
    out.line(_path_line(style, result_of(response, "session/prompt")))


def _section(viewer: Viewer, title: str) -> None:
    viewer.out.line("\n" + viewer.style.bold(f"── {title} " + "─" * max(0, 60 - len(title))))


def _summarise_replay(updates: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for update in updates:
        counts[update["sessionUpdate"]] = counts.get(update["sessionUpdate"], 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


async def run_demo(provider: str, style: Style) -> int:
    from acp_fsm.devkit.provider import Reply, ScriptedProvider

    # The agents have exited (`_running`) before their home and project are removed.
    with (
        tempfile.TemporaryDirectory(prefix="acp-fsm-demo-") as project_dir,
        tempfile.TemporaryDirectory(prefix="acp-fsm-demo-home-") as home,
    ):
        project = Path(project_dir)
        _write_project(project)
        viewer = Viewer(project, style)
        lanes = {TITLE_MODEL: Reply(text=TITLE)}
        async with ScriptedProvider(*_script(provider), lanes=lanes) as server:
            env = dict(
                os.environ,
                ACP_FSM_PROVIDER=provider,
                ACP_FSM_TITLE_MODEL=TITLE_MODEL,
                ACP_FSM_HOME=home,
                ACP_FSM_LOG_LEVEL="warning",
                ACP_FSM_MAX_RETRIES="0",
            )
            env.pop("ACP_FSM_OPENAI_API", None)  # the wire is the one `provider` names
            if provider.startswith("openai"):
                env.update(OPENAI_BASE_URL=server.openai_base_url, OPENAI_API_KEY="sk-demo")
            else:
                env.update(
                    ANTHROPIC_BASE_URL=server.anthropic_base_url, ANTHROPIC_API_KEY="sk-ant-demo"
                )
            viewer.out.line(
                style.bold("acp-fsm demo")
                + style.dim(f" — offline: a scripted {provider}-format model on {server.url}")
            )
            viewer.out.line(style.dim(f"  project {project}"))
            session = await _first_process(viewer, env)
            await _second_process(viewer, env, session)
            served = _served(server)
        fixed = FIXED_LINE in (project / "app.py").read_text(encoding="utf-8")
        viewer.out.line(
            "\n"
            + (
                style.green("app.py is fixed on disk.")
                if fixed
                else style.red("app.py was not changed.")
            )
        )
        for problem in viewer.invalid:
            viewer.out.line(style.red(f"invalid: {problem}"))
        viewer.out.line(style.dim(served))
        viewer.out.line(
            style.dim(
                f"{viewer.checked} messages of the agent checked against its "
                f"schemas, {len(viewer.invalid)} invalid"
            )
        )
    return 0 if fixed and not viewer.invalid else 1


def _served(server: ScriptedProvider) -> str:
    """The model calls of the conversation the scripted model answered, by route (the title
    call, on its lane, aside)."""
    paths = Counter(request.path for request in server.requests)
    return "model calls answered: " + ", ".join(f"{n} on {path}" for path, n in paths.items())


async def _first_process(viewer: Viewer, env: dict[str, str]) -> str:
    style, out = viewer.style, viewer.out
    started = time.perf_counter()
    async with _running(viewer, env) as agent:
        info = await agent.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {
                    "fs": {"readTextFile": True, "writeTextFile": True},
                    "terminal": False,
                },
                "clientInfo": {"name": "acp-fsm-demo", "version": "1"},
            },
        )
        elapsed = (time.perf_counter() - started) * 1000
        agent_info = info["agentInfo"]
        out.line(
            f"  {style.dim('initialize:')} protocol v{info['protocolVersion']}, "
            f"{agent_info['name']} {agent_info['version']} "
            f"{style.dim(f'(spawn to answer: {elapsed:.0f} ms)')}"
        )
        session = await agent.call("session/new", {"cwd": str(viewer.project), "mcpServers": []})
        session_id: str = session["sessionId"]
        out.line(f"  {style.dim('session/new:')} {session_id}")
        _section(viewer, "turn 1: a bug fix with two tool calls and a permission prompt")
        await _prompt(
            agent, viewer, session_id, "total() in app.py returns the wrong sum. Please fix it."
        )
        _section(viewer, "turn 2: a long answer, cancelled midway")
        await _prompt(
            agent,
            viewer,
            session_id,
            "Explain off-by-one errors in detail.",
            cancel_after=CANCEL_AFTER_S,
        )
        code = await _close(agent)
        out.line(f"\n  {style.dim(f'the editor closes the agent (exit code {code})')}")
    return session_id


async def _second_process(viewer: Viewer, env: dict[str, str], session_id: str) -> None:
    style, out = viewer.style, viewer.out
    _section(viewer, "a new agent process: session/load replays the conversation")
    async with _running(viewer, env) as agent:
        await agent.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
            },
        )
        listed = await agent.call("session/list", {"cwd": str(viewer.project)})
        titles = [s.get("title", "") for s in listed["sessions"]]
        out.line(f"  {style.dim('session/list:')} {titles}")
        viewer.replaying = True
        await agent.call(
            "session/load", {"sessionId": session_id, "cwd": str(viewer.project), "mcpServers": []}
        )
        viewer.replaying = False
        out.line(f"  {style.dim('replayed:')} {_summarise_replay(viewer.replayed)}")
        _section(viewer, "turn 3: the conversation goes on")
        await _prompt(agent, viewer, session_id, "Thanks!")


def describe_provider(config: ProviderConfig) -> str:
    """The provider in words, e.g. `anthropic, model claude-…, at https://api.anthropic.com`;
    never the key, nor credentials written into the base URL."""
    scheme, sep, rest = config.base_url.partition("://")
    netloc, slash, path = rest.partition("/")
    url = f"{scheme}{sep}{netloc.rpartition('@')[2]}{slash}{path.partition('?')[0]}"
    return f"{config.provider}, model {config.model}, at {url}"


async def run_live(style: Style) -> int:
    """One prompt against the configured provider, permissions answered automatically."""
    from acp_fsm.providers.config import ConfigError, load_config

    try:
        config = load_config()
    except ConfigError as exc:
        print(style.red(f"configuration error: {exc}"))
        return 2
    if not config.api_key and (
        "api.openai.com" in config.base_url or "api.anthropic.com" in config.base_url
    ):
        print(
            style.red(
                "--live needs ANTHROPIC_API_KEY or OPENAI_API_KEY (or a local OPENAI_BASE_URL)"
            )
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="acp-fsm-live-") as project_dir:
        project = Path(project_dir)
        _write_project(project)
        viewer = Viewer(project, style)
        viewer.out.line(
            style.bold("acp-fsm demo --live") + style.dim(f" — {describe_provider(config)}")
        )
        async with _running(viewer, dict(os.environ)) as agent:
            await agent.call(
                "initialize",
                {
                    "protocolVersion": 1,
                    "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
                },
            )
            session = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
            try:
                await _prompt(
                    agent,
                    viewer,
                    session["sessionId"],
                    "total() in app.py returns the wrong sum. Find the bug and fix it.",
                )
            except RemoteError as exc:
                viewer.out.line(style.red(f"the turn failed: {exc.message}"))
                return 1
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="acp-fsm demo", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--provider",
        choices=PROVIDERS,
        default="anthropic",
        help="the wire format the scripted model speaks (default anthropic)",
    )
    parser.add_argument(
        "--live", action="store_true", help="use the provider configured in the environment instead"
    )
    parser.add_argument("--no-color", action="store_true", help="plain output")
    args = parser.parse_args(argv)
    from acp_fsm import logs

    logs.configure("warning")  # the demo's own client side logs only trouble, to stderr
    style = Style(color=sys.stdout.isatty() and not args.no_color)
    # When the reader goes away (`acp-fsm demo | head`), end quietly like other command-line
    # tools; the agents it spawned see their stdin close and exit on their own.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return asyncio.run(run_live(style) if args.live else run_demo(args.provider, style))
    except KeyboardInterrupt:  # Ctrl-C: the agents are stopped, the temporary files removed
        return 130


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
