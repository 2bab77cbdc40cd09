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
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_fsm.devkit.demo_script import FIXED_LINE, model_script, write_project
from acp_fsm.devkit.demo_view import Style, Viewer
from acp_fsm.devkit.editor import AgentLink, NoAnswer, result_of
from acp_fsm.protocol.errors import RemoteError

if TYPE_CHECKING:
    from acp_fsm.devkit.provider import ScriptedProvider
    from acp_fsm.providers.config import ProviderConfig

# The title call after the first turn is made with a model of its own, on the scripted server's
# lane for it (`ScriptedProvider.lanes`): the conversation's script stays whole.
TITLE_MODEL = "demo-title-model"
TITLE = "Off-by-one fix in total()"
# The wire formats the scripted model speaks, by ACP_FSM_PROVIDER: OpenAI's two APIs share its
# base URL and key.
PROVIDERS = ("anthropic", "openai", "openai-responses")
CANCEL_AFTER_S = 0.6


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
        write_project(project)
        viewer = Viewer(project, style)
        lanes = {TITLE_MODEL: Reply(text=TITLE)}
        async with ScriptedProvider(*model_script(provider), lanes=lanes) as server:
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
        write_project(project)
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
