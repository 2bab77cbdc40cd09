"""The relay benchmark (bench/relay.py) as a behaviour check: on each wire, in each mode,
acp-fsm and the bare relay both relay every delta of the stream as a message chunk."""

from __future__ import annotations

from bench import relay


async def test_both_agents_relay_every_delta_on_every_wire() -> None:
    samples = await relay.measure(40, 1, None, relay.WIRES)  # each run checks the count
    assert set(samples) == {
        (wire.name, mode.name, agent)
        for wire in relay.WIRES
        for mode in relay.MODES
        for agent in ("acp-fsm", relay.CEILING)
    }
    rows = relay.rows(samples)
    assert [row.split()[0] for row in rows] == ["chat"] * 6 + ["responses"] * 6
