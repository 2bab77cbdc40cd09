"""Every agent a test starts is checked, when it is closed, against the official schema
(`tests.conftest.assert_clean`): here that check itself, on a message ACP does not allow."""

from __future__ import annotations

from typing import Any

import pytest

from acp_fsm.devkit.editor import Record
from acp_fsm.devkit.schema_check import OfficialSchema
from tests.conftest import assert_clean


class Recorded:
    """What `assert_clean` reads of an agent process."""

    def __init__(self, records: list[Record]) -> None:
        self.bad_lines: list[bytes] = []
        self.records = records
        self.view = None  # spoken to in v1's words, as written

    def log_events(self) -> list[dict[str, Any]]:
        return []


def update(content: Any) -> Record:
    params = {
        "sessionId": "s",
        "update": {"sessionUpdate": "agent_message_chunk", "content": content},
    }
    return Record(
        "notification",
        "session/update",
        {"jsonrpc": "2.0", "method": "session/update", "params": params},
    )


def test_an_invalid_message_fails_the_agents_test(official: OfficialSchema) -> None:
    assert_clean(Recorded([update({"type": "text", "text": "fine"})]))  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="fail the official schema"):
        assert_clean(Recorded([update({"type": "text", "text": 5})]))  # type: ignore[arg-type]
