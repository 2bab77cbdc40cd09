"""Each tool through the editor (fs/*, terminal/*) and through the disk / a local process:
the updates of the call, what the editor was asked, and the result the model is sent next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import HOLD, EditorError
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    BARE,
    CLIENT_FS,
    EDITOR,
    Agent,
    Launcher,
    args,
    entries,
    for_call,
    message_chunks,
    shown_diff,
    statuses,
    text_content,
    tool_results,
)

# (client capabilities, provider): the editor path is checked on Anthropic's wire format,
# the disk path on OpenAI's.
MODES = [
    pytest.param(EDITOR, "anthropic", id="editor", marks=CLIENT_FS),
    pytest.param(BARE, "openai", id="disk"),
]


async def one_call(
    agent: Agent, server: ScriptedProvider, session: str, *calls: Call
) -> list[dict[str, Any]]:
    """Run a turn in which the model makes `calls` then says "done"; the calls' updates."""
    server.script(Reply(text="On it.", calls=calls), Reply(text="done"))
    turn = await agent.prompt(session, f"please use {', '.join(c.name for c in calls)}")
    assert turn.stop_reason == "end_turn"
    assert turn.updates[0] == message_chunks("On it.")[0]
    assert turn.updates[-1] == message_chunks("done")[0]
    await agent.assert_quiet_after(turn, session)
    return turn.updates[1:-1]


def pending(
    call_id: str,
    name: str,
    title: str,
    kind: str,
    raw_input: dict[str, Any],
    locations: list[dict[str, Any]] | None,
    content: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "name": name,
        "status": "pending",
        "title": title,
        "kind": kind,
        "rawInput": raw_input,
    }
    if content is not None:
        update["content"] = content
    if locations is not None:
        update["locations"] = locations
    return update


def shows(call_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    """The change a call will make, shown before anyone is asked (no status change)."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": content}


def command_view(command: str, cwd: Path) -> list[dict[str, Any]]:
    """How a command is shown before it runs: the whole command, and where."""
    return [text_content(f"```sh\n{command}\n```\nin {cwd}")]


def progress(call_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "in_progress",
        **fields,
    }


def final(
    call_id: str,
    status: str,
    content: list[dict[str, Any]] | None,
    locations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The last update of a call (`content` None: it leaves the content shown as it is)."""
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": status,
    }
    if content is not None:
        update["content"] = content
    if locations is not None:
        update["locations"] = locations
    return update


def result_of(server: ScriptedProvider, call_id: str) -> tuple[str, bool | None]:
    """The call's result as the model call after the tool carried it."""
    return tool_results(server.requests[-1])[call_id]


def no_error(provider: str) -> bool | None:
    return False if provider == "anthropic" else None


@pytest.mark.parametrize(("capabilities", "provider"), MODES)
async def test_read_file(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, Any],
    provider: str,
) -> None:
    path = str(project / "notes.txt")
    (project / "notes.txt").write_text("on disk 1\non disk 2\n")
    agent = await launch.start(provider, capabilities=capabilities)
    agent.editor.buffers[path] = "unsaved 1\nunsaved 2\n"
    session = await agent.new_session(project)

    updates = await one_call(
        agent, server, session, Call("read-1", "read_file", args(path="notes.txt"))
    )

    via_editor = capabilities is EDITOR
    expected = "unsaved 1\nunsaved 2\n" if via_editor else "on disk 1\non disk 2\n"
    where = [{"path": path, "line": 1}]
    assert updates == [
        pending("read-1", "read_file", "Read notes.txt", "read", {"path": "notes.txt"}, where),
        progress("read-1"),
        final("read-1", "completed", [text_content(expected)], where),
    ]
    reads = [r["params"] for r in agent.editor.received]
    assert reads == (
        [{"sessionId": session, "path": path, "line": 1, "limit": 2001}] if via_editor else []
    )
    assert result_of(server, "read-1") == (expected, no_error(provider))


