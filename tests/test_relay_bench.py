"""The relay benchmark (bench/relay.py) as a behaviour check: on each wire, in each mode,
acp-fsm and the bare relay both relay every delta of the stream as a message chunk; the
folders it makes for the agents are gone when it returns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import relay

pytestmark = pytest.mark.slow  # both agents, every wire and mode


async def test_both_agents_relay_every_delta_on_every_wire(tmp_path: Path) -> None:
    # each run checks the count
    samples = await relay.measure(40, 1, None, relay.WIRES, scratch=str(tmp_path))
    assert set(samples) == {
        (wire.name, mode.name, agent)
        for wire in relay.WIRES
        for mode in relay.MODES
        for agent in ("acp-fsm", relay.CEILING)
    }
    rows = relay.rows(samples)
    assert [row.split()[0] for row in rows] == ["chat"] * 6 + ["responses"] * 6
    assert os.listdir(tmp_path) == []
