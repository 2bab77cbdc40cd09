"""`acp-fsm demo` runs offline and prints a readable session (both wire formats)."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness import agent_command, agent_env


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_demo_runs_offline_and_exits_zero(provider: str) -> None:
    env = agent_env(OPENAI_API_KEY=None, ANTHROPIC_API_KEY=None, ACP_FSM_PROVIDER=None)
    done = subprocess.run([*agent_command(), "demo", "--provider", provider], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "\033[" not in out  # not a terminal: no colour codes
    for needle in (
        "you: total() in app.py returns the wrong sum",
        "(thinking) The user reports an off-by-one",
        "Read app.py",
        "permission asked for Edit app.py",
        "-     for i in range(len(prices) - 1):",
        "+     for i in range(len(prices)):",
        "turn states: idle → streaming → running_tools → streaming → awaiting_permission → "
        "running_tools → streaming → done",
        "stop: cancelled   turn states: idle → streaming → draining → cancelled",
        "replayed: 2 user_message_chunk",
        "You're welcome!",
        "app.py is fixed on disk.",
    ):
        assert needle in out, needle
