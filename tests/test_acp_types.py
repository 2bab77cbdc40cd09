"""ACP's TypedDicts (`schemas/acp_types.py`) are what `schemas/acp.json` generates, and say
what the schema says: a drifted file, or one that lets a wrong key through, fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acp_fsm.devkit import typegen
from tests.harness import ROOT


def test_the_committed_types_are_what_the_schema_generates() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_fsm.devkit.typegen", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert typegen.TARGET.read_text(encoding="utf-8") == typegen.generate()


CHECKED = """
import acp_types as acp

ok: acp.SessionUpdate = {"sessionUpdate": "tool_call_update", "toolCallId": "c",
                         "status": "completed"}
chunk: acp.SessionUpdate = {"sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": "hi"}}
answer: acp.PromptResponse = {"stopReason": "end_turn"}
misspelt: acp.SessionUpdate = {"sessionUpdate": "tool_call_update", "toolCallID": "c"}
status: acp.ToolCallUpdate = {"toolCallId": "c", "status": "done"}
missing: acp.PromptResponse = {}
tag: acp.SessionUpdate = {"sessionUpdate": "tool_cal", "toolCallId": "c"}
"""


def test_the_type_checker_holds_payloads_to_the_schema(tmp_path: Path) -> None:
    """What the runtime's builders rely on: mypy accepts valid payloads and names the key,
    the value or the tag that is wrong in the others."""
    (tmp_path / "acp_types.py").write_text(typegen.TARGET.read_text(encoding="utf-8"))
    (tmp_path / "payloads.py").write_text(CHECKED)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "payloads.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    lines = sorted({int(line.split(":")[1]) for line in errors})
    wrong = [
        number
        for number, line in enumerate(CHECKED.splitlines(), 1)
        if line.startswith(("misspelt", "status", "missing", "tag"))
    ]
    assert lines == wrong, done.stdout
    assert "'done'" in done.stdout and "'tool_cal'" in done.stdout
    assert 'Missing key "stopReason"' in done.stdout


def test_a_drifted_file_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    stale = typegen.generate().replace("toolCallId: Required[ToolCallId]", "toolCallId: str", 1)
    target = typegen.TARGET.with_name("stale_acp_types.py")
    monkeypatch.setattr(typegen, "TARGET", target)
    target.write_text(stale, encoding="utf-8")
    try:
        assert typegen.main(["--check"]) == 1
    finally:
        target.unlink()
