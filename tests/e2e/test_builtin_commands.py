"""The built-in commands through the real agent: announced with their descriptions; /status and
/mcp answered by the agent with no model call (and shown again by a reload); /init a model
turn that writes AGENTS.md through the usual permission; /review a read-only turn with the
diff in its prompt."""

from __future__ import annotations

import subprocess
from pathlib import Path

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Launcher, args, made_titles, tool_results, user_texts
from tests.e2e.test_mcp import open_session, stdio_server
from tests.e2e.test_sessions import restore
from tests.e2e.test_user_commands import announced, said
from tests.harness import wait_until


def git(cwd: Path, *command: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def committed(project: Path, name: str, text: str) -> None:
    """`project` made a git repository whose one commit holds `name` with `text`."""
    git(project, "init", "-q")
    (project / name).write_text(text)
    git(project, "add", name)
    git(project, "commit", "-qm", "first")


def tool_names(body: dict[str, object]) -> set[str]:
    tools = body.get("tools") or []
    assert isinstance(tools, list)
    return {t.get("name") or t["function"]["name"] for t in tools}


async def test_each_built_in_is_announced_with_what_it_does(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    commands = {c["name"]: c for c in await announced(agent, session, 1)}
    assert list(commands) == ["compact", "init", "review", "status", "mcp", "permissions", "rewind"]
    assert "input" not in commands["status"] and "input" not in commands["mcp"]
    assert commands["review"]["input"] == {"hint": "a git range such as main..HEAD (optional)"}
    assert all(len(c["description"]) > 20 for c in commands.values())


async def test_status_is_answered_by_the_agent_and_shown_again_by_a_reload(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "AGENTS.md").write_text("Be brief.\n")
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "ship.md").write_text("Ship it.\n")
    server.script(Reply(text="hello"))
    agent = await launch.start("anthropic", ACP_FSM_MODEL="claude-sonnet-4-5")
    session = await agent.new_session(project)
    await announced(agent, session)
    first = await agent.prompt(session, "hi")
    assert first.stop_reason == "end_turn"
    await wait_until(lambda: made_titles(agent, session, first.end), "the model's title")
    calls = len(server.requests)

    turn = await agent.prompt(session, "/status")

    assert turn.stop_reason == "end_turn"
    assert len(server.requests) == calls  # no model call
    text = said(turn.updates)
    for line in (
        "- Provider: anthropic (http://127.0.0.1:",
        "- Model: claude-sonnet-4-5",
        "- Mode: Ask",
        "- Thought level: default",
        "- Context: 19 of 200,000 tokens (0%)",
        # the turn's call and the title call
        "- Tokens so far: 24 in (0 read from the cache, 0 written to it), 14 out",
        "- MCP servers: none",
        f"- Instruction files: {project / 'AGENTS.md'}",
        "- Commands: /ship",
        "- Skills: none",
        "- Background commands: none",
    ):
        assert line in text, (line, text)
    assert turn.response["result"]["_meta"]["acpFsm"]["statePath"] == [
        "idle",
        "reporting",
        "done",
    ]
    await launch.close(agent)
    other = await launch.start("anthropic")
    _, replayed = await restore(other, "session/load", session, project)
    assert text in said(replayed)


async def test_status_shows_a_thought_level_only_for_a_model_that_takes_one(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """As the session's options do: a model without the thinking option has no level, even
    when one was chosen for another model."""
    from tests.e2e.test_settings import choose, new_session, options_of

    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-5", ACP_FSM_MODELS="gpt-5,gpt-4.1")
    session, _ = await new_session(agent, project)
    await choose(agent, session, "thought_level", "high")
    assert "- Thought level: high\n" in said((await agent.prompt(session, "/status")).updates)

    chosen = await choose(agent, session, "model", "gpt-4.1")

    assert "thought_level" not in options_of(chosen)
    text = said((await agent.prompt(session, "/status")).updates)
    assert "- Thought level: — (this model has no thinking option)\n" in text, text
    assert "high" not in text


async def test_mcp_lists_the_servers_their_state_and_tools(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai")
    missing = {"name": "gone", "command": str(project / "no-such-server"), "args": [], "env": []}
    session = await open_session(agent, project, missing, stdio_server())
    turn = await agent.prompt(session, "/mcp")
    assert turn.stop_reason == "end_turn" and server.requests == []
    text = said(turn.updates)
    assert "- gone (stdio): failed (MCP server 'gone' could not be started" in text
    assert "- tools (stdio): running; tools: " in text and "add" in text

    bare = await agent.new_session(project)
    assert said((await agent.prompt(bare, "/mcp")).updates) == (
        "No MCP servers in this session (the editor configures them)."
    )


async def test_init_asks_the_model_to_write_agents_md_with_permission(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="AGENTS.md", content="# Agents\n")),)),
        Reply(text="written"),
    )
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "/init the test commands")
    assert turn.stop_reason == "end_turn"
    sent = user_texts(server.requests[0])[0]
    assert sent.startswith("Study this project, then write AGENTS.md at its root")
    assert sent.endswith("The user asks you to stress: the test commands")
    assert len(agent.editor.of_method("session/request_permission")) == 1
    assert (project / "AGENTS.md").read_text() == "# Agents\n"


