"""Checkpoints and `/rewind` through the real agent (`acp_fsm.checkpoints`,
`acp_fsm.turn.rewinding`): writes, edits, patches, deletions and moves put back with the
conversation in one step; a file changed outside the agent refuses the rewind until the user
confirms; commands are named, not undone; the checkpoints survive a kill -9 and a reload; a
fork keeps its own; the editor's buffers are restored through the editor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import EDITOR, Agent, Launcher, TurnResult, args, history
from tests.e2e.test_sessions import restore

PATCH = """*** Begin Patch
*** Update File: b.txt
@@
-two
+TWO
*** Delete File: c.txt
*** Update File: d.txt
*** Move to: e.txt
@@
-dee
+eee
*** End Patch"""


def said(turn: TurnResult) -> str:
    return "".join(
        u["content"]["text"] for u in turn.updates if u["sessionUpdate"] == "agent_message_chunk"
    )


def rewound(turn: TurnResult) -> dict[str, Any]:
    found: dict[str, Any] = turn.response["result"]["_meta"]["acpFsm"]["rewind"]
    return found


def files(project: Path) -> dict[str, str]:
    return {
        p.name: p.read_bytes().decode("utf-8", "replace")
        for p in sorted(project.iterdir())
        if p.is_file()
    }


def lay_out(project: Path) -> dict[str, str]:
    for name, text in {"b.txt": "one\ntwo\n", "c.txt": "see\n", "d.txt": "dee\n"}.items():
        (project / name).write_text(text)
    return files(project)


def two_prompts(server: ScriptedProvider) -> None:
    """Prompt 1 writes a.txt and edits b.txt; prompt 2 patches (an update, a deletion, a
    move) and runs a command."""
    server.script(
        Reply(
            calls=(
                Call("w1", "write_file", args(path="a.txt", content="new\n")),
                Call("e1", "edit_file", args(path="b.txt", old_text="one", new_text="ONE")),
            )
        ),
        Reply(text="first done"),
        Reply(
            calls=(
                Call("p1", "apply_patch", args(patch=PATCH)),
                Call("r1", "run_command", args(command="echo made > f.txt")),
            )
        ),
        Reply(text="second done"),
    )


async def started(launch: Launcher, **options: Any) -> Agent:
    agent = await launch.start("anthropic", **options)
    return agent


async def two_prompts_run(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> tuple[Agent, str, dict[str, str]]:
    """An agent whose session in Full access ran `two_prompts`; the files before them."""
    before = lay_out(project)
    two_prompts(server)
    agent = await started(launch)
    session = await full_access(agent, project)
    for prompt in ("first task", "second task"):
        assert (await agent.prompt(session, prompt)).stop_reason == "end_turn"
    return agent, session, before


async def full_access(agent: Agent, project: Path) -> str:
    session = await agent.new_session(project)
    await agent.result("session/set_mode", {"sessionId": session, "modeId": "full_access"})
    return session


async def test_rewind_restores_writes_edits_patches_deletions_and_moves_with_the_conversation(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, before = await two_prompts_run(launch, server, project)
    assert files(project)["e.txt"] == "eee\n" and "c.txt" not in files(project)

    listed = said(await agent.prompt(session, "/rewind"))
    assert "1. “first task” — then changed" in listed and "2. “second task”" in listed
    assert listed.count("ran commands") == 1 and "e.txt" in listed

    turn = await agent.prompt(session, "/rewind 1")
    assert rewound(turn)["outcome"] == "rewound" and rewound(turn)["commandsRanIn"] == [2]
    text = said(turn)
    assert "Rewound to before prompt 1" in text and "Removed a.txt, e.txt (made since)" in text
    assert "Not undone: the commands run in the turn of prompt 2" in text
    assert files(project) == {**before, "f.txt": "made\n"}  # the command's file stays

    server.script(Reply(text="fresh start"))
    assert (await agent.prompt(session, "again")).stop_reason == "end_turn"
    sent = json.dumps(history(server.requests[-1]))
    assert "again" in sent and "first task" not in sent and "second done" not in sent
    assert "/rewind" not in sent

    _, replayed = await restore(agent, "session/load", session, project)
    prompts = [u for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert "first task" not in json.dumps(prompts) and "again" in json.dumps(prompts)
    shown = json.dumps(replayed)
    assert "fresh start" in shown
    assert "Rewound to before prompt 1" in shown  # the answer is the session's
    assert said(await agent.prompt(session, "/rewind")).startswith("Prompts to rewind to")


async def test_a_file_changed_outside_refuses_the_rewind_until_the_user_confirms(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, before = await two_prompts_run(launch, server, project)
    (project / "a.txt").write_text("my own words\n")  # by the user, since
    after = files(project)

    refused = await agent.prompt(session, "/rewind 1")
    assert rewound(refused)["outcome"] == "refused"
    assert rewound(refused)["changedOutside"] == [str(project / "a.txt")]
    assert "Not rewound: a.txt changed outside the agent" in said(refused)
    assert files(project) == after  # nothing written

    server.script(Reply(text="still here"))
    await agent.prompt(session, "are you there")
    assert "second done" in json.dumps(history(server.requests[-1]))  # nothing taken back

    confirmed = await agent.prompt(session, "/rewind 1 confirm")
    assert rewound(confirmed)["outcome"] == "rewound"
    assert files(project) == {**before, "f.txt": "made\n"}


async def test_checkpoints_survive_a_kill_and_a_fork_keeps_its_own(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, before = await two_prompts_run(launch, server, project)
    await launch.kill(agent)

    other = await started(launch)
    await restore(other, "session/load", session, project)
    forked = await other.result(
        "session/fork", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    fork = forked["sessionId"]
    turn = await other.prompt(fork, "/rewind 2")
    assert rewound(turn)["outcome"] == "rewound"
    assert files(project)["b.txt"] == "ONE\ntwo\n" and "a.txt" in files(project)
    assert "2. “second task”" in said(await other.prompt(session, "/rewind"))  # the source's

    turn = await other.prompt(session, "/rewind 1")  # the fork's rewind changed its files
    assert rewound(turn)["outcome"] == "refused"
    assert rewound(turn)["changedOutside"] == [str(project / "b.txt")]  # c.txt: already back
    turn = await other.prompt(session, "/rewind 1 confirm")
    assert rewound(turn)["outcome"] == "rewound"
    assert files(project) == {**before, "f.txt": "made\n"}


async def test_the_editors_buffers_are_restored_through_the_editor(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "b.txt").write_text("one\n")
    server.script(
        Reply(calls=(Call("e1", "edit_file", args(path="b.txt", old_text="one", new_text="1")),)),
        Reply(text="edited"),
    )
    agent = await started(launch, capabilities=EDITOR)
    session = await full_access(agent, project)
    await agent.prompt(session, "edit it")
    path = str(project / "b.txt")
    assert agent.editor.buffers[path] == "1\n"

    turn = await agent.prompt(session, "/rewind 1")
    assert rewound(turn)["outcome"] == "rewound"
    assert agent.editor.buffers[path] == "one\n"
    writes = [
        r for r in agent.editor.of_method("fs/write_text_file") if r["params"]["path"] == path
    ]
    assert [w["params"]["content"] for w in writes] == ["1\n", "one\n"]


async def test_a_client_lists_checkpoints_and_rewinds_by_the_extension_methods(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, before = await two_prompts_run(launch, server, project)
    [init] = [m["result"] for m in agent.messages if "agentCapabilities" in m.get("result", {})]
    assert init["_meta"]["checkpoints"] == {
        "list": "_session/checkpoints",
        "rewind": "_session/rewind",
    }

    listed = (await agent.result("_session/checkpoints", {"sessionId": session}))["checkpoints"]
    assert [(c["number"], c["prompt"], c["ranCommands"]) for c in listed] == [
        (1, "first task", False),
        (2, "second task", True),
    ]
    assert str(project / "c.txt") in listed[0]["changedFiles"]
    first = listed[0]["messageId"]

    (project / "b.txt").write_text("mine\n")
    params = {"sessionId": session, "messageId": first}
    refused = await agent.result("_session/rewind", params)
    assert refused["outcome"] == "refused" and refused["changedOutside"] == [str(project / "b.txt")]
    done = await agent.result("_session/rewind", {**params, "force": True})
    assert done["outcome"] == "rewound" and done["commandsRanIn"] == [2]
    assert files(project) == {**before, "f.txt": "made\n"}

    missing = await agent.request("_session/rewind", params)  # rewound: no longer there
    assert missing["error"]["code"] == -32602
    assert (await agent.result("_session/checkpoints", {"sessionId": session})) == {
        "checkpoints": []
    }


async def test_a_file_that_was_not_utf8_comes_back_byte_for_byte(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    menu = project / "menu.txt"
    menu.write_bytes(b"caf\xe9 cr\xe8me\n")  # Latin-1
    server.script(
        Reply(calls=(Call("w1", "write_file", args(path="menu.txt", content="tea\n")),)),
        Reply(text="rewritten"),
    )
    agent = await started(launch)
    session = await full_access(agent, project)
    await agent.prompt(session, "rewrite the menu")
    assert menu.read_text() == "tea\n"
    turn = await agent.prompt(session, "/rewind 1")
    assert rewound(turn)["outcome"] == "rewound"
    assert menu.read_bytes() == b"caf\xe9 cr\xe8me\n"


async def test_a_confirmed_rewind_names_the_files_it_could_not_read(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent, session, before = await two_prompts_run(launch, server, project)
    (project / "b.txt").write_bytes(b"\xff\xfe binary now")
    refused = await agent.prompt(session, "/rewind 1")
    assert rewound(refused)["changedOutside"] == [str(project / "b.txt")]
    confirmed = await agent.prompt(session, "/rewind 1 confirm")
    assert rewound(confirmed)["outcome"] == "rewound"
    assert rewound(confirmed)["notRestored"] == [str(project / "b.txt")]
    assert "Not restored: b.txt" in said(confirmed)
    assert (project / "b.txt").read_bytes() == b"\xff\xfe binary now"
    assert {k: v for k, v in files(project).items() if k != "b.txt"} == {
        **{k: v for k, v in before.items() if k != "b.txt"},
        "f.txt": "made\n",
    }