@pytest.mark.parametrize(("capabilities", "provider"), MODES)
async def test_write_file(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, Any],
    provider: str,
) -> None:
    target = project / "notes.txt"
    path = str(target)
    target.write_text("old\n")
    agent = await launch.start(provider, capabilities=capabilities)
    agent.editor.buffers[path] = "old\n"
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    raw = {"path": "notes.txt", "content": "new\n"}
    updates = await one_call(agent, server, session, Call("write-1", "write_file", args(**raw)))

    where = [{"path": path}]
    diff = shown_diff(path, "old\n", "new\n")
    assert updates == [
        pending("write-1", "write_file", "Write notes.txt", "edit", raw, where),
        shows("write-1", [diff]),
        progress("write-1"),
        final("write-1", "completed", [diff], where),
    ]
    asked = agent.editor.of_method("session/request_permission")[0]["params"]["toolCall"]
    assert asked["content"] == [diff]  # the user sees the change before allowing it
    if capabilities is EDITOR:
        assert agent.editor.methods() == [
            "fs/read_text_file",
            "session/request_permission",
            "fs/read_text_file",
            "fs/write_text_file",
        ]
        assert agent.editor.of_method("fs/write_text_file")[0]["params"] == {
            "sessionId": session,
            "path": path,
            "content": "new\n",
        }
        assert target.read_text() == "old\n"  # the editor writes, not the agent
    else:
        assert agent.editor.methods() == ["session/request_permission"]
        assert target.read_text() == "new\n"
        assert entries(project) == ["notes.txt"]  # no temp file left
    text, is_error = result_of(server, "write-1")
    assert text.startswith("Wrote notes.txt") and is_error in (False, None)


@pytest.mark.parametrize(("capabilities", "provider"), MODES)
async def test_edit_file(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    capabilities: dict[str, Any],
    provider: str,
) -> None:
    target = project / "code.py"
    path = str(target)
    target.write_text("a = 1\nb = 2\n")
    agent = await launch.start(provider, capabilities=capabilities)
    agent.editor.buffers[path] = "a = 1\nb = 2\n"
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    raw = {"path": "code.py", "old_text": "b = 2", "new_text": "b = 3"}
    updates = await one_call(agent, server, session, Call("edit-1", "edit_file", args(**raw)))

    diff = shown_diff(path, "a = 1\nb = 2\n", "a = 1\nb = 3\n")
    assert updates == [
        pending("edit-1", "edit_file", "Edit code.py", "edit", raw, [{"path": path}]),
        shows("edit-1", [diff]),
        progress("edit-1"),
        final("edit-1", "completed", [diff], [{"path": path, "line": 2}]),
    ]
    edited = agent.editor.buffers[path] if capabilities is EDITOR else target.read_text()
    assert edited == "a = 1\nb = 3\n"
    assert result_of(server, "edit-1") == (
        "Edited code.py: replaced 1 occurrence, first change at line 2.",
        no_error(provider),
    )


