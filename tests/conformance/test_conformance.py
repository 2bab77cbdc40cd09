"""`acp-fsm conformance`: acp-fsm passes every check, the base of the broken agents too, and each
broken agent (`tests/conformance/broken/`) fails exactly the check of the rule it breaks."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_fsm.devkit.conformance import GROUPS, Outcome, Run, main, run_suite, selected
from acp_fsm.devkit.conformance.context import Context, Target
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.runner import run_check
from acp_fsm.devkit.schema_check import SCHEMA_ENV, OfficialSchema
from tests.conformance.conftest import OFFICIAL_PATH
from tests.harness import ROOT, agent_command, agent_env

pytestmark = pytest.mark.slow  # each test runs the whole suite, or most of it

ALL_IDS = {check.id for check in selected(None)}
# Each broken agent and the one check that must catch it.
BROKEN = {
    "stdout_logs": "transport.stdout_only",
    "serves_before_initialize": "handshake.before_initialize",
    "update_after_response": "sessions.updates_precede_response",
    "streams_nothing": "sessions.prompt_streams",
    "ignores_cancel": "cancel.mid_stream",
    "wrong_id": "transport.id_echo",
    "batch_crash": "transport.batch",
    "load_without_replay": "advertised.load",
    "ignores_rejection": "delegation.permission_reject",
    "fs_unadvertised": "delegation.fs_unadvertised",
    "keeps_terminals": "delegation.terminal",
    "auth_without_methods": "matrix.session_new",
    "stays_after_eof": "robustness.stdin_eof",
}


def broken(name: str) -> list[str]:
    return [sys.executable, "-m", f"tests.conformance.broken.{name}"]


async def suite(
    command: list[str], official: OfficialSchema, groups: list[str] | None = None
) -> Run:
    return await run_suite(
        command, selected(groups), extra_env={"PYTHONPATH": str(ROOT)}, official=official
    )


def failed(run: Run) -> set[str]:
    """The checks that caught a violation: failed, or warned for a rule of acp-fsm's own."""
    return {r.check.id for r in run.results if r.outcome in (Outcome.FAIL, Outcome.WARN)}


def test_acp_fsm_passes_every_check(official: OfficialSchema, tmp_path: Path) -> None:
    """The installed console script, run as a user runs it, against the agent of this checkout
    (with its whole tool list: on a compatible server such as the scripted one it shows the
    model a lean list, without `task`, which the subagents group needs)."""
    assert OFFICIAL_PATH is not None
    report, table = tmp_path / "report.json", tmp_path / "report.md"
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "acp-fsm"),
            "conformance",
            "--json",
            str(report),
            "--markdown",
            str(table),
            "--env",
            "ACP_FSM_TOOLS=full",
            "--env",
            "ACP_FSM_PROTOCOL_V2=1",  # and held to v2's rules (the `v2` group)
            "--",
            *agent_command(),
        ],
        env=agent_env(**{SCHEMA_ENV: str(OFFICIAL_PATH)}),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["ok"] is True
    assert document["agentInfo"]["name"] == "acp-fsm"
    assert document["command"] == agent_command()
    checks = document["checks"]
    assert {c["id"] for c in checks} == ALL_IDS
    assert {c["group"] for c in checks} == set(GROUPS)
    for check in checks:
        assert check["outcome"] == "pass", check  # it advertises every session method
        assert check["rule"]["source"] and check["rule"]["text"], check
        assert check["reason"] and check["evidence"], check
    assert "cancelLatencyMs" in next(c for c in checks if c["id"] == "cancel.mid_stream")["data"]
    assert "| transport | `batch` | ✅ pass |" in table.read_text(encoding="utf-8")
    assert "transport.id_echo" in done.stdout and f"{len(ALL_IDS)} checks:" in done.stdout


async def test_the_base_agent_passes_every_check(official: OfficialSchema) -> None:
    run = await suite(broken("base"), official)
    advertises_none = {
        c.id for c in (*GROUPS["advertised"], *GROUPS["newer"], *GROUPS["subagents"], *GROUPS["v2"])
    } | {"matrix.close"}
    assert {r.check.id: r.outcome for r in run.results} == {
        i: Outcome.NOT_APPLICABLE if i in advertises_none else Outcome.PASS for i in ALL_IDS
    }


