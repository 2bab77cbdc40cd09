"""Deliberately broken ACP agents: `base` follows every rule `acp-fsm conformance` checks, each
other module breaks exactly one (the check that must catch it is in `tests/conformance/
test_broken_agents.py`). Standard library only; run as `python -m tests.conformance.broken.NAME`."""