@CLIENT_FS
async def test_run_command_in_the_editor_terminal(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    agent.editor.terminal_output = "hello\n"
    session = await agent.new_session(project)

    raw = {"command": "echo hello"}
    updates = await one_call(agent, server, session, Call("run-1", "run_command", args(**raw)))

    terminal = [{"type": "terminal", "terminalId": "term-1"}]
    shown = command_view("echo hello", project)
    assert updates == [
        pending("run-1", "run_command", "Run `echo hello`", "execute", raw, None, shown),
        progress("run-1"),
        progress("run-1", content=terminal),  # embedded before the release
        final("run-1", "completed", None),
    ]  # and not repeated after it
    asked = agent.editor.of_method("session/request_permission")[0]["params"]["toolCall"]
    assert asked["content"] == shown
    assert agent.editor.methods() == [
        "session/request_permission",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    create = agent.editor.of_method("terminal/create")[0]["params"]
    assert {k: create[k] for k in ("sessionId", "command", "args", "cwd")} == {
        "sessionId": session,
        "command": "sh",
        "args": ["-c", "echo hello"],
        "cwd": str(project),
    }
    for method in ("terminal/wait_for_exit", "terminal/output", "terminal/release"):
        assert agent.editor.of_method(method)[0]["params"] == {
            "sessionId": session,
            "terminalId": "term-1",
        }
    assert result_of(server, "run-1") == ("Exit code: 0\nhello\n", False)


@pytest.mark.v1_only("v2 shows it in a terminal of the agent's (tests/e2e/test_protocol_v2.py)")
async def test_run_command_as_a_local_process(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", capabilities=BARE)
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    raw = {"command": "pwd; echo to-stderr >&2; exit 3"}
    updates = await one_call(agent, server, session, Call("run-1", "run_command", args(**raw)))

    output = f"Exit code: 3\n{project}\nto-stderr\n"
    shown = command_view(raw["command"], project)
    assert updates == [
        pending("run-1", "run_command", f"Run `{raw['command']}`", "execute", raw, None, shown),
        progress("run-1"),
        final("run-1", "completed", [text_content(output)]),
    ]
    assert result_of(server, "run-1") == (output, None)


async def test_list_directory_and_search_files(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "src").mkdir()
    (project / "src" / "main.py").write_text("import os\nprint('needle here')\n")
    (project / "README").write_text("no match\n")
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("ls-1", "list_directory", args(path=".")),
                Call("grep-1", "search_files", args(pattern="need+le")),
            )
        ),
        Reply(text="done"),
    )

    turn = await agent.prompt(session, "look around")

    assert turn.stop_reason == "end_turn"
    root = str(project)
    assert [u for u in turn.updates if u["sessionUpdate"] == "tool_call"] == [
        pending("ls-1", "list_directory", "List .", "read", {"path": "."}, [{"path": root}]),
        pending(
            "grep-1",
            "search_files",
            "Search /need+le/ in .",
            "search",
            {"pattern": "need+le"},
            [{"path": root}],
        ),
    ]
    listing = "README\nsrc/"
    matches = "src/main.py:2: print('needle here')"
    assert turn.updates[2:] == [
        progress("ls-1"),
        final("ls-1", "completed", [text_content(listing)]),
        progress("grep-1"),
        final("grep-1", "completed", [text_content(matches)]),
        *message_chunks("done"),
    ]
    assert agent.editor.received == []  # reads inside the cwd never ask
    assert tool_results(server.requests[-1]) == {
        "ls-1": (listing, False),
        "grep-1": (matches, False),
    }


async def test_failing_calls_are_results_and_the_turn_goes_on(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("miss-1", "read_file", args(path="missing.txt")),
                Call("bad-1", "read_file", args(file="x")),
                Call("cut-1", "read_file", '{"path": "a'),
                Call("fly-1", "fly_to_the_moon", "{}"),
            )
        ),
        Reply(text="I see."),
    )

    turn = await agent.prompt(session, "try things")

    assert turn.stop_reason == "end_turn"
    finals = {u["toolCallId"]: u for u in turn.updates if u.get("status") == "failed"}
    assert set(finals) == {"miss-1", "bad-1", "cut-1", "fly-1"}
    results = tool_results(server.requests[-1])
    assert results["miss-1"] == ("File not found: missing.txt", True)
    assert finals["miss-1"]["content"] == [text_content("File not found: missing.txt")]
    assert results["bad-1"][0].startswith("Invalid arguments for read_file")
    assert results["cut-1"][0].startswith("Invalid arguments for read_file")
    assert results["fly-1"][0].startswith("Unknown tool 'fly_to_the_moon'")
    assert all(r[1] is True for r in results.values())
    assert turn.updates[-1] == message_chunks("I see.")[0]


