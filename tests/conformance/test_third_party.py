"""An agent nobody here wrote, through the whole suite: the example agent of the official
Python SDK (`agent-client-protocol`, the version the test extra installs), taken from its
source distribution on PyPI. It does not call a model, so the checks that need one are not
applicable, saying so; what it does get wrong is caught with evidence."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest

from acp_fsm.devkit.conformance import main, selected
from acp_fsm.devkit.schema_check import SCHEMA_ENV
from tests.conformance.conftest import OFFICIAL_PATH

pytestmark = pytest.mark.slow  # the whole suite, against an agent that imports pydantic

SDK = "agent-client-protocol"


@pytest.fixture(scope="module")
def example_agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`examples/agent.py` of the installed SDK's sdist, downloaded from the package index."""
    where = tmp_path_factory.mktemp("sdk")
    release = f"{SDK}=={version(SDK)}"
    fetched = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
            *("--no-binary", ":all:", "--dest", str(where), release),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if fetched.returncode != 0:
        pytest.skip(f"could not download the sdist of {release}: {fetched.stderr.strip()[-300:]}")
    (sdist,) = where.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/examples/agent.py"))
        archive.extract(member, where, filter="data")
    return where / member.name


def test_the_sdk_example_agent_runs_through_the_suite(
    example_agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if OFFICIAL_PATH is None:
        pytest.skip("no official schema")
    monkeypatch.setenv(SCHEMA_ENV, str(OFFICIAL_PATH))
    report = tmp_path / "report.json"
    status = main(["--json", str(report), "--", sys.executable, str(example_agent)])
    document = json.loads(report.read_text(encoding="utf-8"))
    outcomes = {c["id"]: c["outcome"] for c in document["checks"]}
    assert status == 1 and document["ok"] is False  # it breaks rules: the exit says so
    assert document["agentInfo"]["name"] == "example-agent"
    assert set(outcomes) == {check.id for check in selected(None)}
    assert all(c["reason"] for c in document["checks"])
    passed = ("transport.framing", "transport.stdout_only", "transport.id_echo", "sessions.new")
    assert {i: outcomes[i] for i in passed} == dict.fromkeys(passed, "pass")
    # What the SDK's example gets wrong: it answers a made-up extension method and leaves a
    # malformed line unanswered; beyond ACP, it serves before initialize and a second one.
    wrong = ("transport.unknown_method", "robustness.parse_error")
    assert {i: outcomes[i] for i in wrong} == dict.fromkeys(wrong, "fail")
    warned = ("handshake.before_initialize", "handshake.second_initialize")
    assert {i: outcomes[i] for i in warned} == dict.fromkeys(warned, "warn")
    failed = next(c for c in document["checks"] if c["id"] == "robustness.parse_error")
    assert any(line.startswith("> ") for line in failed["evidence"]), failed
    # No model behind it: no reply of the model to stream or cancel, no tool call it makes.
    reasons = {c["id"]: c["reason"] for c in document["checks"]}
    needs_model = [
        i for i in outcomes if i.startswith(("sessions.prompt_", "cancel.", "delegation."))
    ]
    for check_id in needs_model:
        assert outcomes[check_id] == "n/a", reasons[check_id]
        assert reasons[check_id].startswith("the agent did not call the model it was pointed at")
    advertised = [i for i in outcomes if i.startswith("advertised.")]
    assert {outcomes[i] for i in advertised} == {"n/a"}
