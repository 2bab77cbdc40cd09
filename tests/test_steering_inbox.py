"""The steering inbox (`acp_fsm.steering.Inbox`): it takes messages only while a turn can
read them, from the turn's start to its end."""

from __future__ import annotations

from acp_fsm.steering import Inbox, Steer


def steer(text: str) -> Steer:
    return Steer({"prompt": [{"type": "text", "text": text}]}, ())


def test_it_takes_messages_only_between_a_turns_start_and_end() -> None:
    inbox = Inbox()
    assert not inbox.put(steer("before any turn"))
    inbox.open()
    assert inbox.put(steer("a")) and inbox.put(steer("b"))
    assert inbox.waiting()
    assert [s.body["prompt"][0]["text"] for s in inbox.take()] == ["a", "b"]
    assert not inbox.waiting() and inbox.take() == []
    assert inbox.put(steer("c"))
    assert [s.body["prompt"][0]["text"] for s in inbox.close()] == ["c"]
    assert not inbox.put(steer("after the turn's end"))  # a turn of its own, then
    assert inbox.close() == [] and not inbox.waiting()
    inbox.open()
    assert inbox.put(steer("next turn"))
