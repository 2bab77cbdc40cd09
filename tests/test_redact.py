"""`acp_fsm.redact`: secrets scrubbed from encoded lines and text, and kept out of the
environment of the commands the agent starts."""

from __future__ import annotations

import json

import orjson
import pytest

from acp_fsm import config
from acp_fsm.redact import REDACTED, Secrets, command_environment

KEY = "sk-test-0123456789abcdef"


def test_a_secret_is_scrubbed_raw_and_as_json_escapes_it() -> None:
    odd = 'p@ss"wörd\\x9'  # a quote, a backslash and non-ASCII: escaped differently by encoders
    secrets = Secrets([KEY, odd])
    for encoded in (json.dumps({"a": f"{KEY} {odd}"}).encode(),
                    orjson.dumps({"a": f"{KEY} {odd}"})):
        scrubbed = secrets.scrub(encoded)
        assert json.loads(scrubbed) == {"a": f"{REDACTED} {REDACTED}"}
    assert secrets.scrub_text(f"x{KEY}y") == f"x{REDACTED}y"


def test_a_secret_containing_another_is_replaced_whole() -> None:
    secrets = Secrets([KEY, KEY + "-long-suffix"])
    assert secrets.scrub(f'"{KEY}-long-suffix"'.encode()) == f'"{REDACTED}"'.encode()


def test_nothing_to_scrub_returns_the_line_itself() -> None:
    line = b'{"a":"nothing secret"}'
    assert Secrets([KEY]).scrub(line) is line
    assert not Secrets([]) and Secrets([]).scrub(line) is line


def test_commands_get_neither_keys_nor_our_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy")
    monkeypatch.setenv("ACP_FSM_MODEL", "m")
    monkeypatch.setenv("ACP_PERMISSION_TIMEOUT_MS", "0")
    monkeypatch.setenv("HOLDS_THE_KEY", f"Bearer {KEY}")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_kept-for-gh-0000")
    env = command_environment()
    for name in ("OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ACP_FSM_MODEL",
                 "ACP_PERMISSION_TIMEOUT_MS", "HOLDS_THE_KEY"):
        assert name not in env
    assert env["GITHUB_TOKEN"] == "ghp_kept-for-gh-0000"  # a command may need it
    assert "ghp_kept-for-gh-0000" in config.secret_values()  # and its output is scrubbed


def test_a_dummy_key_strips_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local servers take keys like "x": too short to be a secret, and to look for."""
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("HOLDS_AN_X", "xyz")
    env = command_environment()
    assert "OPENAI_API_KEY" not in env and env["HOLDS_AN_X"] == "xyz" and "PATH" in env


def test_a_cut_leaves_no_piece_of_a_secret() -> None:
    secrets = Secrets([KEY])
    head = "output before " + KEY[:9]
    tail = KEY[-7:] + " output after"
    assert secrets.trim(head, end=True) == "output before "
    assert secrets.trim(tail, start=True) == " output after"
    assert secrets.trim("no key here", start=True, end=True) == "no key here"


def test_a_written_redaction_is_restored_from_the_original() -> None:
    secrets = Secrets([KEY, "another-secret-value"])
    assert secrets.restore(f"K={REDACTED}\n", f"K={KEY}\nX=1\n") == f"K={KEY}\n"
    assert secrets.restore("plain", f"K={KEY}") == "plain"
    assert secrets.restore(f"K={REDACTED}", "no secret at all") == f"K={REDACTED}"
    with pytest.raises(ValueError, match="2 different secrets"):
        secrets.restore(REDACTED, f"{KEY} another-secret-value")
