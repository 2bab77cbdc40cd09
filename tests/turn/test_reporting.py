"""`reporting`'s work (`acp_fsm.turn.reporting.report`) over in-memory ports: /status and /mcp
answered from what the turn's ports know, stored like a notice, and a cancel while the status
reads the instruction files."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_fsm.commands import MCP, STATUS, Command
from acp_fsm.config_options import PLAN, Settings
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.protocol.cancel import Cancelled
from acp_fsm.providers.types import Usage
from acp_fsm.turn.reporting import report
from tests.turn.memory import Setup


async def test_status_says_what_the_ports_know(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("be brief\n")
    setup = Setup(tmp_path, settings=Settings(mode=PLAN), status=["files (stdio): running"])
    setup.budget.used = 3_200
    setup.ledger.spent = Usage(1_000, 50, cache_read_tokens=400)
    turn = setup.turn(Command(STATUS, ""))

    assert await report(turn) == TurnTrigger.REPORTED

    text = setup.editor.text()
    assert text.startswith("Status:\n- Provider: openai (https://api.openai.com/v1)")
    assert (
        "- Model: gpt-4o\n- Tool calls: native (the server's tool calls), the provider's API\n"
        in text
    )
    assert "- Tool list: full\n- Mode: Plan\n" in text
    assert "- Context: 3,200 of 128,000 tokens (2%)" in text
    assert "- Tokens so far: 1,000 in (400 read from the cache, 0 written to it), 50 out" in text
    assert "- MCP servers: files (stdio): running" in text
    assert f"- Instruction files: {tmp_path / 'AGENTS.md'}" in text
    [shown] = setup.editor.plain()
    assert setup.memory.of("notice") == [{"text": text, "messageId": shown["messageId"]}]
    assert setup.model.requests == []


async def test_mcp_lists_the_servers_or_says_there_are_none(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    assert await report(setup.turn(Command(MCP, ""))) == TurnTrigger.REPORTED
    assert setup.editor.text() == "No MCP servers in this session (the editor configures them)."
    setup = Setup(tmp_path, status=["a (http): failed (refused)", "b (stdio): starting"])
    await report(setup.turn(Command(MCP, "")))
    assert setup.editor.text() == (
        "MCP servers:\n- a (http): failed (refused)\n- b (stdio): starting"
    )


async def test_a_cancel_while_the_files_are_read_answers_nothing(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    turn = setup.turn(Command(STATUS, ""))
    turn.token.cancel("test")
    with pytest.raises(Cancelled):
        await report(turn)
    assert setup.editor.updates == [] and setup.memory.entries == []
