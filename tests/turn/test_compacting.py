"""`compacting`'s work (`acp_fsm.turn.compacting.compact`) over in-memory ports: the older part
summarised by one model call (or dropped), stored, then told; /compact; and a cancel while the
summary streams or the tools are listed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from acp_fsm import compaction
from acp_fsm.commands import COMPACT, Command
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.types import AssistantMessage, Message, TextPart, UserMessage
from acp_fsm.turn.compacting import compact
from tests.turn.memory import Editor, Reply, Setup, Stall

ON_DEMAND = Command(COMPACT, "")


def long_talk() -> list[Message]:
    """Two long turns, then a short question."""

    def user(text: str) -> UserMessage:
        return UserMessage((TextPart(text),))

    def said(text: str) -> AssistantMessage:
        return AssistantMessage((TextPart(text),))

    return [
        user("q1 " + "x" * 20_000),
        said("a1 " + "y" * 20_000),
        user("q2"),
        said("a2"),
        user("q3"),
    ]


async def test_the_older_part_is_summarised_stored_and_told(tmp_path: Path) -> None:
    setup = Setup(tmp_path, messages=long_talk())
    setup.budget.scale = 1.4
    setup.model.script(Reply("the summary"))
    turn = setup.turn(ON_DEMAND)

    assert await compact(turn) == TurnTrigger.COMPACTED

    [stored] = setup.memory.of("compaction")
    assert stored["summary"] == "the summary"
    messages = setup.conversation.messages
    assert messages[0].parts[0].text.endswith("the summary")  # type: ignore[union-attr]
    assert messages[1:] == [UserMessage((TextPart("q3"),))]  # the last turn kept
    assert setup.budget.scale == 1.4  # the tokenizer's, a compacted conversation's too
    assert [c.call for c in setup.charges] == ["summary"] and turn.requests == 1
    assert setup.editor.text().startswith("Context compacted: 4 earlier messages were summarised")
    [summary_call] = setup.model.requests
    assert summary_call.answer_only


async def test_a_client_that_follows_compactions_sees_them_as_such(tmp_path: Path) -> None:
    editor = Editor({"session": {"compaction": {}}})
    setup = Setup(tmp_path, messages=long_talk(), editor=editor)
    setup.model.script(Reply("the summary"))
    assert await compact(setup.turn(ON_DEMAND)) == TurnTrigger.COMPACTED
    assert editor.kinds() == ["compaction_update", "compaction_summary_chunk", "compaction_update"]
    assert [u.get("status") for u in editor.updates] == ["in_progress", None, "completed"]
    assert editor.text() == ""  # not as text


async def test_nothing_to_compact_is_said_so(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    turn = setup.turn(ON_DEMAND)
    assert await compact(turn) == TurnTrigger.COMPACTED
    assert setup.editor.text() == compaction.NOTHING_TO_COMPACT
    assert setup.model.requests == [] and setup.memory.kinds() == ["notice"]


async def test_without_a_summary_the_older_part_is_dropped(tmp_path: Path) -> None:
    setup = Setup(tmp_path, messages=long_talk())
    setup.model.script(Reply(error=ProviderError("openai", "overloaded", status=503)))
    assert await compact(setup.turn(ON_DEMAND)) == TurnTrigger.COMPACTED
    [stored] = setup.memory.of("compaction")
    assert stored["summary"] is None
    assert setup.conversation.messages[0] == UserMessage((TextPart(compaction.OMITTED),))
    assert "the summary call failed" in setup.editor.text()


async def test_a_turn_compacts_what_no_longer_fits_and_goes_on(tmp_path: Path) -> None:
    setup = Setup(tmp_path, messages=long_talk())
    setup.config = setup.config._replace(context_window=16_000)
    setup.model.script(Reply("the summary"))
    turn = setup.turn()
    assert await compact(turn) == TurnTrigger.COMPACTED
    assert setup.editor.text().endswith("\n\n")  # the model's answer follows
    assert len(setup.conversation.messages) < len(long_talk())


async def test_a_cancel_while_the_summary_streams_changes_nothing(tmp_path: Path) -> None:
    editor = Editor({"session": {"compaction": {}}})
    setup = Setup(tmp_path, messages=long_talk(), editor=editor)
    setup.model.script(Reply("the sum", hang=True))
    turn = setup.turn(ON_DEMAND)
    work = asyncio.ensure_future(compact(turn))
    await setup.model.streaming.wait()
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    assert setup.conversation.messages == long_talk() and setup.memory.entries == []
    assert [u.get("status") for u in editor.updates] == ["in_progress", "cancelled"]


async def test_a_cancel_while_the_tools_are_listed_ends_it_at_once(tmp_path: Path) -> None:
    stall = Stall()  # an MCP server slow to list its tools
    setup = Setup(tmp_path, messages=long_talk(), listing=stall)
    turn = setup.turn(ON_DEMAND)
    work = asyncio.ensure_future(compact(turn))
    await stall.reached.wait()
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    assert setup.model.requests == [] and setup.memory.entries == []
