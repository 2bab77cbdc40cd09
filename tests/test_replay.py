"""What `session/load` replays from stored entries (`acp_fsm.session.replay.replay_updates`)."""

from __future__ import annotations

from typing import Any, cast

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
    [(on, update)] = replay_updates("s1", [Entry(1, "tool_result", stored, 0.0)])
    assert on == "s1"
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
    [(on, update)] = replay_updates("s1", [Entry(1, "tool_result", stored, 0.0)])
    assert on == "s1"
    assert update["sessionUpdate"] == "tool_call_update"
    assert update["content"] == [diff]


def _chunk_ids(session_id: str, entries: list[Entry]) -> list[tuple[str, str]]:
    found = [cast("dict[str, Any]", u) for _, u in replay_updates(session_id, entries)]
    return [(u["sessionUpdate"], u["messageId"]) for u in found if "messageId" in u]


def test_messages_stored_without_ids_get_the_same_ids_at_every_load() -> None:
    """Entries written before messages had ids: each message gets one made from where it is
    stored (a thought's apart from its answer's), the same at every load, another in another
    session."""
    entries = [
        Entry(1, "user", {"prompt": [{"type": "text", "text": "hi"}], "parts": []}, 0.0),
        Entry(
            2,
            "assistant",
            {
                "parts": [
                    {"type": "thinking", "text": "hmm"},
                    {"type": "text", "text": "a"},
                    {"type": "text", "text": "b"},
                ],
                "stopReason": "end_turn",
            },
            0.0,
        ),
        Entry(3, "notice", {"text": "told"}, 0.0),
    ]
    first = _chunk_ids("s1", entries)
    assert [kind for kind, _ in first] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
    ]
    ids = [message_id for _, message_id in first]
    assert ids[2] == ids[3]  # two text parts of one message
    assert len({ids[0], ids[1], ids[2], ids[4]}) == 4
    assert _chunk_ids("s1", entries) == first
    assert not {i for _, i in _chunk_ids("s2", entries)} & set(ids)


def test_stored_ids_are_replayed_as_stored() -> None:
    entries = [
        Entry(1, "command", {"prompt": [{"type": "text", "text": "/status"}], "messageId": "u"}, 0),
        Entry(2, "notice", {"text": "Status", "messageId": "n"}, 0.0),
        Entry(
            3,
            "assistant",
            {
                "parts": [{"type": "thinking", "text": "t"}, {"type": "text", "text": "x"}],
                "messageIds": {"text": "a", "thinking": "th"},
            },
            0.0,
        ),
    ]
    assert _chunk_ids("s1", entries) == [
        ("user_message_chunk", "u"),
        ("agent_message_chunk", "n"),
        ("agent_thought_chunk", "th"),
        ("agent_message_chunk", "a"),
    ]