@pytest.mark.parametrize(("name", "check_id"), BROKEN.items())
async def test_a_broken_agent_fails_its_own_check_only(
    official: OfficialSchema, name: str, check_id: str
) -> None:
    run = await suite(broken(name), official)
    assert failed(run) == {check_id}, [(r.check.id, r.reason) for r in run.results]
    result = next(r for r in run.results if r.check.id == check_id)
    required = result.check.rule.required
    assert result.outcome is (Outcome.FAIL if required else Outcome.WARN)
    assert run.ok is not required  # a warning alone leaves the exit status 0
    sent = [line for line in result.evidence if re.match(r"(\[agent \d\] )?> ", line)]
    assert sent, result.evidence  # the lines sent are in the evidence, beside those received
    assert result.reason


async def test_the_evidence_shows_the_offending_lines(official: OfficialSchema) -> None:
    run = await suite(broken("stdout_logs"), official, ["transport"])
    (result,) = [r for r in run.results if r.outcome is Outcome.FAIL]
    assert "< conformance agent: serving on stdio" in result.evidence


def test_only_runs_the_groups_named(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    status = main(
        [
            *("--only", "robustness", "handshake"),
            *("--json", str(report), "--env", f"PYTHONPATH={ROOT}"),
            *("--", *broken("batch_crash")),
        ]
    )
    assert status == 0  # its violation is in a group left out
    ids = [c["id"] for c in json.loads(report.read_text(encoding="utf-8"))["checks"]]
    assert {i.split(".")[0] for i in ids} == {"robustness", "handshake"}


@pytest.mark.parametrize(
    "argv", [[], ["--only", "transport"], ["--"], ["--env", "NOEQUALS", "--", "true"]]
)
def test_a_wrong_command_line_exits_2(argv: list[str]) -> None:
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own errors
        status = int(exc.code or 0)
    assert status == 2


def test_a_command_that_does_not_start_fails_every_check() -> None:
    status = main(["--only", "robustness", "--", "/nonexistent/acp-agent"])
    assert status == 1


async def test_an_agent_that_never_answers_fails_in_bounded_time() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(120)"]
    run = await run_suite(silent, selected(["handshake", "robustness"]), wait_s=1.0)
    outcomes = {r.check.id: r.outcome for r in run.results}
    assert outcomes["handshake.before_initialize"] is Outcome.FAIL
    assert outcomes["handshake.version"] is Outcome.FAIL
    assert outcomes["robustness.stdin_eof"] is Outcome.SKIPPED  # its initialize never came
    assert all("within 1 s" in r.reason for r in run.results), [r.reason for r in run.results]


async def test_an_answer_a_check_cannot_read_fails_that_check_only(tmp_path: Path) -> None:
    async def reads_a_missing_member(ctx: Context) -> str:
        probe = await ctx.start()
        answer: dict[str, Any] = (await probe.initialize()).get("agentInfo") or {}
        return str(answer["no such member"])

    check = Check(
        "x.unreadable", Rule("test", "an answer the check cannot read"), reads_a_missing_member
    )
    target = Target(tuple(agent_command()), agent_env(), tmp_path)
    result = await run_check(check, target)
    assert result.outcome is Outcome.FAIL
    assert result.reason == ("an answer of the agent could not be read: KeyError: 'no such member'")


async def test_a_restart_kills_an_agent_that_outlives_its_stdin(tmp_path: Path) -> None:
    """Load and resume are asked of a second agent: the first, still running a second after
    its stdin closed, is killed as an editor kills it (its own check fails it, not these)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ctx = Context(Target(tuple(broken("stays_after_eof")), env, tmp_path, wait_s=1.0))
    try:
        first = await ctx.start()
        await first.initialize()
        fresh = await ctx.restart(first)
        assert first.proc is not None and first.proc.returncode == -signal.SIGKILL
        assert fresh.initialized is not None and fresh.proc is not None
        assert fresh.proc.returncode is None
        assert ctx.data["killed"] == (
            "the agent did not exit within 1.0 s of its stdin closing; "
            "killed before the next agent started"
        )
    finally:
        await ctx.close()


async def test_an_agent_with_only_a_shell_writes_the_file_with_a_command(
    official: OfficialSchema,
) -> None:
    run = await suite(broken("shell_only"), official, ["delegation"])
    outcomes = {r.check.id: r.outcome for r in run.results}
    assert outcomes == {
        c.id: Outcome.NOT_APPLICABLE if c.id == "delegation.fs" else Outcome.PASS
        for c in GROUPS["delegation"]
    }, [(r.check.id, r.reason) for r in run.results]
    fs = next(r for r in run.results if r.check.id == "delegation.fs")
    assert fs.reason == "the agent asked no fs/* request of a client serving files"


async def test_auth_logs_in_when_session_new_asks_as_an_editor_does(
    official: OfficialSchema,
) -> None:
    """With `--auth`, every check's session/new that asks for authentication is followed by
    `authenticate` with that method and a second session/new; the matrix never logs in."""
    checks = [*GROUPS["sessions"], *GROUPS["matrix"][:1]]
    command, env = broken("needs_login"), {"PYTHONPATH": str(ROOT)}
    run = await run_suite(
        command, checks, extra_env=env, official=official, auth_method="conformance-key"
    )
    assert {r.check.id: r.outcome for r in run.results} == {c.id: Outcome.PASS for c in checks}
    matrix_new = next(r for r in run.results if r.check.id == "matrix.session_new")
    assert matrix_new.reason.startswith("auth required"), matrix_new.reason

    without = await run_suite(command, GROUPS["sessions"][:1], extra_env=env, official=official)
    wrong = await run_suite(
        command, GROUPS["sessions"][:1], extra_env=env, official=official, auth_method="nope"
    )
    assert "Authentication required" in without.results[0].reason
    assert wrong.results[0].reason.startswith("authenticate 'nope' failed: "), wrong.results


def _running(pid: str) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return False


async def test_a_launcher_is_ended_with_the_agent_it_started(tmp_path: Path) -> None:
    """An agent started by a launcher that waits for it (npm's shims do): a kill ends both,
    so no check waits on the pipes the agent still holds, and no agent is left running."""
    pid_file = tmp_path / "agent.pid"
    agent = (
        "import subprocess, sys; child = subprocess.Popen(sys.argv[2:]); "
        "open(sys.argv[1], 'w').write(str(child.pid)); child.wait()"
    )
    launcher = (sys.executable, "-c", agent, str(pid_file), *broken("stays_after_eof"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = await asyncio.wait_for(
        run_check(GROUPS["robustness"][1], Target(launcher, env, tmp_path, wait_s=1.0)), 20
    )
    assert result.outcome is Outcome.FAIL and result.reason.startswith("still running 1 s")
    for _ in range(50):  # the orphan is reaped by init a moment after the kill
        if not _running(pid_file.read_text()):
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the agent the launcher started still runs")


def test_a_rule_of_acp_fsm_alone_warns_with_its_evidence_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, table = tmp_path / "report.json", tmp_path / "report.md"
    status = main(
        [
            *("--only", "handshake", "--env", f"PYTHONPATH={ROOT}"),
            *("--json", str(report), "--markdown", str(table)),
            *("--", *broken("serves_before_initialize")),
        ]
    )
    assert status == 0
    printed = capsys.readouterr().out
    assert "WARN handshake.before_initialize: session/new before initialize was served" in printed
    assert "3 checks: 2 pass, 1 warn" in printed
    (warned,) = [c for c in json.loads(report.read_text())["checks"] if c["outcome"] == "warn"]
    assert warned["rule"]["required"] is False and warned["evidence"]
    markdown = table.read_text(encoding="utf-8")
    assert "| handshake | `before_initialize` | ⚠️ warn |" in markdown
    assert "<details><summary>handshake.before_initialize: evidence</summary>" in markdown
