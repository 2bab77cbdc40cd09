"""load_config, ProviderConfig's repr, retry timing and the shared client session."""

from __future__ import annotations

import warnings

import aiohttp.connector
import pytest
from multidict import CIMultiDict

from acp_fsm.providers import http
from acp_fsm.providers.config import ConfigError, ProviderConfig, load_config
from acp_fsm.providers.http import MAX_RETRY_AFTER_S, RETRYABLE_STATUSES, retry_delay

SECRET = "sk-ant-api03-SECRET-do-not-print"


def test_defaults() -> None:
    assert load_config({}) == ProviderConfig(
        provider="openai",
        model="gpt-5",
        base_url="https://api.openai.com/v1",
        api_key=None,
        max_tokens=8192,
        max_retries=2,
        connect_timeout_s=10.0,
        read_timeout_s=180.0,
    )


def test_anthropic_is_inferred_from_its_key() -> None:
    config = load_config({"ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": "sk-openai"})
    assert (config.provider, config.model, config.base_url, config.api_key) == (
        "anthropic",
        "claude-sonnet-4-5",
        "https://api.anthropic.com",
        SECRET,
    )


def test_explicit_provider_model_url_and_limits() -> None:
    config = load_config(
        {
            "ACP_FSM_PROVIDER": " OpenAI ",
            "ACP_FSM_MODEL": " qwen3 ",
            "ANTHROPIC_API_KEY": SECRET,
            "OPENAI_BASE_URL": "http://localhost:11434/v1/",
            "OPENAI_API_KEY": "",
            "ACP_FSM_MAX_TOKENS": "4096",
            "ACP_FSM_MAX_RETRIES": "0",
            "ACP_FSM_CONNECT_TIMEOUT_MS": "2500",
            "ACP_FSM_READ_TIMEOUT_MS": "60000",
        }
    )
    assert config == ProviderConfig(
        provider="openai",
        model="qwen3",
        base_url="http://localhost:11434/v1",
        api_key=None,
        max_tokens=4096,
        max_tokens_set=True,
        max_retries=0,
        connect_timeout_s=2.5,
        read_timeout_s=60.0,
        model_set=True,
    )


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"ACP_FSM_PROVIDER": "gemini"}, "ACP_FSM_PROVIDER"),
        ({"OPENAI_BASE_URL": "localhost:8080"}, "OPENAI_BASE_URL"),
        ({"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "ftp://x"}, "ANTHROPIC_BASE_URL"),
        ({"ACP_FSM_MAX_TOKENS": "many"}, "ACP_FSM_MAX_TOKENS"),
        ({"ACP_FSM_MAX_TOKENS": "0"}, "ACP_FSM_MAX_TOKENS"),
        ({"ACP_FSM_MAX_RETRIES": "-1"}, "ACP_FSM_MAX_RETRIES"),
        ({"ACP_FSM_CONNECT_TIMEOUT_MS": "0"}, "ACP_FSM_CONNECT_TIMEOUT_MS"),
        ({"ACP_FSM_READ_TIMEOUT_MS": "soon"}, "ACP_FSM_READ_TIMEOUT_MS"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}="):
        load_config(env)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ACP_FSM_MAX_TOKENS", "nan"),
        ("ACP_FSM_MAX_RETRIES", "inf"),
        ("ACP_FSM_READ_TIMEOUT_MS", "nan"),
    ],
)
def test_non_finite_numbers_are_rejected(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}="):
        load_config({variable: value})


def test_repr_hides_the_key() -> None:
    config = load_config({"ANTHROPIC_API_KEY": SECRET})
    assert repr(config) == (
        "ProviderConfig(anthropic, model='claude-sonnet-4-5', "
        "base_url='https://api.anthropic.com', api_key=set)"
    )
    assert SECRET not in str(config)
    assert "api_key=unset" in repr(load_config({}))


# ---------------------------------------------------------------------------- retries

CONFIG = ProviderConfig(
    provider="openai", model="m", base_url="http://x", retry_base_s=0.5, retry_max_s=8.0
)


@pytest.mark.parametrize(("attempt", "full"), [(0, 0.5), (1, 1.0), (3, 4.0), (4, 8.0), (10, 8.0)])
def test_backoff_doubles_with_jitter_and_a_cap(attempt: int, full: float) -> None:
    delays = [retry_delay(attempt, CONFIG, None) for _ in range(200)]
    assert all(0.75 * full <= d <= full for d in delays)
    assert len(set(delays)) > 1  # jittered


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "2"}, 2.0),
        ({"Retry-After": "2", "Retry-After-Ms": "250"}, 0.25),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "3600"}, MAX_RETRY_AFTER_S),
    ],
)
def test_server_requested_delay(headers: dict[str, str], expected: float) -> None:
    assert retry_delay(0, CONFIG, CIMultiDict(headers)) == expected


@pytest.mark.parametrize(
    "headers",
    [
        {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"},
        {"retry-after": "-1"},
        {"retry-after-ms": "soon"},
        {"retry-after-ms": "nan"},
        {},
    ],
)
def test_unusable_retry_headers_fall_back_to_backoff(headers: dict[str, str]) -> None:
    assert 0.375 <= retry_delay(0, CONFIG, CIMultiDict(headers)) <= 0.5


def test_retryable_statuses() -> None:
    assert {408, 409, 429, *range(500, 600)} == RETRYABLE_STATUSES


# ------------------------------------------------------------------- the client session


async def test_client_session_is_shared_and_closable() -> None:
    session = http.client_session()
    assert http.client_session() is session
    await http.close_client_session()
    assert session.closed
    await http.close_client_session()  # idempotent


async def test_client_session_does_not_warn_on_fixed_pythons(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aiohttp.connector, "NEEDS_CLEANUP_CLOSED", False)  # as on 3.12.8+
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            http.client_session()
    finally:
        await http.close_client_session()


@pytest.mark.parametrize(
    ("model", "env", "api"),
    [
        ("gpt-5-codex", {}, "responses"),  # served on the Responses API only
        ("gpt-5.1-codex-max", {}, "responses"),
        ("codex-mini-latest", {}, "responses"),
        ("o3-pro", {}, "responses"),
        ("openai/gpt-5-pro", {}, "responses"),
        ("gpt-5", {}, "chat"),
        ("o3-mini", {}, "chat"),
        ("gpt-5-codex", {"ACP_FSM_OPENAI_API": "chat"}, "chat"),  # the user's choice wins
        ("gpt-5", {"ACP_FSM_PROVIDER": "openai-responses"}, "responses"),
        ("gpt-5", {"ACP_FSM_OPENAI_API": "responses"}, "responses"),
        ("gpt-5-codex", {"ACP_FSM_PROVIDER": "anthropic"}, "chat"),  # not OpenAI's API at all
        ("gpt-5-codex", {"OPENAI_BASE_URL": "https://openrouter.ai/api/v1"}, "chat"),  # a proxy's
    ],
)
def test_the_api_of_a_model(model: str, env: dict[str, str], api: str) -> None:
    from acp_fsm.providers.config import api_of

    config = load_config({"ACP_FSM_PROVIDER": "openai", **env})
    assert api_of(config, model) == api


def test_the_responses_provider_and_the_chat_api_conflict() -> None:
    env = {"ACP_FSM_PROVIDER": "openai-responses", "ACP_FSM_OPENAI_API": "chat"}
    with pytest.raises(ConfigError, match="set ACP_FSM_PROVIDER=openai to choose the API"):
        load_config(env)
