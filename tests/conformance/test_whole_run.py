"""Every message the agent wrote during the whole test run, against both schemas.

`tests/harness.py` records each message an `AgentProcess` reads from the agent (`RECORDED`),
and `tests/conftest.py` orders this module last, so it sees what every other suite made the
agent write. Run on its own nothing was recorded and it skips, saying so: the scripted session
of `test_session.py` is what checks the agent then.
"""

from __future__ import annotations

import pytest

from acp_fsm.schema_check import Checker, OfficialSchema, Record, check_records
from tests.harness import RECORDED


def test_every_recorded_message_conforms(official: OfficialSchema) -> None:
    if not RECORDED:
        pytest.skip("no test recorded agent messages in this run; run the whole suite "
                    "(tests/conftest.py orders this check last)")
    records = [Record(kind, method, message) for kind, method, _, message in RECORDED]
    report = check_records(Checker(official), records)
    print("\n" + report.table())
    assert report.ok, f"{len(report.failures)} failing messages:\n" + "\n".join(
        report.failures[:20])
