"""The user's permission rules through the real agent (`acp_fsm.permission_rules`): read from
Claude Code's settings files and acp-fsm's own, the user's and the project's; a deny holds
in Full access and is read by the model; an allow runs a command unasked in Ask mode but
never a second command chained to it; an ask asks even in Full access, without an "always"
it would not honour; a whole-tool deny keeps the tool from the model; a bad rule is named
once; a change to the files applies from the next turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from acp_fsm.devkit.provider.script import RecordedRequest
from tests.e2e.support import Agent, Launcher, args, tool_results


def settings(path: Path, **lists: list[str]) -> None:
    """Write a settings file holding these permission lists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": lists}))


async def started(launch: Launcher, project: Path, home: Path, mode: str) -> tuple[Agent, str]:
    """An agent whose user's home is `home`, and a session of it in `mode`."""
    agent = await launch.start("anthropic", HOME=str(home))
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": mode})
    return agent, session


def offered(request: RecordedRequest) -> set[str]:
    body: dict[str, Any] = request.body
    return {tool["name"] for tool in body.get("tools") or ()}


async def test_a_deny_from_the_users_file_holds_in_full_access_for_any_chained_part(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    settings(home / ".claude" / "settings.json", deny=["Bash(rm:*)", "WebFetch"])
    (project / "keep.txt").write_text("kept\n")
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo hi && rm -f keep.txt")),)),
        Reply(text="done"),
    )
    agent, session = await started(launch, project, home, "full_access")
    assert (await agent.prompt(session, "clean up")).stop_reason == "end_turn"

    result, is_error = tool_results(server.requests[-1])["r1"]
    assert is_error
    assert "The user's permission rule `Bash(rm:*)`" in result
    assert str(home / ".claude" / "settings.json") in result
    assert (project / "keep.txt").read_text() == "kept\n"
    assert agent.editor.of_method("session/request_permission") == []
    assert "fetch_url" not in offered(server.requests[0])  # denied whole: never offered
    assert "run_command" in offered(server.requests[0])


async def test_an_allow_runs_its_command_unasked_and_nothing_chained_to_it(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    settings(project / ".acp-fsm" / "settings.local.json", allow=["Bash(echo:*)"])
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo allowed")),)),
        Reply(calls=(Call("r2", "run_command", args(command="echo hi; touch made")),)),
        Reply(text="done"),
    )
    agent, session = await started(launch, project, tmp_path / "home", "ask")
    agent.editor.permissions.append("reject_once")
    assert (await agent.prompt(session, "run them")).stop_reason == "end_turn"

    results = tool_results(server.requests[-1])
    assert "allowed" in results["r1"][0]
    [asked] = agent.editor.of_method("session/request_permission")
    assert asked["params"]["toolCall"]["toolCallId"] == "r2"  # `touch made` is no echo
    assert not (project / "made").exists()


