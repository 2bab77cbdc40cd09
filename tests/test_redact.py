"""`acp_fsm.redact`: secrets scrubbed from encoded lines and text, and kept out of the
environment of the commands the agent starts."""

from __future__ import annotations

import json

import orjson
import pytest

from acp_fsm import env_vars
from acp_fsm.redact import REDACTED, Secrets, command_environment

KEY = "sk-test-0123456789abcdef"


def test_a_secret_is_scrubbed_raw_and_as_json_escapes_it() -> None:
    odd = 'p@ss"wörd\\x9'  # a quote, a backslash and non-ASCII: escaped differently by encoders
    secrets = Secrets([KEY, odd])
    for encoded in (
        json.dumps({"a": f"{KEY} {odd}"}).encode(),
        orjson.dumps({"a": f"{KEY} {odd}"}),
    ):
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
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ACP_FSM_MODEL",
        "ACP_PERMISSION_TIMEOUT_MS",
        "HOLDS_THE_KEY",
    ):
        assert name not in env
    assert env["GITHUB_TOKEN"] == "ghp_kept-for-gh-0000"  # a command may need it
    assert "ghp_kept-for-gh-0000" in env_vars.secret_values()  # and its output is scrubbed


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
    # a character or three that happen to match a key's ends are ordinary output
    assert secrets.trim("sk-", end=True) == "sk-" and secrets.trim("def", start=True) == "def"


OTHER = "another-secret-value"


@pytest.mark.parametrize(
    ("original", "written", "expected"),
    [
        # a kept line is the original line, whatever it holds
        (f"K={KEY}\nX=1\n", f"K={REDACTED}\nX=2\n", f"K={KEY}\nX=2\n"),
        # a changed line gets back what each of its placeholders stood for, in order
        (
            f"A={KEY} B={OTHER}\n",
            f"A={REDACTED} B={REDACTED}  # both\n",
            f"A={KEY} B={OTHER}  # both\n",
        ),
        # a literal [redacted] in the file stays literal; a new placeholder gets no key
        (
            f"K={KEY}\n# logs show {REDACTED}\n",
            f"K={REDACTED}\n# logs show {REDACTED}!\n",
            f"K={KEY}\n# logs show {REDACTED}!\n",
        ),
        (
            f"K={KEY}\n",
            f"K={REDACTED}\n# example: DSN={REDACTED}\n",
            f"K={KEY}\n# example: DSN={REDACTED}\n",
        ),
        ("no secret at all\n", f"K={REDACTED}\n", f"K={REDACTED}\n"),
    ],
    ids=["kept line", "changed line", "literal placeholder", "new placeholder", "no secret"],
)
def test_a_key_is_put_back_only_where_the_model_kept_it(
    original: str, written: str, expected: str
) -> None:
    assert Secrets([KEY, OTHER]).restore(written, original) == expected
