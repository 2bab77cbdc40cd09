"""What `session/load` replays from stored entries (`acp_fsm.session.replay.replay_updates`)."""

from __future__ import annotations

from acp_fsm.session.replay import replay_updates
from acp_fsm.store import Entry


def test_a_terminal_of_an_earlier_connection_is_replayed_as_its_output() -> None:
    """Sessions stored before a command's output was kept hold the terminal id of the
    connection that ran it, which no later client can show: the result text stands in."""
    stored = {
        "callId": "r1",
        "content": "Exit code: 0\nhello\n",
        "isError": False,
        "view": {"status": "completed", "content": [{"type": "terminal", "terminalId": "term-1"}]},
    }
    [update] = replay_updates([Entry(1, "tool_result", stored, 0.0)])
    assert update == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "r1",
        "status": "completed",
        "content": [
            {"type": "content", "content": {"type": "text", "text": "Exit code: 0\nhello\n"}}
        ],
    }


def test_a_diff_is_replayed_as_stored() -> None:
    diff = {"type": "diff", "path": "/p/a.py", "oldText": None, "newText": "x\n"}
    stored = {
        "callId": "w1",
        "content": "Created a.py (1 line).",
        "isError": False,
        "view": {"status": "completed", "content": [diff]},
    }
    [update] = replay_updates([Entry(1, "tool_result", stored, 0.0)])
    assert update["sessionUpdate"] == "tool_call_update"
    assert update["content"] == [diff]
