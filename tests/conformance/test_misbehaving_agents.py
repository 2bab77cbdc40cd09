"""`acp-fsm conformance` against agents that misbehave in ways that hit the tool itself: one
that floods its stdout and stderr (the tool's memory stays bounded, its evidence says how much
was written), ones whose answers carry the wrong id (each check fails at once, saying so,
instead of waiting out its timeout), and one that answers prompts without calling the model
it was pointed at (the checks of what the model says do not apply, and say why)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest

from acp_fsm.devkit.conformance import GROUPS, Outcome, run_suite, selected
from acp_fsm.devkit.schema_check import SCHEMA_ENV, OfficialSchema
from tests.conformance.conftest import OFFICIAL_PATH
from tests.conformance.test_conformance import broken
from tests.harness import ROOT, agent_env

# The tool's address space while a flooding agent writes 144 MiB to each of four agents' pipes
# at once: the tool needs about 80 MiB of it, one that keeps what agents write runs out.
ADDRESS_SPACE: Final = 256 * 1024 * 1024
# Run the tool with that limit: set, then exec'd, so it binds the tool (and its agents).
LIMITED: Final = (
    "import os, resource, sys; limit = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); os.execv(sys.argv[2], sys.argv[2:])"
)
NO_MODEL: Final = "the agent did not call the model it was pointed at"


def conformance(
    tmp_path: Path, *args: str, agent: str, limit: int | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """The installed console script, run as a user runs it against a broken agent (under an
    address-space limit, when given): its exit and its JSON report."""
    report = tmp_path / "report.json"
    command = [str(Path(sys.executable).parent / "acp-fsm"), "conformance", "--json", str(report)]
    command += [*args, "--env", f"PYTHONPATH={ROOT}", "--", *broken(agent)]
    if limit is not None:
        command = [sys.executable, "-c", LIMITED, str(limit), *command]
    overrides = {SCHEMA_ENV: str(OFFICIAL_PATH)} if OFFICIAL_PATH else {}
    # One malloc arena: the address space then follows what is allocated, not the arenas that
    # threads reserve (64 MiB each), so the limit means the same on any machine.
    env = agent_env(MALLOC_ARENA_MAX="1", **overrides)
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert report.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    return done, json.loads(report.read_text(encoding="utf-8"))


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["id"]: check for check in report["checks"]}


def test_a_flooding_agent_is_reported_in_bounded_memory(tmp_path: Path) -> None:
    """Each agent writes 64 MiB of log lines and a 16 MiB line to stdout and 64 MiB without a
    newline to stderr: the tool keeps counts, the first lines and the ends, within its limit."""
    done, report = conformance(tmp_path, "--only", "transport", agent="floods", limit=ADDRESS_SPACE)
    assert done.returncode == 1, done.stderr[-2000:]
    checks = by_id(report)
    assert {i: c["outcome"] for i, c in checks.items()} == {
        c.id: "fail" if c.id == "transport.stdout_only" else "pass" for c in GROUPS["transport"]
    }, {i: c["reason"] for i, c in checks.items()}
    stdout_only = checks["transport.stdout_only"]
    strays = 64 * 1024 + 1  # of 1 KiB, and the long one
    assert re.fullmatch(
        f"{strays:,} of [0-9,]+ stdout lines \\(8[0-9,]{{9}} bytes in all\\) are not JSON-RPC 2.0 "
        "messages, 1 of them longer than the 8 MiB the tool reads as one message",
        stdout_only["reason"],
    ), stdout_only["reason"]
    evidence = stdout_only["evidence"]
    assert len(evidence) == 20 and all(len(line) < 400 for line in evidence), evidence
    assert evidence[0].startswith('> {"jsonrpc": "2.0", "id": 1, "method": "initialize"')
    assert evidence[1].startswith("< flood: xxx") and evidence[1].endswith("(1023 characters)")
    for check in checks.values():
        # 64 MiB of "e", then the agent's log lines: the end is shown, after the size
        said = re.match(
            r"\[67,1\d\d,\d{3} bytes in \d+ newline\(s\); the last 1,000 characters\] ",
            check["stderr"],
        )
        assert said is not None and len(check["stderr"]) == said.end() + 1000, check["stderr"]


@pytest.mark.parametrize(
    ("agent", "got"),
    [
        ("string_ids", '"1" (a string)'),
        ("float_ids", "1.0 (a number with a decimal point)"),
        ("padded_ids", '"01" (a string)'),  # no id sent, in any type: the one awaited
    ],
)
def test_an_id_of_another_type_fails_every_check_at_once(
    official: OfficialSchema, tmp_path: Path, agent: str, got: str
) -> None:
    """The answer is on the wire: no check waits its timeout (10 s) for a match that cannot
    come; each names the id sent and the id answered."""
    done, report = conformance(tmp_path, agent=agent)
    assert done.returncode == 1
    for check in report["checks"]:
        assert check["outcome"] == "fail", check
        assert f" answered with id {got} for request id 1 (a number): " in check["reason"], check
        assert "within" not in check["reason"], check
    first = by_id(report)["robustness.stdin_eof"]
    assert first["reason"].startswith(f"initialize answered with id {got} for request id 1 ")


async def test_an_answer_without_its_id_fails_the_request_it_can_only_answer() -> None:
    """Id null on an answer, while one request is awaited and every message written had an
    id: that request's answer, in the wrong form."""
    env = {"PYTHONPATH": str(ROOT)}
    run = await run_suite(broken("null_ids"), selected(["handshake"]), extra_env=env)
    assert {r.check.id: r.outcome for r in run.results} == {
        c.id: Outcome.FAIL for c in GROUPS["handshake"]
    }
    for result in run.results:
        assert " answered with id null for request id 1 (a number): " in result.reason, result


def test_an_agent_that_does_not_call_the_model_is_not_held_to_what_it_says(
    official: OfficialSchema, tmp_path: Path
) -> None:
    """An echo agent: the checks of the model's reply, its cancel and its tool calls do not
    apply; every other check passes, and the run with it."""
    done, report = conformance(tmp_path, agent="echoes")
    assert done.returncode == 0, done.stdout[-3000:]
    needs_model = {
        "sessions.prompt_streams",
        *(c.id for c in (*GROUPS["cancel"], *GROUPS["delegation"])),
    }
    not_advertised = {
        c.id for c in (*GROUPS["advertised"], *GROUPS["newer"], *GROUPS["subagents"], *GROUPS["v2"])
    } | {"matrix.close"}  # v1's: version 1 answered to 2
    checks = by_id(report)
    assert {i: c["outcome"] for i, c in checks.items()} == {
        c.id: "n/a" if c.id in needs_model | not_advertised else "pass" for c in selected(None)
    }, {i: c["reason"] for i, c in checks.items()}
    for check_id in needs_model:
        assert checks[check_id]["reason"].startswith(f"{NO_MODEL} (no request"), checks[check_id]
    assert "You said: Reply in a few words" in checks["sessions.prompt_streams"]["reason"]
