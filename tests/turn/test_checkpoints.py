"""A turn's checkpoints (`TurnEnv.checkpoint`) over in-memory ports: one group of entries per
call, recorded before the tool writes; one that cannot be stored fails the call, and nothing
is written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from acp_fsm.errors import NotStored
from acp_fsm.tools import TOOLS
from tests.turn.memory import Setup


async def test_the_files_are_recorded_in_one_group_before_the_write(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    recorded: list[list[dict[str, Any]]] = []

    async def record(bodies: list[dict[str, Any]]) -> None:
        assert (tmp_path / "a.txt").read_text() == "old\n"  # before anything is written
        recorded.append(bodies)

    turn = Setup(tmp_path).turn()
    turn.context = replace(turn.context, checkpoint=record)
    outcome = await TOOLS["write_file"].run({"path": "a.txt", "content": "new\n"}, turn.env("w1"))
    assert not outcome.is_error and (tmp_path / "a.txt").read_text() == "new\n"
    [[body]] = recorded
    assert (body["callId"], body["path"], body["before"]) == (
        "w1",
        str(tmp_path / "a.txt"),
        "old\n",
    )


async def test_a_checkpoint_the_store_refuses_fails_the_call_and_writes_nothing(
    tmp_path: Path,
) -> None:
    async def refuse(bodies: list[dict[str, Any]]) -> None:
        raise NotStored("the checkpoint entry could not be stored: disk full")

    turn = Setup(tmp_path).turn()
    turn.context = replace(turn.context, checkpoint=refuse)
    outcome = await TOOLS["write_file"].run({"path": "b.txt", "content": "x\n"}, turn.env("w1"))
    assert outcome.is_error and "Could not record the files" in outcome.output
    assert "disk full" in outcome.output and not (tmp_path / "b.txt").exists()
