"""`awaiting_permission`'s work (`acp_fsm.turn.permission.ask_permissions`) over in-memory
ports: each waiting call asked in order, every answer the editor may give, and a cancel while
the user is asked."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.fsm.tool_call import ToolCallState
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.permission_rules import Rule, Rules
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.protocol.errors import OutboundTimeout
from acp_fsm.tools.base import Tool
from acp_fsm.turn.calls import classify
from acp_fsm.turn.permission import ask_permissions
from acp_fsm.turn.runner import Turn
from tests.turn.memory import Gate, Setup, call

S = ToolCallState


def asking(tmp_path: Path, *calls: str) -> tuple[Setup, Turn]:
    """A turn whose message called the asking tool once per id in `calls`."""
    tools: dict[str, Tool] = {"edit": Gate("edit", "edit", asks=True)}
    setup = Setup(tmp_path, tools=tools)
    turn = setup.turn()
    turn.tools = tools
    turn.calls = [classify(turn, call(c, "edit")) for c in calls]
    return setup, turn


def chose(option: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}}


async def answering(setup: Setup, *answers: dict[str, Any] | Exception) -> list[Any]:
    """Answer the permission requests in order; their params."""
    asked = []
    for answer in answers:
        request = await setup.editor.channel.next_request()
        assert request.method == "session/request_permission"
        asked.append(request.params)
        if isinstance(answer, Exception):
            request.reply.set_exception(answer)
        else:
            request.answer(answer)
    return asked


async def test_each_waiting_call_is_asked_in_order(tmp_path: Path) -> None:
    setup, turn = asking(tmp_path, "c1", "c2", "c3", "c4")
    work = asyncio.ensure_future(ask_permissions(turn))
    asked = await answering(
        setup,
        chose("allow_once"),
        chose("reject_once"),
        chose("no_such_option"),
        {"outcome": {"outcome": "cancelled"}},  # the editor withdrew it, not the user's cancel
    )
    assert await work == TurnTrigger.PERMISSIONS_SETTLED
    assert [p["toolCall"]["toolCallId"] for p in asked] == ["c1", "c2", "c3", "c4"]
    assert all(p["sessionId"] == "sess_test" for p in asked)
    assert [pc.state for pc in turn.calls] == [S.ALLOWED, S.DENIED, S.DENIED, S.DENIED]
    assert "rejected this edit call" in turn.calls[1].reason
    assert "unknown option 'no_such_option'" in turn.calls[2].reason
    assert "cancelled by the client" in turn.calls[3].reason
    assert setup.rejected == set()


async def test_always_allow_stores_the_rule_it_names_and_settles_the_next_call(
    tmp_path: Path,
) -> None:
    """The option names the rules it stores; chosen, they land in the project's local
    settings and allow the turn's next call they cover, which is not asked."""
    tools: dict[str, Tool] = {"run_command": Gate("run_command", "execute", asks=True)}
    setup = Setup(tmp_path, tools=tools)
    turn = setup.turn()
    turn.tools = tools
    turn.rules = Rules()
    lines = ("npm test && git status", "npm test -- --watch", "npm install")
    turn.calls = [
        classify(turn, call(f"c{n}", "run_command", command=line)) for n, line in enumerate(lines)
    ]
    work = asyncio.ensure_future(ask_permissions(turn))
    asked = await answering(setup, chose("allow_always"), chose("reject_once"))
    assert await work == TurnTrigger.PERMISSIONS_SETTLED
    assert [p["toolCall"]["toolCallId"] for p in asked] == ["c0", "c2"]  # c1 is covered
    assert [pc.state for pc in turn.calls] == [S.ALLOWED, S.ALLOWED, S.DENIED]
    assert [(o["kind"], o["name"]) for o in asked[0]["options"]] == [
        ("allow_once", "Allow once"),
        ("allow_always", "Always allow `Bash(npm test:*)`, `Bash(git status:*)` in this project"),
        ("reject_once", "Reject"),
        ("reject_always", "Always reject run_command in this session"),
    ]
    assert "`Bash(npm install:*)`" in asked[1]["options"][1]["name"]
    stored = json.loads((tmp_path / ".acp-fsm" / "settings.local.json").read_text())
    assert stored == {"permissions": {"allow": ["Bash(npm test:*)", "Bash(git status:*)"]}}
    assert setup.rejected == set()


async def test_a_call_an_ask_rule_decides_is_asked_whatever_was_answered_always(
    tmp_path: Path,
) -> None:
    """The user's ask rule (`permission_rules`): asked every time, and never offered an
    "always allow" it would not honour."""
    tools: dict[str, Tool] = {"edit": Gate("edit", "edit", asks=True)}
    setup = Setup(tmp_path, tools=tools)
    turn = setup.turn()
    turn.tools = tools
    source = tmp_path / ".claude" / "settings.json"
    turn.rules = Rules([Rule("ask", "edit", frozenset({"edit"}), None, source, tmp_path)])
    turn.calls = [classify(turn, call("c1", "edit"))]
    work = asyncio.ensure_future(ask_permissions(turn))
    [asked] = await answering(setup, chose("allow_once"))
    assert await work == TurnTrigger.PERMISSIONS_SETTLED
    assert [o["kind"] for o in asked["options"]] == ["allow_once", "reject_once", "reject_always"]
    assert turn.calls[0].state == S.ALLOWED


async def test_an_unanswered_request_denies_the_call(tmp_path: Path) -> None:
    setup, turn = asking(tmp_path, "c1")
    work = asyncio.ensure_future(ask_permissions(turn))
    await answering(setup, OutboundTimeout("session/request_permission timed out"))
    assert await work == TurnTrigger.PERMISSIONS_SETTLED
    assert turn.calls[0].state == S.DENIED
    assert "timed out" in turn.calls[0].reason


async def test_a_cancel_while_the_user_is_asked_ends_the_work(tmp_path: Path) -> None:
    setup, turn = asking(tmp_path, "c1", "c2")
    work = asyncio.ensure_future(ask_permissions(turn))
    request = await setup.editor.channel.next_request()
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await work
    assert request.reply.done()  # the request was released
    assert [pc.state for pc in turn.calls] == [S.ASKED, S.PENDING]  # both still open
    assert len(setup.editor.channel.requests) == 1


async def test_the_editors_cancelled_outcome_after_a_cancel_is_the_cancel(tmp_path: Path) -> None:
    setup, turn = asking(tmp_path, "c1")
    work = asyncio.ensure_future(ask_permissions(turn))
    request = await setup.editor.channel.next_request()
    request.answer({"outcome": {"outcome": "cancelled"}})
    turn.token.cancel("test")  # fired before the answer is read
    with pytest.raises(Cancelled):
        await work
    assert turn.calls[0].state == S.ASKED
