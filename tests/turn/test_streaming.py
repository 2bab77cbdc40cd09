"""`streaming`'s work (`acp_fsm.turn.streaming.stream`) as a function of a turn over in-memory
ports: one model call, what it sends, stores and counts, the trigger it ends with, and what a
cancel at each of its waits leaves."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from acp_fsm.errors import TurnFailed
from acp_fsm.fsm.tool_call import ToolCallState
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.providers.errors import ProviderError
from acp_fsm.providers.types import StopReason, TextPart, Usage, UserMessage
from acp_fsm.tools.base import Tool
from acp_fsm.turn.runner import Turn
from acp_fsm.turn.streaming import stream
from tests.turn.memory import Gate, Reply, Setup, Stall, call


async def test_an_answer_is_relayed_stored_and_counted(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.model.script(Reply("Hello there", thinking="hmm", pieces=3, usage=Usage(120, 30)))
    turn = setup.turn()

    assert await stream(turn) == TurnTrigger.MODEL_DONE

    assert setup.editor.text() == "Hello there"
    assert setup.editor.text("agent_thought_chunk") == "hmm"
    assert setup.editor.kinds()[-1] == "usage_update"
    [stored] = setup.memory.of("assistant")
    assert stored["stopReason"] == "end_turn"
    assert setup.conversation.messages[-1].text == "Hello there"  # type: ignore[union-attr]
    assert turn.requests == 1 and turn.stop_reason == "end_turn"
    assert turn.spent == Usage(120, 30) and setup.ledger.spent == Usage(120, 30)
    assert [c.call for c in setup.charges] == ["turn"]
    assert setup.budget.used == 150
    [request] = setup.model.requests
    assert request.messages == (UserMessage((TextPart("hi"),)),)
    assert request.cache_key == "sess_test"


async def test_calls_are_announced_classified_and_lead_to_tools(tmp_path: Path) -> None:
    asking, free = Gate("asking", "edit", asks=True), Gate("free")
    tools: dict[str, Tool] = {"asking": asking, "free": free}
    setup = Setup(tmp_path, tools=tools)
    setup.model.script(
        Reply(calls=(call("c1", "asking"), call("c2", "free"), call("c3", "nowhere")))
    )
    turn = setup.turn()

    assert await stream(turn) == TurnTrigger.TOOLS_REQUESTED

    assert [pc.state for pc in turn.calls] == [
        ToolCallState.PENDING,  # the user is to be asked
        ToolCallState.ALLOWED,
        ToolCallState.DENIED,  # an unknown tool
    ]
    assert "Unknown tool 'nowhere'" in turn.calls[2].reason
    assert [setup.editor.statuses(c) for c in ("c1", "c2", "c3")] == [["pending"]] * 3
    [stored] = setup.memory.of("assistant")
    assert set(stored["views"]) == {"c1", "c2", "c3"}
    assert {t.name for t in setup.model.requests[0].tools} == {"asking", "free"}


async def test_a_remembered_answer_settles_a_call_without_asking(tmp_path: Path) -> None:
    tools: dict[str, Tool] = {"asking": Gate("asking", "edit", asks=True)}
    setup = Setup(tmp_path, tools=tools, rejected={"asking"})
    setup.model.script(Reply(calls=(call("c1", "asking"),)))
    turn = setup.turn()
    assert await stream(turn) == TurnTrigger.TOOLS_REQUESTED
    assert turn.calls[0].state == ToolCallState.DENIED
    assert "always reject" in turn.calls[0].reason


async def test_a_request_that_would_not_fit_is_compacted_first(tmp_path: Path) -> None:
    setup = Setup(tmp_path, config=Setup(tmp_path).config._replace(context_window=2000))
    setup.conversation.append(UserMessage((TextPart("x" * 20_000),)))
    turn = setup.turn()
    assert await stream(turn) == TurnTrigger.COMPACT
    assert setup.model.requests == [] and turn.requests == 0


def after_compacting(turn: Turn) -> Turn:
    """`turn` as the machine leaves it after a compaction: back in streaming."""
    turn.path += ["streaming", "compacting", "streaming"]
    return turn


async def test_a_request_compacted_once_is_sent_as_it_is(tmp_path: Path) -> None:
    setup = Setup(tmp_path, config=Setup(tmp_path).config._replace(context_window=2000))
    setup.conversation.append(UserMessage((TextPart("x" * 20_000),)))
    setup.model.script(Reply("answer"))
    turn = after_compacting(setup.turn())
    assert await stream(turn) == TurnTrigger.MODEL_DONE  # not compacted again: no loop
    assert len(setup.model.requests) == 1


async def test_a_refusal_after_compacting_fails_the_turn_and_says_why(tmp_path: Path) -> None:
    refusal = ProviderError(
        "openai", "prompt is too long", status=400, error_type="context_length_exceeded"
    )
    setup = Setup(tmp_path)
    setup.model.script(Reply(error=refusal))
    turn = after_compacting(setup.turn())
    with pytest.raises(TurnFailed) as failed:
        await stream(turn)
    assert "even after compacting" in failed.value.message


async def test_a_refusal_for_length_teaches_the_window_and_compacts(tmp_path: Path) -> None:
    refusal = ProviderError(
        "openai",
        "This model's maximum context length is 4096 tokens. However, your messages "
        "resulted in 5000 tokens.",
        status=400,
        error_type="context_length_exceeded",
    )
    setup = Setup(tmp_path)
    setup.model.script(Reply(error=refusal))
    turn = setup.turn()
    assert await stream(turn) == TurnTrigger.COMPACT
    assert setup.budget.learned == 4096 and not setup.budget.guessed
    assert setup.memory.entries == []  # nothing streamed, nothing kept


async def test_a_failed_call_keeps_what_streamed_and_fails_the_turn(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.model.script(Reply(error=ProviderError("openai", "overloaded", status=503)))
    turn = setup.turn()
    with pytest.raises(TurnFailed) as failed:
        await stream(turn)
    assert "overloaded" in failed.value.message
    assert failed.value.data == {"provider": "openai", "retryable": False, "status": 503}


async def test_news_of_the_session_is_told_before_the_answer(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.editor.gathered.append("MCP server 'x' was lost.")
    setup.model.script(Reply("answer"))
    assert await stream(setup.turn()) == TurnTrigger.MODEL_DONE
    assert setup.editor.text() == "MCP server 'x' was lost.\n\nanswer"


async def test_an_empty_answer_is_said_so(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.model.script(Reply("", stop=StopReason.MAX_TOKENS))
    turn = setup.turn()
    assert await stream(turn) == TurnTrigger.MODEL_DONE
    assert turn.stop_reason == "max_tokens"
    assert "output limit" in setup.editor.text()
    assert setup.memory.kinds() == ["assistant", "notice"]


# ------------------------------------------------------------ cancel, at each wait


async def test_a_cancel_while_the_tools_are_listed_makes_no_call(tmp_path: Path) -> None:
    stall = Stall()  # an MCP server slow to list its tools
    setup = Setup(tmp_path, listing=stall)
    turn = setup.turn()
    work = asyncio.ensure_future(stream(turn))
    await stall.reached.wait()
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    assert setup.model.requests == [] and setup.memory.entries == []


async def test_a_cancel_mid_stream_keeps_what_streamed(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.model.script(Reply("partial answer", hang=True))
    turn = setup.turn()
    work = asyncio.ensure_future(stream(turn))
    await setup.model.streaming.wait()
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    [stored] = setup.memory.of("assistant")
    assert stored["stopReason"] == "cancelled"
    assert setup.editor.text() == "partial answer"
    assert setup.charges == []  # a cut call reports no usage


async def test_a_cancel_while_the_editor_is_behind_ends_the_wait(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    setup.editor.behind = asyncio.Event()
    setup.model.script(Reply("first words"))
    turn = setup.turn()
    work = asyncio.ensure_future(stream(turn))
    await setup.editor.sent.wait()
    await asyncio.sleep(0.01)
    assert not work.done()  # the turn waits for the editor
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    [stored] = setup.memory.of("assistant")
    assert stored["stopReason"] == "cancelled"


async def test_a_cancel_during_the_messages_commit_still_announces_its_calls(
    tmp_path: Path,
) -> None:
    tools: dict[str, Tool] = {"free": Gate("free")}
    setup = Setup(tmp_path, tools=tools)
    setup.memory.hold = asyncio.Event()
    setup.model.script(Reply(calls=(call("c1", "free"),)))
    turn = setup.turn()
    work = asyncio.ensure_future(stream(turn))
    await setup.memory.queued.wait()
    turn.token.cancel("test")  # the commit goes on: what is stored is told
    await asyncio.sleep(0.01)
    assert not work.done()
    setup.memory.hold.set()
    with pytest.raises(Cancelled):
        await work
    assert setup.editor.statuses("c1") == ["pending"]
    assert [pc.call.id for pc in turn.calls] == ["c1"]  # left open: draining closes them
