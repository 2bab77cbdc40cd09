"""Message ids (ACP: `messageId` on message chunks, stable since 2026-06-05): every chunk of
one message carries the same id, every message its own (a thought is apart from its answer,
each model call's answer is a message), and `session/load` shows each message with the id
it was shown with live, in any process, at every load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_fsm.devkit.provider import Call, Reply, ScriptedProvider
from tests.e2e.support import Agent, Launcher, args
from tests.e2e.test_sessions import restore


def messages(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The messages in `updates`, in order: (kind, id, text). Chunks of one id must come
    together; a message's chunks are joined."""
    found: list[tuple[str, str, str]] = []
    for update in updates:
        if "messageId" not in update:
            assert not update["sessionUpdate"].endswith("_chunk"), update
            continue
        kind, message_id = update["sessionUpdate"], update["messageId"]
        text = update["content"].get("text", "")
        if found and found[-1][1] == message_id:
            assert found[-1][0] == kind, "one message, one kind"
            found[-1] = (kind, message_id, found[-1][2] + text)
        else:
            assert message_id not in {m[1] for m in found}, f"{message_id} comes back later"
            found.append((kind, message_id, text))
    return found


async def loaded(agent: Agent, session: str, project: Path) -> list[dict[str, Any]]:
    response, replayed = await restore(agent, "session/load", session, project, ids=True)
    assert "result" in response, response
    return replayed


async def test_each_message_has_one_id_and_a_load_shows_it_again(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    (project / "code.py").write_text("x = 1\n")
    first = await launch.start("anthropic")
    session = await first.new_session(project)
    server.script(
        Reply(
            thinking=("Reading ", "first."),
            signature="sig-ids",
            text=("I will ", "look."),
            calls=(Call("r1", "read_file", args(path="code.py")),),
        ),
        Reply(text=("It is ", "one.")),
        Reply(text=("Again", ".")),
    )
    one = await first.prompt(session, "What is x?")
    two = await first.prompt(session, "And now?")
    live = messages(first.updates(session, one.start, one.end, ids=True))
    live += messages(first.updates(session, two.start, two.end, ids=True))

    assert [(kind, text) for kind, _, text in live] == [
        ("agent_thought_chunk", "Reading first."),
        ("agent_message_chunk", "I will look."),
        ("agent_message_chunk", "It is one."),
        ("agent_message_chunk", "Again."),
    ]
    assert len({message_id for _, message_id, _ in live}) == 4
    await launch.close(first)

    second = await launch.start("anthropic")
    replayed = messages(await loaded(second, session, project))
    assert [m for m in replayed if m[0] != "user_message_chunk"] == live
    users = [m for m in replayed if m[0] == "user_message_chunk"]
    assert [text for _, _, text in users] == ["What is x?", "And now?"]
    assert len({message_id for _, message_id, _ in replayed}) == 6
    assert messages(await loaded(second, session, project)) == replayed  # at every load


async def test_a_commands_answer_keeps_its_id_across_a_load(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    """A slash command's answer is the agent's message, not the model's: its id is stored
    with it too."""
    first = await launch.start("openai")
    session = await first.new_session(project)
    turn = await first.prompt(session, "/status")
    [(kind, message_id, text)] = messages(first.updates(session, turn.start, turn.end, ids=True))
    assert kind == "agent_message_chunk" and text.startswith("Status:")
    await launch.close(first)

    second = await launch.start("openai")
    replayed = messages(await loaded(second, session, project))
    assert [m[0] for m in replayed] == ["user_message_chunk", "agent_message_chunk"]
    assert replayed[1] == (kind, message_id, text)
