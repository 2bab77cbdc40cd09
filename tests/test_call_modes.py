"""A model's call mode (acp_fsm.call_modes): the providers' APIs are native, the setting wins,
else the first answer with a call decides, once, and the decision is kept in a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_fsm.call_modes import CallModes
from acp_fsm.providers.config import ProviderConfig
from acp_fsm.providers.text_call_args import CallFormat

LOCAL = ProviderConfig("openai", "gemma3", "http://127.0.0.1:8080/v1")
OFFICIAL = ProviderConfig("openai", "gpt-5", "https://api.openai.com/v1")


@pytest.fixture(autouse=True)
def _no_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACP_FSM_TOOL_CALLS", raising=False)


def test_the_provider_s_own_api_is_native_whatever_it_writes(tmp_path: Path) -> None:
    modes = CallModes(tmp_path / "modes.json")
    assert modes.mode(OFFICIAL, "gpt-5")[:2] == ("native", None)
    assert modes.observe(OFFICIAL, "gpt-5", False, [CallFormat.HERMES]) is None


def test_the_first_answer_with_a_call_decides_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "modes.json"
    modes = CallModes(path)
    assert modes.mode(LOCAL, "gemma3").kind == "auto"
    assert modes.observe(LOCAL, "gemma3", False, []) is None  # no call: nothing to learn
    assert modes.observe(LOCAL, "gemma3", False, [CallFormat.FENCED_JSON]) == "text"
    assert modes.observe(LOCAL, "gemma3", True, []) is None  # decided already
    modes.save()

    again = CallModes(path).mode(LOCAL, "gemma3")
    assert again == ("text", "json", "answers")  # no family known: the syntax it wrote
    assert CallModes(path).mode(LOCAL, "other").kind == "auto"  # per model
    assert json.loads(path.read_text()) == {
        "openai http://127.0.0.1:8080/v1": {"gemma3": {"mode": "text", "syntax": "json"}}
    }


def test_a_known_family_is_taught_its_own_syntax(tmp_path: Path) -> None:
    modes = CallModes(tmp_path / "modes.json")
    modes.observe(LOCAL, "Qwen2.5-Coder-0.5B", False, [CallFormat.BARE_JSON])
    assert modes.mode(LOCAL, "Qwen2.5-Coder-0.5B")[:2] == ("text", "hermes")


def test_the_setting_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modes = CallModes(tmp_path / "modes.json")
    modes.observe(LOCAL, "gemma3", True, [])
    monkeypatch.setenv("ACP_FSM_TOOL_CALLS", "text")
    assert modes.mode(LOCAL, "gemma3") == ("text", "hermes", "setting")
    monkeypatch.setenv("ACP_FSM_TOOL_CALLS", "native")
    native = modes.mode(LOCAL, "gemma3")
    assert native.kind == "native" and not native.reads_text


def test_a_native_decision_still_reads_written_calls(tmp_path: Path) -> None:
    modes = CallModes(tmp_path / "modes.json")
    modes.observe(LOCAL, "gemma3", True, [])
    assert modes.mode(LOCAL, "gemma3").reads_text


def test_an_unreadable_file_is_decided_again(tmp_path: Path) -> None:
    path = tmp_path / "modes.json"
    path.write_text('{"openai http://127.0.0.1:8080/v1": {"gemma3": {"mode": "sideways"}}}')
    assert CallModes(path).mode(LOCAL, "gemma3").kind == "auto"
    path.write_text("not json")
    assert CallModes(path).mode(LOCAL, "gemma3").kind == "auto"