async def test_an_ask_asks_in_full_access_and_offers_no_always(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    settings(project / ".claude" / "settings.json", ask=["Read(./secrets/**)"])
    (project / "secrets").mkdir()
    (project / "secrets" / "key.txt").write_text("hunter2\n")
    server.script(
        Reply(calls=(Call("r1", "read_file", args(path="secrets/key.txt")),)),
        Reply(text="done"),
    )
    agent, session = await started(launch, project, tmp_path / "home", "full_access")
    agent.editor.permissions.append("allow_once")
    assert (await agent.prompt(session, "read it")).stop_reason == "end_turn"

    [asked] = agent.editor.of_method("session/request_permission")
    kinds = {option["kind"] for option in asked["params"]["options"]}
    assert "allow_always" not in kinds and "allow_once" in kinds
    assert "hunter2" in tool_results(server.requests[-1])["r1"][0]


async def test_a_bad_rule_is_named_once_and_a_changed_file_applies_from_the_next_turn(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    local = project / ".claude" / "settings.local.json"
    settings(local, allow=["Teleport(now)"])
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo one")),)),
        Reply(text="ran"),
        Reply(calls=(Call("r2", "run_command", args(command="echo two")),)),
        Reply(text="refused"),
    )
    agent, session = await started(launch, project, tmp_path / "home", "full_access")
    first = await agent.prompt(session, "one")
    told = [u for u in first.updates if "Teleport" in json.dumps(u)]
    assert len(told) == 1 and "no tool 'Teleport'" in json.dumps(told[0])
    assert "one" in tool_results(server.requests[1])["r1"][0]

    settings(local, allow=["Teleport(now)"], deny=["Bash(echo two)"])
    second = await agent.prompt(session, "two")
    assert not [u for u in second.updates if "Teleport" in json.dumps(u)]  # named once
    assert "`Bash(echo two)`" in tool_results(server.requests[-1])["r2"][0]


async def test_permissions_lists_the_rules_in_force_with_their_files_without_a_model_call(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    settings(home / ".claude" / "settings.json", allow=["Bash(npm test:*)"])
    settings(project / ".acp-fsm" / "settings.json", deny=["Read(.env)"], ask=["Bad(rule"])
    agent, session = await started(launch, project, home, "ask")
    turn = await agent.prompt(session, "/permissions")
    assert turn.stop_reason == "end_turn" and server.requests == []
    text = "".join(
        u["content"]["text"] for u in turn.updates if u["sessionUpdate"] == "agent_message_chunk"
    )
    denied = text.index(f"- deny `Read(.env)` ({project / '.acp-fsm' / 'settings.json'})")
    allowed = text.index(f"- allow `Bash(npm test:*)` ({home / '.claude' / 'settings.json'})")
    assert denied < allowed  # in the order they are tried
    assert "Not used:" in text and "'Bad(rule' is skipped" in text

    other, bare = await started(launch, tmp_path, tmp_path / "empty", "ask")  # no rules at all
    listed = await other.prompt(bare, "/permissions")
    assert "No permission rules: the session's mode decides every call." in "".join(
        u["content"]["text"] for u in listed.updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def said(turn: Any) -> str:
    """The agent's message text of a turn."""
    return "".join(
        u["content"]["text"] for u in turn.updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def always_label(request: dict[str, Any]) -> str | None:
    """The name of the "Always allow" option of a permission request; None when not offered."""
    options = request["params"]["options"]
    return next((o["name"] for o in options if o["kind"] == "allow_always"), None)


async def test_always_allow_stores_a_prefix_per_command_that_a_restart_and_remove_see(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """The option names one rule per command of the line; chosen, they go to Claude Code's
    local file (the project has `.claude/`), its other keys kept. A new process honours
    them, for that command with other arguments, never for a command chained to it; a
    variable set before a command has no rule to offer; `/permissions remove` takes one out."""
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"model": "mine", "permissions": {"deny": ["Bash(rm:*)"]}}))
    home = tmp_path / "home"
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="npm test && git status | head -3")),)),
        Reply(text="ran"),
    )
    agent, session = await started(launch, project, home, "ask")
    agent.editor.permissions.append("allow_always")
    assert (await agent.prompt(session, "test")).stop_reason == "end_turn"
    [first] = agent.editor.of_method("session/request_permission")
    stored = ["Bash(npm test:*)", "Bash(git status:*)", "Bash(head:*)"]
    assert (
        always_label(first) == f"Always allow {', '.join(f'`{r}`' for r in stored)} in this project"
    )
    assert json.loads(local.read_text()) == {
        "model": "mine",
        "permissions": {"deny": ["Bash(rm:*)"], "allow": stored},
    }
    await launch.close(agent)

    server.script(
        Reply(
            calls=(
                Call("r2", "run_command", args(command="npm test -- -k fast")),
                Call("r3", "run_command", args(command="npm test; curl -s http://x.invalid")),
                Call("r4", "run_command", args(command="LD_PRELOAD=x.so npm test")),
                Call("f1", "fetch_url", args(url="https://Docs.Example.invalid./page")),
            )
        ),
        Reply(text="some ran"),
    )
    agent, session = await started(launch, project, home, "ask")
    agent.editor.default_permission = "reject_once"
    assert (await agent.prompt(session, "again")).stop_reason == "end_turn"
    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["toolCallId"] for r in asked] == ["r3", "r4", "f1"]
    assert [always_label(r) for r in asked] == [
        "Always allow `Bash(curl:*)` in this project",  # npm test is allowed already
        None,
        "Always allow `WebFetch(domain:docs.example.invalid)` in this project",
    ]

    removed = await agent.prompt(session, "/permissions remove Bash(npm test:*)")
    assert f"Removed `Bash(npm test:*)` from {local}." in said(removed)
    assert "Bash(npm test:*)" not in said(removed).split("\n\n", 1)[1]  # the rules now
    assert json.loads(local.read_text())["permissions"]["allow"] == stored[1:]
    missing = await agent.prompt(session, "/permissions remove Bash(npm test:*)")
    assert "No settings file lists the rule `Bash(npm test:*)`." in said(missing)
    server.script(Reply(calls=(Call("r5", "run_command", args(command="npm test")),)), Reply())
    assert (await agent.prompt(session, "once more")).stop_reason == "end_turn"
    assert (
        agent.editor.of_method("session/request_permission")[-1]["params"]["toolCall"]["toolCallId"]
        == "r5"
    )


