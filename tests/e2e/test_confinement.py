"""Confinement is more than a path: a file hard-linked into the project may be one outside it,
an "always allow" given inside the project never lets a call outside it through, and a folder
replaced by a link while the user is asked takes no approved change outside."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.editor import HOLD, permission_outcome
from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import BARE, EDITOR, Agent, Launcher, args, for_call, statuses, tool_results


def asked_for(agent: Agent) -> list[str]:
    return [
        r["params"]["toolCall"]["toolCallId"]
        for r in agent.editor.of_method("session/request_permission")
    ]


async def test_a_hard_link_into_the_project_is_not_read_without_asking(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE-CONTENT\n")
    os.link(outside / "secret.txt", project / "linked.txt")
    (project / "plain.txt").write_text("inside\n")
    agent = await launch.start("anthropic")
    agent.editor.permissions.append("reject_once")
    session = await agent.new_session(project)
    server.script(
        Reply(
            calls=(
                Call("plain", "read_file", args(path="plain.txt")),
                Call("linked", "read_file", args(path="linked.txt")),
                Call("grep", "search_files", args(pattern="SECRET")),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "read them")).stop_reason == "end_turn"

    assert asked_for(agent) == ["linked"]
    results = tool_results(server.requests[-1])
    assert results["plain"][0] == "inside\n"
    assert results["linked"][0].startswith("Denied by the user")
    assert "SECRET-OUTSIDE-CONTENT" not in results["grep"][0]
    assert "Skipped 1 file with other hard links" in results["grep"][0]


async def test_always_allow_inside_never_lets_a_call_outside_through(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    agent = await launch.start("anthropic")
    agent.editor.permissions.extend(["allow_always", "reject_once"])
    session = await agent.new_session(project)
    server.script(
        Reply(calls=(Call("in1", "write_file", args(path="a.txt", content="a")),)),
        Reply(text="written"),
        Reply(
            calls=(
                Call("in2", "write_file", args(path="b.txt", content="b")),
                Call("out", "write_file", args(path=str(outside / "c.txt"), content="c")),
            )
        ),
        Reply(text="done"),
    )

    assert (await agent.prompt(session, "write a")).stop_reason == "end_turn"
    assert (await agent.prompt(session, "write b and c")).stop_reason == "end_turn"

    assert asked_for(agent) == ["in1", "out"]  # in2 remembered; out asked again, rejected
    assert (project / "b.txt").read_text() == "b"
    assert not (outside / "c.txt").exists()


def patch(*lines: str) -> str:
    return "\n".join(("*** Begin Patch", *lines, "*** End Patch")) + "\n"


@pytest.mark.parametrize("capabilities", [BARE, EDITOR], ids=["disk", "editor"])
@pytest.mark.parametrize(
    ("tool", "given", "raw"),
    [
        pytest.param(
            "write_file",
            "sub/notes.txt",
            {"path": "sub/notes.txt", "content": "changed\n"},
            id="write",
        ),
        pytest.param(
            "write_file", "sub/new.txt", {"path": "sub/new.txt", "content": "new\n"}, id="create"
        ),
        pytest.param(
            "edit_file",
            "sub/notes.txt",
            {"path": "sub/notes.txt", "old_text": "kept", "new_text": "changed"},
            id="edit",
        ),
        pytest.param(
            "apply_patch",
            "sub/notes.txt",
            {"patch": patch("*** Update File: sub/notes.txt", "@@", "-kept", "+x")},
            id="patch-update",
        ),
        pytest.param(
            "apply_patch",
            "sub/new.txt",
            {"patch": patch("*** Add File: sub/new.txt", "+new")},
            id="patch-add",
        ),
        pytest.param(
            "apply_patch",
            "sub/notes.txt",
            {"patch": patch("*** Delete File: sub/notes.txt")},
            id="patch-delete",
        ),
    ],
)
async def test_a_folder_replaced_by_a_link_while_the_user_is_asked_takes_no_write_outside(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    tmp_path: Path,
    capabilities: dict[str, Any],
    tool: str,
    given: str,
    raw: dict[str, Any],
) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "notes.txt").write_text("kept\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("kept\n")  # the same text: the change would apply
    agent = await launch.start("anthropic", capabilities=capabilities, ACP_FSM_EDIT_TOOLS="both")
    agent.editor.save_to_disk = True
    agent.editor.permissions.append(HOLD)
    session = await agent.new_session(project)
    server.script(Reply(calls=(Call("c1", tool, args(**raw)),)), Reply(text="done"))
    pending = await agent.start_prompt(session, "change sub")
    asked = await agent.wait_request("session/request_permission")

    (project / "sub").rename(project / "moved")
    (project / "sub").symlink_to(outside, target_is_directory=True)
    await agent.answer_held(asked, permission_outcome("allow_once"))
    turn = await pending.result()

    assert turn.stop_reason == "end_turn"
    assert statuses(for_call(turn.updates, "c1")) == ["pending", "in_progress", "failed"]
    assert sorted(os.listdir(outside)) == ["notes.txt"]
    assert (outside / "notes.txt").read_text() == "kept\n"
    assert agent.editor.of_method("fs/write_text_file") == []
    now = outside.resolve() / given.removeprefix("sub/")
    text, is_error = tool_results(server.requests[-1])["c1"]
    assert is_error is True
    assert text == (
        f"{given} no longer leads to the file the user was asked about: it now resolves to "
        f"{now}, outside the project (a folder on its path was replaced by a symbolic link, "
        "or moved, meanwhile). Nothing was changed; check the path and call the tool again "
        "if the change is still wanted."
    )