async def test_review_is_a_read_only_turn_over_the_uncommitted_diff(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    committed(project, "app.py", "x = 1\n")
    (project / "app.py").write_text("x = 2\n")
    (project / "new.py").write_text("y = 1\n")
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="app.py", content="x = 3\n")),)),
        Reply(text="one finding"),
        Reply(text="back to normal"),
    )
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": "full_access"})

    turn = await agent.prompt(session, "/review")

    assert turn.stop_reason == "end_turn"
    sent = user_texts(server.requests[0])[0]
    assert sent.startswith("Review the uncommitted changes of the repository in")
    assert "-x = 1\n+x = 2" in sent and "New files, not in the diff (read them):\nnew.py" in sent
    offered = tool_names(server.requests[0].body)
    assert "read_file" in offered and not offered & {"write_file", "run_command", "edit_file"}
    refused = tool_results(server.requests[1])["w1"][0]
    assert refused.startswith("Not run: this turn is a /review")
    assert (project / "app.py").read_text() == "x = 2\n"
    assert agent.editor.of_method("session/request_permission") == []
    # the next turn has the session's mode again
    await agent.prompt(session, "fix it")
    assert "write_file" in tool_names(server.requests[-1].body)


async def test_review_of_a_range_and_of_what_is_no_range(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    committed(project, "a.txt", "one\n")
    (project / "a.txt").write_text("two\n")
    git(project, "commit", "-qam", "second")
    server.fallback = Reply(text="ok")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)

    await agent.prompt(session, "/review HEAD~1..HEAD")
    sent = user_texts(server.requests[-1])[-1]
    assert sent.startswith("Review the changes of HEAD~1..HEAD") and "-one\n+two" in sent
    await agent.prompt(session, "/review --output=/tmp/x")
    assert "'--output=/tmp/x' is not a git range" in user_texts(server.requests[-1])[-1]
    await agent.prompt(session, "/review")
    assert "there are none. Say so." in user_texts(server.requests[-1])[-1]


async def test_review_runs_nothing_the_checkout_configures_and_works_before_a_commit(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """A repository anyone wrote: its fsmonitor hook and external diff never run on a
    read-only turn; a repository with no commit yet is reviewed all the same."""
    git(project, "init", "-q")
    ran = tmp_path / "ran"
    (project / "first.py").write_text("x = 1\n")
    git(project, "add", "first.py")
    git(project, "config", "core.fsmonitor", f"touch {ran}; false")
    git(project, "config", "diff.external", f"touch {ran}; false")
    (project / "loose.py").write_text("y = 1\n")
    server.fallback = Reply(text="ok")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)

    await agent.prompt(session, "/review")

    sent = user_texts(server.requests[-1])[-1]
    assert "+x = 1" in sent and "New files, not in the diff (read them):\nloose.py" in sent
    assert not ran.exists()
