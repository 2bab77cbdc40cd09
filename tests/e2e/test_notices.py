"""Notices and compactions for clients that say they show them: an agent notice (an MCP
server that did not start) is a `notice` update to a client advertising `session.notices`, and
a compaction is `compaction_update`s with its summary as a `compaction_summary_chunk` to one
advertising `session.compaction`; other clients get text, as before (tests/e2e/test_mcp.py,
test_compaction.py). Every message is checked against the official schema at close."""

from __future__ import annotations

from pathlib import Path

from acp_fsm.devkit.provider import Hang, Reply, ScriptedProvider
from tests.e2e.support import BARE, Launcher
from tests.e2e.test_mcp import open_session
from tests.harness import wait_until

SEES_ALL = {**BARE, "session": {"notices": {}, "compaction": {}}}
SUMMARY = "SUMMARY: two questions were asked."


async def test_a_notice_is_a_notice_update_for_a_client_that_shows_them(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=SEES_ALL)
    missing = {"name": "gone", "command": str(project / "no-such-server"), "args": [], "env": []}
    session = await open_session(agent, project, missing)
    server.script(Reply(text="hello"))

    turn = await agent.prompt(session, "hi")

    notice, answer = turn.updates
    assert notice["sessionUpdate"] == "notice" and notice["severity"] == "warning"
    assert notice["title"].startswith("MCP server 'gone' could not be started")
    assert answer == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "hello"},
    }


async def test_a_compaction_is_compaction_updates_for_a_client_that_follows_them(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=SEES_ALL)
    session = await agent.new_session(project)
    server.script(Reply(text="one"), Reply(text="two"), Reply(text=SUMMARY))
    await agent.prompt(session, "first question")
    await agent.prompt(session, "second question")

    turn = await agent.prompt(session, "/compact")

    assert turn.stop_reason == "end_turn"
    kinds = [u["sessionUpdate"] for u in turn.updates]
    assert kinds == ["compaction_update", "compaction_summary_chunk", "compaction_update"]
    started, summary, ended = turn.updates
    assert started["status"] == "in_progress" and ended["status"] == "completed"
    assert started["compactionId"] == summary["compactionId"] == ended["compactionId"]
    assert summary["content"] == {"type": "text", "text": SUMMARY}


async def test_a_cancelled_compaction_ends_cancelled(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=SEES_ALL)
    session = await agent.new_session(project)
    server.script(
        Reply(text="one"), Reply(text="two"), Reply(text=["SUMMARY", " more"], fault=Hang(4))
    )
    await agent.prompt(session, "first question")
    await agent.prompt(session, "second question")
    running = await agent.start_prompt(session, "/compact")
    await wait_until(lambda: len(server.requests) == 3, "the summary call")

    await agent.cancel(session)

    turn = await running.result()
    assert turn.stop_reason == "cancelled"
    statuses = [u["status"] for u in turn.updates if u["sessionUpdate"] == "compaction_update"]
    assert statuses == ["in_progress", "cancelled"]
