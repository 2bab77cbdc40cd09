"""What real editors send and expect (Toad, CodeCompanion, avante, acpx, the official SDK
clients): `null` for an empty result, errors whose reason sits in `error.data`, unsaved
buffers that exist nowhere on disk, terminals that are gone when a session is reloaded, and
session pickers that list what `session/list` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_fsm.devkit.editor import EditorError
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    EDITOR,
    Agent,
    Launcher,
    args,
    content_text,
    for_call,
    message_chunks,
    statuses,
    tool_results,
)


async def run_calls(
    agent: Agent, server: ScriptedProvider, session: str, *calls: Call
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, bool | None]]]:
    """One turn in which the model makes `calls`, then says "done": the turn's updates and
    the tool results the model was sent."""
    server.script(Reply(calls=calls), Reply(text="done"))
    turn = await agent.prompt(session, "go")
    assert turn.stop_reason == "end_turn", turn.response
    assert turn.updates[-1] == message_chunks("done")[0]
    return turn.updates, tool_results(server.requests[-1])


async def test_a_null_result_is_success_where_the_result_carries_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Toad, CodeCompanion and avante answer a successful write (and terminal/release) with
    `"result": null`: the write happened, so the call completed."""
    (project / "code.py").write_text("x = 1\n")
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.null_results |= {"fs/write_text_file", "terminal/release"}
    agent.editor.permissions.extend(["allow_always", "allow_always", "allow_once"])
    session = await agent.new_session(project)

    updates, results = await run_calls(
        agent,
        server,
        session,
        Call("w1", "write_file", args(path="new.txt", content="hello\n")),
        Call("e1", "edit_file", args(path="code.py", old_text="x = 1", new_text="x = 2")),
        Call("w2", "write_file", args(path="more.txt", content="more\n")),
        Call("r1", "run_command", args(command="echo hi")),
    )

    for call_id in ("w1", "e1", "w2", "r1"):
        assert statuses(for_call(updates, call_id))[-1] == "completed", call_id
    assert results["w1"] == ("Created new.txt (1 line).", False)
    assert results["e1"][0].startswith("Edited code.py") and results["e1"][1] is False
    assert agent.editor.buffers[str(project / "code.py")] == "x = 2\n"
    assert agent.log("peer_result_invalid") == []
    assert agent.log("terminal_cleanup_failed") == []
    accepted = [e["method"] for e in agent.log("null_result_accepted")]
    assert accepted == ["fs/write_text_file", "terminal/release"]  # once per method


async def test_a_null_result_where_data_is_required_is_refused_as_such(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A read must carry `content` and a permission answer its `outcome`: `null` is no
    answer, and says so; it is our check that failed, not an error the editor reported."""
    (project / "a.txt").write_text("a\n")
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.null_results |= {"fs/read_text_file", "session/request_permission"}
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    _, results = await run_calls(
        agent,
        server,
        session,
        Call("r1", "read_file", args(path="a.txt")),
        Call("w1", "write_file", args(path="b.txt", content="b")),
    )

    read, read_error = results["r1"]
    assert read_error is True
    assert "answer to fs/read_text_file is not valid ACP: expected object, got null" in read
    denied, denied_error = results["w1"]
    assert denied_error is True
    assert "answer to session/request_permission is not valid ACP" in denied
    for text in (read, denied):
        assert "peer error" not in text
    assert not (project / "b.txt").exists()


async def test_an_editor_error_is_quoted_with_its_data(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """acpx refuses a write with -32603 "Internal error" and the reason in `data.details`;
    the model and the user must see that reason."""
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.overrides["fs/write_text_file"] = EditorError(
        -32603, "Internal error", {"details": "Permission denied for fs/write_text_file"}
    )
    agent.editor.permissions.append("allow_once")
    session = await agent.new_session(project)

    updates, results = await run_calls(
        agent, server, session, Call("w1", "write_file", args(path="a.txt", content="a"))
    )

    text, is_error = results["w1"]
    assert is_error is True
    assert text.startswith("The editor could not write a.txt")
    assert "Permission denied for fs/write_text_file" in text
    assert "-32603" in text and "peer error" not in text
    assert content_text(for_call(updates, "w1")[-1]) == text


async def test_an_unsaved_buffer_is_read_though_the_disk_has_no_such_file(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.buffers[str(project / "draft.md")] = "# Draft\nunsaved words\n"
    session = await agent.new_session(project)

    _, results = await run_calls(
        agent, server, session, Call("r1", "read_file", args(path="draft.md"))
    )

    assert results["r1"] == ("# Draft\nunsaved words\n", False)
    assert not (project / "draft.md").exists()


async def test_a_reloaded_session_shows_what_a_terminal_printed(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """The terminal of a command belongs to the connection that ran it; a reload shows the
    command's output and exit status as text instead, bounded."""
    first = await launch.start("anthropic", capabilities=EDITOR)
    first.editor.permissions.extend(["allow_once", "allow_once"])
    first.editor.terminal_output = "hello\n"
    session = await first.new_session(project)
    await run_calls(first, server, session, Call("r1", "run_command", args(command="echo hi")))
    first.editor.terminal_output = "y" * 200_000
    await run_calls(first, server, session, Call("r2", "run_command", args(command="yes")))
    await launch.close(first)

    second = await launch.start("anthropic", capabilities=EDITOR)
    start = len(second.messages)
    assert "result" in await second.request(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    replayed = second.updates(session, start)

    assert "terminal" not in str(replayed)
    short, long = (for_call(replayed, c)[-1] for c in ("r1", "r2"))
    assert statuses([short, long]) == ["completed", "completed"]
    assert content_text(short) == "Exit code: 0\nhello\n"
    assert content_text(long).startswith("Exit code: 0\nyyy")
    assert "bytes of output omitted" in content_text(long)
    assert len(content_text(long)) < 100_000


async def test_an_editor_error_for_a_file_missing_on_disk_is_quoted(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """Only the editor saying "no such file" makes a file missing on disk absent: any other
    failure (here acpx's refusal) is reported as it is, never as "File not found"."""
    agent = await launch.start("anthropic", capabilities=EDITOR)
    agent.editor.overrides["fs/read_text_file"] = EditorError(
        -32603, "Internal error", {"details": "Permission denied for fs/read_text_file"}
    )
    session = await agent.new_session(project)

    _, results = await run_calls(
        agent,
        server,
        session,
        Call("r1", "read_file", args(path="unsaved.py")),
        Call("w1", "write_file", args(path="unsaved.py", content="x")),
    )

    for call_id in ("r1", "w1"):
        text, is_error = results[call_id]
        assert is_error is True
        assert text.startswith("The editor could not read unsaved.py"), text
        assert "Permission denied for fs/read_text_file" in text
    assert agent.editor.of_method("fs/write_text_file") == []  # no buffer was overwritten
