"""The model endpoint the editor sets (ACP's `providers/list`, `providers/set`,
`providers/disable`: unstable, `agentCapabilities.providers`; rfds/custom-llm-endpoint).

acp-fsm has one provider, `main`: the endpoint every model call goes to. It is `required` (the
agent does nothing without a model), so `providers/disable` of it is refused; an unknown id is
disabled already (idempotent). Its `current` is the endpoint in force: the editor's when it set
one, else the environment's (with what `acp-fsm login` stored). `_meta.acpFsm.source` says
which, and `model` the model a session that chose none uses.

`providers/set main` takes, for this process only (never stored, as the RFD asks):

- `apiType`: `anthropic` (the Messages API), `openai` (Chat Completions: OpenAI's or any
  compatible server's) or `_openai_responses` (OpenAI's Responses API; a custom protocol
  name, as the RFD lets agents make);
- `baseUrl`: where, as the environment's `OPENAI_BASE_URL` (with `/v1`) or
  `ANTHROPIC_BASE_URL` (without) would say it;
- `headers`: sent with every model call and model listing to it (an `authorization` or
  `x-api-key` among them replaces the key). None is ever logged, stored or listed; the
  values of those that carry credentials (`authorization`, a name with `key`, `token`,
  `secret`, `auth`, ...) are also scrubbed wherever they could appear, as keys are.

The environment's key goes with the editor's endpoint only when it is the environment's own
(same wire, same URL): a key is never sent where it was not meant to go. The limits and
timeouts stay the environment's. It is in force from the next model call of every session (a
running turn reads the configuration again before its next call), and each open session's
model picker is refreshed from the new endpoint's list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from acp_fsm import limits, redact
from acp_fsm.errors import BadRequest
from acp_fsm.providers.config import (
    ANTHROPIC,
    API_VARIABLE,
    CHAT,
    KEY_VARIABLES,
    OPENAI,
    RESPONSES,
    URL_VARIABLES,
    ProviderConfig,
)

if TYPE_CHECKING:
    from acp_fsm.schemas import acp_types as acp

MAIN = "main"
# apiType -> (provider, OpenAI's API)
PROTOCOLS: dict[str, tuple[str, str]] = {
    "anthropic": (ANTHROPIC, CHAT),
    "openai": (OPENAI, CHAT),
    "_openai_responses": (OPENAI, RESPONSES),
}
MAX_HEADERS = 64


class Endpoint(NamedTuple):
    """What the editor set: the wire, where, and the headers (secrets)."""

    api_type: str
    base_url: str
    headers: tuple[tuple[str, str], ...]


class EditorEndpoint:
    """The endpoint the editor set for this process (None: the environment's)."""

    def __init__(self) -> None:
        self.endpoint: Endpoint | None = None
        self.version = 0  # one more at each change: a turn that read an older one reads again

    def __repr__(self) -> str:
        where = self.endpoint.base_url if self.endpoint else "the environment's"
        return f"<EditorEndpoint {where}>"

    def set(self, params: Mapping[str, Any]) -> None:
        """`providers/set`: checked whole before anything changes."""
        provider_id = params.get("providerId")
        if provider_id != MAIN:
            raise BadRequest(
                "providerId", f"unknown provider {limits.echo(provider_id)}; this agent has {MAIN}"
            )
        api_type = params.get("apiType")
        if api_type not in PROTOCOLS:
            raise BadRequest(
                "apiType",
                f"{limits.echo(api_type)} is not a wire this agent speaks; expected one of "
                f"{', '.join(PROTOCOLS)}",
            )
        base_url = _url(params.get("baseUrl"))
        headers = _headers(params.get("headers") or {})
        for name, value in headers:
            if _credential(name):  # before anything can log or store it
                for secret in (value, value.partition(" ")[2]):  # "Bearer <token>" too
                    if secret:
                        redact.also_secret(secret)
        self.endpoint = Endpoint(str(api_type), base_url, headers)
        self.version += 1

    def disable(self, params: Mapping[str, Any]) -> None:
        """`providers/disable`: `main` is required; any other id is disabled already."""
        if params.get("providerId") == MAIN:
            raise BadRequest(
                "providerId",
                f"{MAIN} is required: every model call goes to it (set another endpoint with "
                "providers/set instead)",
            )

    def environ(self, env: Mapping[str, str]) -> Mapping[str, str]:
        """The environment (with the stored login filled in) as the editor's endpoint makes
        it, for `providers.config.load_config`."""
        endpoint = self.endpoint
        if endpoint is None:
            return env
        provider, api = PROTOCOLS[endpoint.api_type]
        was = load_quietly(env)
        same = was is not None and (was.provider, was.api, was.base_url) == (
            provider,
            api,
            endpoint.base_url,
        )
        changed = dict(env)
        changed["ACP_FSM_PROVIDER"] = provider
        changed[API_VARIABLE] = api if provider == OPENAI else ""
        changed[URL_VARIABLES[provider]] = endpoint.base_url
        if not same:  # the key goes only where it was meant to go
            for variable in KEY_VARIABLES.values():
                changed.pop(variable, None)
            if was is None or was.provider != provider:
                changed.pop("ACP_FSM_MODEL", None)  # a model of another provider
        return changed

    def applied(self, config: ProviderConfig) -> ProviderConfig:
        """`config` with the editor's headers."""
        endpoint = self.endpoint
        return config if endpoint is None else config._replace(headers=endpoint.headers)

    def listed(self, config: ProviderConfig | None) -> acp.ListProvidersResponse:
        """`providers/list`: `main`, without a secret."""
        info: acp.ProviderInfo = {
            "providerId": MAIN,
            "supported": list(PROTOCOLS),
            "required": True,
            "current": None,
        }
        if config is not None:
            info["current"] = {"apiType": api_type(config), "baseUrl": config.base_url}
            source = "editor" if self.endpoint is not None else "environment"
            info["_meta"] = {"acpFsm": {"source": source, "model": config.model}}
        return {"providers": [info]}


def api_type(config: ProviderConfig) -> str:
    """The `apiType` of a configuration."""
    if config.provider == ANTHROPIC:
        return "anthropic"
    return "_openai_responses" if config.api == RESPONSES else "openai"


def load_quietly(env: Mapping[str, str]) -> ProviderConfig | None:
    from acp_fsm.providers.config import ConfigError, load_config

    try:
        return load_config(env)
    except ConfigError:
        return None


def _url(value: object) -> str:
    """The `baseUrl` of `providers/set`: http(s), without credentials (they would be listed
    and logged with it: they go in a header)."""
    from urllib.parse import urlsplit

    url = str(value or "").rstrip("/")
    if not url.startswith(("http://", "https://")) or len(url) > 2048:
        raise BadRequest("baseUrl", f"{limits.echo(url)} is not an http(s) URL")
    try:
        split = urlsplit(url)
    except ValueError:
        raise BadRequest("baseUrl", f"{limits.echo(url)} is not a URL") from None
    if split.username is not None or split.password is not None:
        raise BadRequest(
            "baseUrl",
            "credentials in the URL would be listed and logged with it; send them in a "
            "header (authorization)",
        )
    return url


# Headers whose values are credentials: scrubbed wherever they could appear. The others (a
# route, a tenant) are sent and never logged, stored or listed, but not scrubbed from what the
# user and the model say.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
CREDENTIAL_WORDS = ("key", "token", "secret", "auth", "password", "session")


def _credential(name: str) -> bool:
    return name in CREDENTIAL_HEADERS or any(word in name for word in CREDENTIAL_WORDS)


def _headers(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or len(value) > MAX_HEADERS:
        raise BadRequest("headers", f"expected an object of at most {MAX_HEADERS} strings")
    headers: list[tuple[str, str]] = []
    for name, header in value.items():
        if not isinstance(header, str) or not name or not _token(name):
            raise BadRequest(f"headers.{limits.echo(name)}", "expected a header name and a string")
        if any(c in header for c in "\r\n\0"):
            raise BadRequest(f"headers.{limits.echo(name)}", "a value cannot hold a line break")
        headers.append((name.lower(), header))
    return tuple(headers)


def _token(name: str) -> bool:
    """Whether `name` is an HTTP header name (RFC 9110 token)."""
    return all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in name) and name.isascii()


EDITOR = EditorEndpoint()  # the process's
