"""What a subagent shows and reports, on its own (its runs: tests/e2e/test_subagents.py)."""

from __future__ import annotations

from pathlib import Path

from acp_fsm import updates
from acp_fsm.instructions import BASE, subagent_prompt
from acp_fsm.providers.types import AssistantMessage, Message, TextPart, UserMessage
from acp_fsm.schemas import acp_types as acp
from acp_fsm.turn.subagent import MAX_LINES, Progress, _report


def texts(content: tuple[acp.ToolCallContent, ...]) -> list[str]:
    out = []
    for block in content:
        assert block["type"] == "content" and block["content"]["type"] == "text"
        out.append(block["content"]["text"])
    return out


def test_progress_is_a_line_per_call_marked_when_it_fails() -> None:
    shown: list[tuple[acp.ToolCallContent, ...]] = []
    progress = Progress(shown.append)
    progress.seen(updates.tool_call("a", {"title": "Read a.py", "kind": "read", "rawInput": {}}))
    progress.seen(updates.tool_call("b", {"title": "Search 'x'", "kind": "search", "rawInput": {}}))
    progress.seen(updates.tool_call_update("b", "failed"))
    progress.seen(updates.tool_call_update("b", "failed"))
    progress.seen(updates.chunk("agent_message_chunk", updates.text_content("words"), "m1"))
    assert len(shown) == 4  # the text chunk shows nothing
    assert texts(shown[-1]) == ["• Read a.py\n• Search 'x' (failed)"]
    assert texts(progress.content("the report")) == [texts(shown[-1])[0], "the report"]


def test_a_call_the_cancel_stopped_is_marked_as_one_that_failed() -> None:
    shown: list[tuple[acp.ToolCallContent, ...]] = []
    progress = Progress(shown.append)
    progress.seen(updates.tool_call("a", {"title": "Run x", "kind": "execute", "rawInput": {}}))
    stopped = updates.tool_call_update("a", None)
    stopped["status"] = "cancelled"  # type: ignore[typeddict-item]  # v2's (v1: failed)
    progress.seen(stopped)
    assert texts(shown[-1]) == ["• Run x (failed)"]


def test_progress_keeps_the_latest_lines() -> None:
    progress = Progress(lambda content: None)
    for i in range(MAX_LINES + 10):
        progress.seen(
            updates.tool_call(f"c{i}", {"title": f"call {i}", "kind": "read", "rawInput": {}})
        )
    lines = texts(progress.content())[0].splitlines()
    assert len(lines) == MAX_LINES
    assert lines[0] == "… 11 earlier calls" and lines[-1] == f"• call {MAX_LINES + 9}"


def test_the_report_is_the_last_words_with_a_note_when_it_stopped_short() -> None:
    said = AssistantMessage((TextPart("found it in a.py:3"),))
    silent = AssistantMessage(())
    messages: list[Message] = [UserMessage((TextPart("go"),)), said, silent]
    assert _report(messages, "end_turn", 2) == ("found it in a.py:3", False)
    text, failed = _report(messages, "max_turn_requests", 5)
    assert not failed and text.startswith("found it in a.py:3\n\n(The subagent stopped after 5")
    nothing, failed = _report(messages[:1], "end_turn", 1)
    assert failed and nothing == "The subagent ended without a report. It reported nothing."


def test_a_subagents_system_prompt_keeps_the_environment_not_the_agents_opening() -> None:
    cwd = "/p"
    main = BASE.format(cwd=cwd) + "\n\nEnvironment:\n- here"
    prompt = subagent_prompt(main, Path(cwd))
    assert prompt.startswith("You are a subagent") and prompt.endswith("Environment:\n- here")
    assert "You are acp-fsm" not in prompt
    assert subagent_prompt("other", Path(cwd)).endswith("\n\nother")