@CLIENT_FS
async def test_editor_failures_are_tool_results(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A read the editor leaves unanswered ends at the client-RPC limit and is withdrawn;
    a write whose file the editor cannot show fails before anyone is asked to allow it."""
    (project / "a.txt").write_text("a\n")
    agent = await launch.start("anthropic", capabilities=EDITOR, ACP_CLIENT_RPC_TIMEOUT_MS="300")
    agent.editor.overrides["fs/read_text_file"] = HOLD
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("read-1", "read_file", args(path="a.txt")),
                Call("write-1", "write_file", args(path="new.txt", content="n")),
            )
        ),
        Reply(text="both failed"),
    )

    turn = await agent.prompt(session, "go")

    assert turn.stop_reason == "end_turn"
    reads = agent.editor.of_method("fs/read_text_file")
    withdrawn = agent.notifications("$/cancel_request")
    assert [m["params"] for m in withdrawn] == [{"requestId": r["id"]} for r in reads]
    assert len(reads) == 2  # read-1's, and write-1's look for an unsaved buffer
    results = tool_results(server.requests[-1])
    assert results["read-1"][0].startswith("The editor could not read a.txt")
    assert results["write-1"][0].startswith("The editor could not read new.txt")
    assert "no response within 300 ms" in results["write-1"][0]
    assert results["read-1"][1] is True and results["write-1"][1] is True
    assert agent.editor.of_method("session/request_permission") == []
    assert agent.editor.of_method("fs/write_text_file") == []
    assert statuses(for_call(turn.updates, "write-1")) == ["pending", "failed"]


@CLIENT_FS
async def test_an_editor_write_error_is_a_tool_result(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.permissions.append("allow_once")
    agent.editor.overrides["fs/write_text_file"] = EditorError(-32603, "disk full")
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("write-1", "write_file", args(path="new.txt", content="n")),)),
        Reply(text="it failed"),
    )

    turn = await agent.prompt(session, "go")

    text, is_error = tool_results(server.requests[-1])["write-1"]
    assert text.startswith("The editor could not write new.txt") and "disk full" in text
    assert is_error is True
    assert statuses(for_call(turn.updates, "write-1")) == ["pending", "in_progress", "failed"]


async def test_calls_that_build_on_each_other_in_one_message(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Each call is previewed against the files as the calls before it will leave them (none
    has run yet when the user is asked); after a command, whose effects no preview can show,
    the next call is shown without a diff and runs on what the command left."""
    (project / "code.py").write_text("a = 1\n")
    agent = await launch.start("openai", capabilities=BARE)
    # w1's "Always allow" stores `Edit(./**)`: the edits are not asked; the command is
    agent.editor.permissions.extend(["allow_always", "allow_once"])
    session = await agent.new_session(project)
    new, code = str(project / "new.py"), str(project / "code.py")

    updates = await one_call(
        agent,
        server,
        session,
        *[
            Call("w1", "write_file", args(path="new.py", content="x = 1\n")),
            Call("e1", "edit_file", args(path="new.py", old_text="x = 1", new_text="x = 2")),
            Call("e2", "edit_file", args(path="code.py", old_text="a = 1", new_text="a = 2")),
            Call("e3", "edit_file", args(path="code.py", old_text="a = 2", new_text="a = 3")),
            Call("r1", "run_command", args(command="echo 'a = 4' > code.py")),
            Call("e4", "edit_file", args(path="code.py", old_text="a = 4", new_text="a = 5")),
        ],
    )

    shown = {
        u["toolCallId"]: u["content"]
        for u in updates
        if u["sessionUpdate"] == "tool_call_update" and "status" not in u
    }
    assert shown == {
        "w1": [shown_diff(new, None, "x = 1\n")],
        "e1": [shown_diff(new, "x = 1\n", "x = 2\n")],
        "e2": [shown_diff(code, "a = 1\n", "a = 2\n")],
        "e3": [shown_diff(code, "a = 2\n", "a = 3\n")],
    }
    for call_id in ("w1", "e1", "e2", "e3", "r1", "e4"):
        assert statuses(for_call(updates, call_id))[-1] == "completed", call_id
    assert (project / "new.py").read_text() == "x = 2\n"
    assert (project / "code.py").read_text() == "a = 5\n"
