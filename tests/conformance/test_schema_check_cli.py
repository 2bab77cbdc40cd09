"""`python -m acp_fsm.devkit.schema_check` (what `acp-fsm schema-check` runs): the table, the totals
line and the exit status, including when the official schema is missing or disagrees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp_fsm.devkit.schema_check import SCHEMA_ENV, OfficialSchema, expected_rows, main

ROOT = Path(__file__).resolve().parents[2]


def schema_check(*args: str, schema: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if schema is not None:
        env[SCHEMA_ENV] = schema
    return subprocess.run(
        [sys.executable, "-m", "acp_fsm.devkit.schema_check", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def rows(stdout: str) -> dict[tuple[str, str, str], list[int]]:
    """(method, direction, kind) -> [checked, official failures, own failures]."""
    table = {}
    for line in stdout.splitlines():
        cells = line.split()
        if len(cells) == 6 and cells[3].isdigit():
            table[(cells[0], cells[1], cells[2])] = [int(c) for c in cells[3:]]
    return table


def test_table_and_exit_status(official: OfficialSchema) -> None:
    assert official.path is not None
    done = schema_check(schema=str(official.path))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["method", "direction", "kind", "checked", "official", "own"]
    table = rows(done.stdout)
    assert {(method, direction) for method, direction, _ in table} >= expected_rows()
    total = lines[-1].split()
    assert total[0] == "total" and total[2:] == ["0", "0"]
    assert int(total[1]) == sum(r[0] for r in table.values()) > 150
    assert table[("session/update", "agent->client", "notification")][0] > 50


def test_exit_2_when_the_official_schema_is_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "schema.json"
    done = schema_check(schema=str(missing))
    assert done.returncode == 2
    assert f"no file at {missing} (given by {SCHEMA_ENV})" in done.stderr
    # and what to do: give a path, or let the command fetch the official one
    assert "pass --schema PATH" in done.stderr and "leave both unset to fetch" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "is not JSON (Expecting property name"),
        ("[1, 2]", "is not a JSON Schema with $defs"),
        ('{"$defs": 3}', "is not a JSON Schema with $defs"),
    ],
)
def test_exit_2_when_the_file_given_is_not_a_schema(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "schema.json"
    path.write_text(text, encoding="utf-8")
    done = schema_check("--schema", str(path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"acp-fsm schema-check: {path} {problem}"), done.stderr
    assert "pass --schema PATH" in done.stderr and "Traceback" not in done.stderr


def test_exit_1_and_failing_rows_on_disagreement(
    official: OfficialSchema, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against an official schema that wants a field the agent never sends in a prompt
    response, exactly those messages fail, and say why."""
    drifted = json.loads(json.dumps(official.doc))
    drifted["$defs"]["PromptResponse"]["required"] = ["stopReason", "tokenCount"]
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(drifted), encoding="utf-8")
    if official.unstable is not None:  # session/fork is judged by the unstable schema beside
        path.with_name("schema.unstable.json").write_text(json.dumps(official.unstable.doc))
    assert main(["--schema", str(path)]) == 1
    out = capsys.readouterr().out
    table = rows(out)
    checked, failed, own = table[("session/prompt", "client->agent", "result")]
    assert checked == failed > 0 and own == 0
    others = {key: r for key, r in table.items() if key[0] != "session/prompt"}
    assert all(r[1] == 0 for r in others.values())
    assert "FAIL result of session/prompt: official: PromptResponse" in out
    assert "'tokenCount' is a required property" in out


def test_help_says_where_the_official_schema_comes_from(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "acp_fsm", "schema-check", "--help"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for said in (
        "--schema PATH",
        f"${SCHEMA_ENV}",
        "the npm registry",
        "@agentclientprotocol/sdk 2.4.0",
        "checked against pinned hashes",
        str(tmp_path / "acp-fsm" / "acp-schema-v1-sdk-2.4.0" / "schema.json"),
    ):
        assert said in done.stdout, said


def test_a_method_newer_than_the_official_files_is_checked_against_its_marked_definition(
    official: OfficialSchema,
) -> None:
    """`session/set_title` is not in the official 2.4.0 files: its messages are judged by
    acp-fsm's definition, marked with its source; a method without such a mark stays
    undefined."""
    ok = {"jsonrpc": "2.0", "id": 1, "result": {"title": "Mine"}}
    bad = {"jsonrpc": "2.0", "id": 1, "result": {"title": 3}}
    assert official.message_problems("agent", "result", "session/set_title", ok) == []
    [problem] = official.message_problems("agent", "result", "session/set_title", bad)
    if official.defining("agent", "result", "session/set_title") is None:  # the shared copy
        assert problem.startswith("acp-fsm's SetSessionTitleResponse (newer ACP): ")
    else:  # the SDK's unstable file defines it: it judges
        assert problem.startswith("SetSessionTitleResponse at $.title")
    unknown = official.message_problems("agent", "result", "session/rename", ok)
    assert unknown[-1].startswith("no official definition")


def test_the_session_on_acp_v2_against_v2s_definitions() -> None:
    """`--protocol 2`: the same scripted session spoken in ACP v2, no official schema needed;
    every message valid under schemas/acp_v2.json and v2's own updates exercised."""
    done = schema_check("--protocol", "2", schema="/nonexistent/schema.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("ACP v2 (Preview)")
    table = rows(done.stdout)
    assert all(own == 0 for _, _, own in table.values())
    assert table[("session/prompt", "client->agent", "result")][0] > 10
    assert ("session/load", "client->agent", "result") not in table  # v2 resumes instead
    assert "NOT EXERCISED" not in done.stdout


def test_a_message_v2_refuses_is_a_failure() -> None:
    from acp_fsm.devkit.editor import Record
    from acp_fsm.devkit.schema_check import v2

    tool_call = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "v1's kind"}
    update = {"jsonrpc": "2.0", "method": "session/update"}
    records = [
        Record(
            "notification",
            "session/update",
            {**update, "params": {"sessionId": "s", "update": tool_call}},
        ),
        Record(
            "result",
            "session/prompt",
            {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}},
        ),
    ]
    found = v2.refused(records)
    assert len(found) == 2, found
    assert found[0].startswith(
        "session/update notification: acp_v2.SessionNotification: update.sessionUpdate"
    )
    assert "messageId" in found[1]
    report = v2.report(records)
    assert not report.ok and len(report.failures) == 2
    assert v2.gaps(records)  # nothing of v2's own was said
