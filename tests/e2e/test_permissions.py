"""Permission: each answer, the "always" memory, a client-side cancelled outcome, a timeout,
and which reads ask (outside the cwd and the additional directories only)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from acp_fsm.devkit.editor import HOLD, Choice
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import (
    BARE,
    Agent,
    Launcher,
    args,
    content_text,
    for_call,
    message_chunks,
    shown_diff,
    statuses,
    text_content,
    tool_results,
)

OPTION_IDS = ["allow_once", "allow_always", "reject_once", "reject_always"]


def write(call_id: str, name: str, content: str = "x\n") -> Call:
    return Call(call_id, "write_file", args(path=name, content=content))


async def setup(launch: Launcher, project: Path, *answers: Choice, **env: str) -> tuple[Agent, str]:
    agent = await launch.start("anthropic", capabilities=BARE, **env)
    agent.editor.permissions.extend(answers)
    return agent, await agent.new_session(project)


def asked_for(agent: Agent) -> list[str]:
    """The tool call ids the user was asked about, in order."""
    return [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]


async def test_allow_once_asks_every_time(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await setup(launch, project, "allow_once", "allow_once")
    server.script(
        Reply(calls=(write("w1", "a.txt"),)),
        Reply(calls=(write("w2", "b.txt"),)),
        Reply(text="both written"),
    )

    turn = await agent.prompt(session, "write two files")

    assert turn.stop_reason == "end_turn"
    assert asked_for(agent) == ["w1", "w2"]
    first = agent.editor.of_method("session/request_permission")[0]["params"]
    path = str(project / "a.txt")
    assert first["sessionId"] == session
    assert first["toolCall"] == {
        "toolCallId": "w1",
        "name": "write_file",
        "status": "pending",
        "title": "Write a.txt",
        "kind": "edit",
        "rawInput": {"path": "a.txt", "content": "x\n"},
        "content": [shown_diff(path, None, "x\n")],
        "locations": [{"path": path}],
    }
    assert [o["optionId"] for o in first["options"]] == OPTION_IDS
    assert [o["kind"] for o in first["options"]] == OPTION_IDS
    assert (project / "a.txt").read_text() == "x\n" and (project / "b.txt").read_text() == "x\n"
    # the permission request comes after the call was announced, and before it runs
    announced = next(
        i
        for i, m in enumerate(agent.messages)
        if m.get("params", {}).get("update", {}).get("toolCallId") == "w1"
    )
    asked = agent.position(agent.editor.of_method("session/request_permission")[0])
    started = next(
        i
        for i, m in enumerate(agent.messages)
        if m.get("params", {}).get("update", {}).get("status") == "in_progress"
    )
    assert announced < asked < started


async def test_reject_once_tells_the_model(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await setup(launch, project, "reject_once")
    server.script(Reply(calls=(write("w1", "a.txt"),)), Reply(text="ok, I won't"))

    turn = await agent.prompt(session, "write")

    assert turn.stop_reason == "end_turn"
    assert not (project / "a.txt").exists()
    updates = for_call(turn.updates, "w1")
    assert statuses(updates) == ["pending", "failed"]
    result, is_error = tool_results(server.requests[-1])["w1"]
    assert result.startswith("Denied by the user") and is_error is True
    assert content_text(updates[-1]) == result
    assert turn.updates[-1] == message_chunks("ok, I won't")[0]


async def test_always_allow_stores_a_project_rule_for_every_later_call_it_covers(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """An "Always allow" of an edit inside the project stores `Edit(./**)` in the project's local
    settings: the turn's later writes and edits, later turns and other sessions of the project
    are not asked; "Always reject" lasts the session."""
    (project / "c.txt").write_text("one\n")
    agent, session = await setup(launch, project, "allow_always")
    edit = Call("e1", "edit_file", args(path="c.txt", old_text="one", new_text="two"))
    server.script(
        Reply(calls=(write("w1", "a.txt"),)),
        Reply(calls=(write("w2", "b.txt"), edit)),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "write")).stop_reason == "end_turn"
    assert asked_for(agent) == ["w1"]
    [request] = agent.editor.of_method("session/request_permission")
    names = {o["optionId"]: o["name"] for o in request["params"]["options"]}
    assert names["allow_always"] == "Always allow `Edit(./**)` in this project"
    assert names["reject_always"] == "Always reject write_file in this session"
    assert (project / "b.txt").exists() and (project / "c.txt").read_text() == "two\n"
    stored = json.loads((project / ".acp-fsm" / "settings.local.json").read_text())
    assert stored == {"permissions": {"allow": ["Edit(./**)"]}}
    assert (project / ".acp-fsm" / ".gitignore").read_text() == "settings.local.json\n"

    other = await agent.new_session(project)  # the project's rule holds there too
    agent.editor.permissions.append("reject_always")
    server.script(
        Reply(calls=(write("w3", "d.txt"), Call("r1", "run_command", args(command="ls")))),
        Reply(calls=(Call("r2", "run_command", args(command="pwd")),)),
        Reply(text="fine"),
    )
    assert (await agent.prompt(other, "write there")).stop_reason == "end_turn"
    assert asked_for(agent) == ["w1", "r1"]  # r2: always rejected in this session
    assert (project / "d.txt").exists()
    assert "always reject run_command" in tool_results(server.requests[-1])["r2"][0]


async def test_always_allow_is_offered_only_where_it_would_be_honoured(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """A call outside the roots, or a fetch of this machine, is asked every time whatever the
    user answered before: "Always allow" is not offered for it, and not taken if sent."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("far\n")
    agent, session = await setup(launch, project)
    agent.editor.default_permission = "reject_once"
    agent.editor.permission_for["w_out"] = "allow_always"  # not offered for it
    server.script(
        Reply(
            calls=(
                write("w_in", "a.txt"),
                write("w_out", str(outside / "b.txt")),
                Call("r_out", "read_file", args(path=str(outside / "notes.txt"))),
                Call("f_local", "fetch_url", args(url="http://127.0.0.1:9/")),
                Call("run", "run_command", args(command="echo hi")),
            )
        ),
        Reply(calls=(write("w_out2", str(outside / "c.txt")),)),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "go")).stop_reason == "end_turn"

    offered = {
        r["params"]["toolCall"]["toolCallId"]: [o["optionId"] for o in r["params"]["options"]]
        for r in agent.editor.of_method("session/request_permission")
    }
    not_always = ["allow_once", "reject_once", "reject_always"]
    assert offered == {
        "w_in": OPTION_IDS,
        "w_out": not_always,
        "r_out": not_always,
        "f_local": not_always,
        "run": OPTION_IDS,
        "w_out2": not_always,  # asked again: the answer for w_out was not taken
    }
    result, is_error = tool_results(server.requests[-1])["w_out"]
    assert "unknown option 'allow_always'" in result and is_error
    assert not (outside / "b.txt").exists()


