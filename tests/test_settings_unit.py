"""The pure side of the pickers: the model list's override, fallback and cache file, which
models reason, and how stored choices fold into a session's settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from acp_fsm import config_options, model_catalog
from acp_fsm.config_options import Settings
from acp_fsm.providers.config import load_config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ACP_FSM_HOME", str(tmp_path))
    monkeypatch.delenv("ACP_FSM_MODELS", raising=False)
    return tmp_path


def test_the_override_is_a_clean_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_FSM_MODELS", " a , b,,a, c ,")
    assert model_catalog.override() == ["a", "b", "c"]
    monkeypatch.setenv("ACP_FSM_MODELS", " , ")
    assert model_catalog.override() is None


def test_the_fallback_lists_built_ins_only_for_the_providers_own_api(home: Path) -> None:
    official = load_config({"ACP_FSM_PROVIDER": "anthropic", "ACP_FSM_MODEL": "claude-x"})
    local = load_config(
        {
            "ACP_FSM_PROVIDER": "openai",
            "ACP_FSM_MODEL": "llama3",
            "OPENAI_BASE_URL": "http://localhost:11434/v1",
        }
    )
    assert model_catalog.fallback(official) == ["claude-x", *model_catalog.BUILT_IN["anthropic"]]
    assert model_catalog.Catalog().models(local) == ["llama3"]


@pytest.mark.parametrize(
    ("env", "awaits"),
    [
        ({"OPENAI_BASE_URL": "http://localhost:1/v1"}, True),  # nothing known of its models
        ({"ACP_FSM_PROVIDER": "anthropic", "ANTHROPIC_BASE_URL": "http://localhost:1"}, True),
        ({"OPENAI_BASE_URL": "http://localhost:1/v1", "ACP_FSM_MODEL": "m"}, False),
        ({"OPENAI_BASE_URL": "http://localhost:1/v1", "ACP_FSM_MODELS": "m,n"}, False),
        ({"OPENAI_BASE_URL": "http://localhost:2/v1"}, False),  # a list kept (models.json)
        ({"ACP_FSM_PROVIDER": "openai"}, False),  # OpenAI's own API: answered at once
        ({"ACP_FSM_PROVIDER": "anthropic"}, False),
    ],
)
def test_a_session_awaits_only_a_compatible_server_s_unknown_list(
    home: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], awaits: bool
) -> None:
    (home / model_catalog.CACHE_FILE).write_text(
        json.dumps({"openai http://localhost:2/v1": {"fetchedAt": 1, "models": ["m"]}})
    )
    if "ACP_FSM_MODELS" in env:
        monkeypatch.setenv("ACP_FSM_MODELS", env["ACP_FSM_MODELS"])
    assert model_catalog.Catalog().awaits_listing(load_config(env)) is awaits


@pytest.mark.parametrize(
    "cached",
    [
        {"openai http://localhost:1/v1": {"fetchedAt": 1, "models": "abc"}},
        {"openai http://localhost:1/v1": {"fetchedAt": "x", "models": ["a"]}},
        {"openai http://localhost:1/v1": {"models": ["a"]}},
        {"openai http://localhost:1/v1": {"fetchedAt": 1, "models": []}},
        ["not", "an", "object"],
    ],
)
def test_a_cache_file_that_cannot_be_used_is_ignored(home: Path, cached: object) -> None:
    (home / model_catalog.CACHE_FILE).write_text(json.dumps(cached))
    config = load_config(
        {
            "ACP_FSM_PROVIDER": "openai",
            "ACP_FSM_MODEL": "m",
            "OPENAI_BASE_URL": "http://localhost:1/v1",
        }
    )
    assert model_catalog.Catalog().models(config) == ["m"]


def test_a_usable_cache_file_is_the_list(home: Path) -> None:
    key = "openai http://localhost:1/v1"
    (home / model_catalog.CACHE_FILE).write_text(
        json.dumps({key: {"fetchedAt": 1, "models": ["m", "n"]}})
    )
    config = load_config(
        {
            "ACP_FSM_PROVIDER": "openai",
            "ACP_FSM_MODEL": "m",
            "OPENAI_BASE_URL": "http://localhost:1/v1",
        }
    )
    assert model_catalog.Catalog().models(config) == ["m", "n"]


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("anthropic", "claude-sonnet-4-5", True),
        ("anthropic", "claude-3-7-sonnet-latest", True),
        ("anthropic", "claude-opus-4-1", True),
        ("anthropic", "claude-3-5-haiku-latest", False),
        ("openai", "o3-mini", True),
        ("openai", "gpt-5-mini", True),
        ("openai", "o1-mini", False),
        ("openai", "o1-preview", False),
        ("openai", "gpt-5-chat-latest", False),
        ("openai", "gpt-4o", False),
        ("openai", "codex-mini-latest", True),
        ("openai", "gpt-5.1-codex-max", True),
        ("openai", "gpt-5-pro", False),  # high only
        ("other", "o3", False),
    ],
)
def test_which_models_take_a_thought_level(provider: str, model: str, expected: bool) -> None:
    assert config_options.thinks(provider, model) is expected


def test_stored_choices_fold_in_order_and_unknown_values_are_left_out() -> None:
    bodies: list[dict[str, Any]] = [
        {"model": "m-two"},
        {"mode": "plan"},
        {"mode": "yolo"},
        {"thoughtLevel": "high"},
        {"model": ""},
        {"mode": 3},
        {"model": "m-three", "mode": "full_access"},
    ]
    assert Settings.folded(bodies) == Settings("m-three", "full_access", "high")
    assert Settings.folded([]) == Settings()


def test_the_picker_marks_the_models_whose_calls_go_elsewhere() -> None:
    options = config_options.config_options(
        config_options.Settings(), "openai", "gpt-5", ["gpt-5", "gpt-5-codex"], {"gpt-5-codex"}
    )
    [model] = [o for o in options if o["id"] == "model"]
    assert model["type"] == "select"
    offered = cast(list[dict[str, Any]], model["options"])  # no groups
    about = {o["value"]: o.get("description") for o in offered}
    assert about == {"gpt-5": None, "gpt-5-codex": "Responses API only"}