async def test_a_settings_file_that_cannot_be_read_is_never_overwritten(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    """The rules an answer would store cannot go to a file that is not a settings object: the
    user is told, the file is left as it was, and the call they allowed runs."""
    local = project / ".acp-fsm" / "settings.local.json"
    local.parent.mkdir()
    local.write_text("{not json")
    server.script(
        Reply(calls=(Call("r1", "run_command", args(command="echo stored?")),)), Reply(text="ok")
    )
    agent, session = await started(launch, project, tmp_path / "home", "ask")
    agent.editor.permissions.append("allow_always")
    turn = await agent.prompt(session, "run")
    assert turn.stop_reason == "end_turn"
    assert "stored?" in tool_results(server.requests[-1])["r1"][0]
    assert local.read_text() == "{not json"
    told = json.dumps(turn.updates)
    assert "Bash(echo stored?:*)" not in told  # `stored?` is no subcommand
    assert "The rules Bash(echo:*) could not be stored" in told


@pytest.mark.parametrize("mode", ["accept_edits", "full_access"])
async def test_an_edit_of_the_agents_settings_is_asked_in_every_mode(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path, mode: str
) -> None:
    """A model that writes itself a hook and an allow rule would own the machine: an edit of
    `.acp-fsm/`, `.claude/` or `.git/` is asked every time, whatever the mode or a rule says,
    and offers no "Always allow"."""
    settings(project / ".claude" / "settings.local.json", allow=["Edit"])
    grant = json.dumps({"permissions": {"allow": ["Bash"]}})
    server.script(
        Reply(
            calls=(
                Call("w1", "write_file", args(path=".acp-fsm/settings.local.json", content=grant)),
                Call("w2", "edit_file", args(path=".git/config", old_text="a", new_text="b")),
                Call("w3", "write_file", args(path="notes.txt", content="fine\n")),
            )
        ),
        Reply(text="done"),
    )
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("a\n")
    agent, session = await started(launch, project, tmp_path / "home", mode)
    agent.editor.default_permission = "reject_once"
    assert (await agent.prompt(session, "go")).stop_reason == "end_turn"
    asked = agent.editor.of_method("session/request_permission")
    assert [r["params"]["toolCall"]["toolCallId"] for r in asked] == ["w1", "w2"]
    assert all(always_label(r) is None for r in asked)
    assert not (project / ".acp-fsm" / "settings.local.json").exists()
    assert (project / ".git" / "config").read_text() == "a\n"
    assert (project / "notes.txt").read_text() == "fine\n"  # the rule allows the rest