async def test_a_background_command_says_it_keeps_running_when_asked(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await setup(launch, project, "reject_once", "reject_once")
    server.script(
        Reply(
            calls=(
                Call("bg", "run_command", args(command="npm run dev", background=True)),
                Call("fg", "run_command", args(command="npm test")),
            )
        ),
        Reply(text="not run"),
    )

    assert (await agent.prompt(session, "serve it")).stop_reason == "end_turn"

    background, foreground = (
        r["params"]["toolCall"] for r in agent.editor.of_method("session/request_permission")
    )
    assert background["title"] == "Run `npm run dev` in the background"
    assert content_text(background).endswith(
        "It keeps running in the background after this call, until it ends, kill_command "
        "stops it, or the session or the agent ends."
    )
    assert foreground["title"] == "Run `npm test`"
    assert "keeps running" not in content_text(foreground)


async def test_reject_always_is_remembered(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await setup(launch, project, "reject_always")
    server.script(
        Reply(calls=(write("w1", "a.txt"),)),
        Reply(calls=(write("w2", "b.txt"),)),
        Reply(text="giving up"),
    )

    turn = await agent.prompt(session, "write")

    assert turn.stop_reason == "end_turn"
    assert asked_for(agent) == ["w1"]
    assert not (project / "a.txt").exists() and not (project / "b.txt").exists()
    results = tool_results(server.requests[-1])
    assert results["w1"][0].startswith("Denied by the user")
    assert results["w2"][0].startswith("Denied by the user")
    assert "always reject" in results["w2"][0]
    assert statuses(for_call(turn.updates, "w2")) == ["pending", "failed"]


async def test_client_cancelled_outcome_outside_a_cancel_denies_the_call(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await setup(launch, project, "cancelled")
    server.script(Reply(calls=(write("w1", "a.txt"),)), Reply(text="understood"))

    turn = await agent.prompt(session, "write")

    assert turn.stop_reason == "end_turn"  # the turn goes on
    assert not (project / "a.txt").exists()
    result, is_error = tool_results(server.requests[-1])["w1"]
    assert "cancelled by the client" in result and is_error is True
    assert not result.startswith("Denied by the user")  # distinct wording
    assert statuses(for_call(turn.updates, "w1")) == ["pending", "failed"]


async def test_permission_timeout_denies_and_withdraws_the_request(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session = await setup(launch, project, HOLD, ACP_PERMISSION_TIMEOUT_MS="300")
    server.script(Reply(calls=(write("w1", "a.txt"),)), Reply(text="no answer then"))

    started = time.monotonic()
    turn = await agent.prompt(session, "write")

    assert turn.stop_reason == "end_turn"
    assert time.monotonic() - started >= 0.3
    request = agent.editor.held[0]
    withdrawn = agent.notifications("$/cancel_request")
    assert [m["params"] for m in withdrawn] == [{"requestId": request["id"]}]
    assert agent.position(request) < agent.position(withdrawn[0]) < turn.end
    result, _ = tool_results(server.requests[-1])["w1"]
    assert result.startswith("No response from the user")
    assert not (project / "a.txt").exists()
    await agent.answer_held(request, {"outcome": {"outcome": "cancelled"}})  # too late
    server.script(Reply(text="still fine"))
    assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"


async def test_reads_outside_the_cwd_ask(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (project / "link.txt").symlink_to(outside / "secret.txt")
    (project / "inside.txt").write_text("public\n")
    agent, session = await setup(launch, project, "allow_once", "reject_once")
    server.script(
        Reply(
            calls=(
                Call("up", "read_file", args(path="../outside/secret.txt")),
                Call("link", "read_file", args(path="link.txt")),
                Call("in", "read_file", args(path="inside.txt")),
            )
        ),
        Reply(text="read"),
    )

    turn = await agent.prompt(session, "read them")

    assert turn.stop_reason == "end_turn"
    assert asked_for(agent) == ["up", "link"]
    real = str((outside / "secret.txt").resolve())
    asked = agent.editor.of_method("session/request_permission")[0]["params"]["toolCall"]
    assert asked["kind"] == "read" and asked["locations"] == [{"path": real, "line": 1}]
    results = tool_results(server.requests[-1])
    assert results["up"] == ("top secret\n", False)
    assert results["link"][0].startswith("Denied by the user") and results["link"][1] is True
    assert results["in"] == ("public\n", False)
    assert for_call(turn.updates, "up")[-1]["content"] == [text_content("top secret\n")]


async def test_reads_inside_an_additional_directory_do_not_ask(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lib.txt").write_text("library\n")
    agent = await launch.start("openai")
    session = await agent.new_session(project, extra)
    server.script(
        Reply(calls=(Call("lib", "read_file", args(path=str(extra / "lib.txt"))),)),
        Reply(text="read"),
    )

    turn = await agent.prompt(session, "read the library")

    assert turn.stop_reason == "end_turn"
    assert agent.editor.received == []
    assert tool_results(server.requests[-1]) == {"lib": ("library\n", None)}


async def test_directories_sent_again_on_resume_are_the_sessions_from_then_on(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """ACP has the client send a session's additional directories again, in full, when it
    restores it: a directory added then is read without asking, like one given at its start."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "lib.txt").write_text("library\n")
    first = await launch.start("openai")
    session = await first.new_session(project)
    await launch.close(first)
    agent = await launch.start("openai")
    resumed = await agent.request(
        "session/resume",
        {"sessionId": session, "cwd": str(project), "additionalDirectories": [str(extra)]},
    )
    assert "result" in resumed, resumed
    server.script(
        Reply(calls=(Call("lib", "read_file", args(path=str(extra / "lib.txt"))),)),
        Reply(text="read"),
    )

    turn = await agent.prompt(session, "read the library")

    assert turn.stop_reason == "end_turn"
    assert agent.editor.received == []  # not asked
    assert tool_results(server.requests[-1]) == {"lib": ("library\n", None)}
    relative = await agent.request(
        "session/resume",
        {"sessionId": session, "cwd": str(project), "additionalDirectories": ["rel/dir"]},
    )
    assert relative["error"]["code"] == -32602
