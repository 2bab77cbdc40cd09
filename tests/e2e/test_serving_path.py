"""What serving loads: a whole session, tools and turns included, never imports the devkit
(the scripted provider and editor, the schema check, the demo, the diagram writer and the
diagnostic methods). With the diagnostic methods on, `_acp_fsm/modules` names every module
the process holds (`sys.modules`); with them off, `python -X importtime` names what it
imported (a line another thread's import wrote over may be missing: threads share stderr)."""

from __future__ import annotations

import re
from pathlib import Path

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import BARE, Launcher, args

# A self time is negative when another thread imported meanwhile (aiohttp's, acp_fsm.warm).
IMPORTED = re.compile(r"^import time:\s+-?\d+ \|\s+-?\d+ \| ( *)(\S+)$", re.MULTILINE)


def imported(stderr: bytes | bytearray) -> set[str]:
    return {match[1] for match in IMPORTED.findall(stderr.decode("utf-8", "replace"))}


async def served_session(
    launch: Launcher, server: ScriptedProvider, project: Path, **env: str | None
) -> set[str]:
    """The modules an agent imported over a session with a tool turn, a list and a close."""
    (project / "notes.txt").write_text("hello\n")
    agent = await launch.start("openai", capabilities=BARE, PYTHONPROFILEIMPORTTIME="1", **env)
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("read-1", "read_file", args(path="notes.txt")),
                Call("ls-1", "list_directory", args(path=".")),
            )
        ),
        Reply(text="done"),
    )
    turn = await agent.prompt(session, "read the notes")
    assert turn.stop_reason == "end_turn"
    listed = await agent.result("session/list", {})
    assert [entry["sessionId"] for entry in listed["sessions"]] == [session]
    await agent.result("session/close", {"sessionId": session})
    held: set[str] = set()
    if env.get("ACP_FSM_DEBUG_METHODS"):
        held = set((await agent.result("_acp_fsm/modules", {}))["modules"])
    await launch.close(agent)
    return held | imported(agent.proc.stderr)


async def test_serving_never_imports_the_devkit(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    modules = await served_session(launch, server, project, ACP_FSM_DEBUG_METHODS=None)
    assert "acp_fsm.startup" in modules  # imported before any thread imports
    assert sorted(name for name in modules if name.startswith("acp_fsm.devkit")) == []


async def test_the_diagnostic_methods_bring_only_their_own_module(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Every module the process holds after a session: only the diagnostic methods' own
    module of the devkit among them."""
    modules = await served_session(launch, server, project, ACP_FSM_DEBUG_METHODS="1")
    assert {"acp_fsm.startup", "acp_fsm.turn", "acp_fsm.tools.read_file"} <= modules
    devkit = sorted(name for name in modules if name.startswith("acp_fsm.devkit"))
    assert devkit == ["acp_fsm.devkit", "acp_fsm.devkit.debug"]
