"""What a session costs, through the real agent: every `usage_update` carries the session's
cost so far when each of its model calls has a known price (genai-prices' table, or
`ACP_FSM_PRICES`), priced per call at its own model's prices, input, output and cached tokens
apart, as each provider counts them; the subagents' and the compactions' calls count; an
unknown price, or a prices file that cannot be used, means no cost at all; a load in a new
process goes on from the stored calls' cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from genai_prices import Usage as Counts
from genai_prices import calc_price

from acp_fsm.devkit.provider import Reply, ScriptedProvider
from acp_fsm.devkit.provider.script import DEFAULT_USAGE
from acp_fsm.providers.types import Usage
from tests.e2e.support import Agent, Launcher, TurnResult, of_kind, stored
from tests.e2e.test_compaction import SUMMARY, is_summary_call
from tests.e2e.test_subagents import delegating, is_subagent
from tests.harness import TITLE_MODEL

# A call's tokens as the scripted provider streams them: `input_tokens` are the uncached
# prompt tokens (OpenAI's prompt_tokens adds the cache reads; it has no cache writes).
CACHED = Usage(input_tokens=1000, output_tokens=200, cache_read_tokens=3000, cache_write_tokens=500)
# Prices per million tokens that tell each kind of token apart.
HOUSE = {"input": 2, "output": 10, "cache_read": 0.5, "cache_write": 3}
LISTED = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


class Priced(TypedDict):
    """A model and its prices file (`Launcher.start`'s overrides)."""

    ACP_FSM_MODEL: str
    ACP_FSM_PRICES: str


def counted(provider: str, usage: Usage) -> Usage:
    """The same call's tokens as the agent counts them: every prompt token as input."""
    write = usage.cache_write_tokens if provider == "anthropic" else 0
    return Usage(
        usage.input_tokens + usage.cache_read_tokens + write,
        usage.output_tokens,
        usage.cache_read_tokens,
        write,
    )


def listed(model: str, usage: Usage) -> float:
    """genai-prices' price of one call."""
    counts = Counts(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    return float(calc_price(counts, model).total_price)


# The title call of every session (tests.harness.title_lane) is free: the amounts here are
# the turns' own.
FREE_TITLES = {TITLE_MODEL: {"input": 0, "output": 0}}


@pytest.fixture
def launch(launch: Launcher, tmp_path: Path) -> Launcher:
    launch.defaults["ACP_FSM_PRICES"] = prices(tmp_path, {}, "titles-free.json")
    return launch


def prices(tmp_path: Path, table: Any, name: str = "prices.json") -> str:
    """A prices file of `table` (the free title model added to an object's entries)."""
    path = tmp_path / name
    if isinstance(table, dict):
        table = {**FREE_TITLES, **table}
    path.write_text(table if isinstance(table, str) else json.dumps(table))
    return str(path)


def costs(agent: Agent, session: str) -> list[dict[str, Any] | None]:
    """The `cost` of each usage_update of `session` (None where there is none)."""
    return [u.get("cost") for u in of_kind(agent.updates(session, metadata=True), "usage_update")]


def session_cost(turn: TurnResult) -> dict[str, Any] | None:
    cost: dict[str, Any] | None = turn.response["result"]["_meta"]["acpFsm"].get("sessionCost")
    return cost


def usd(amount: float) -> dict[str, Any]:
    return {"amount": round(amount, 6), "currency": "USD"}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_the_cost_so_far_is_in_every_usage_update_at_genai_prices(
    launch: Launcher, server: ScriptedProvider, project: Path, provider: str
) -> None:
    model = LISTED[provider]
    agent = await launch.start(provider, ACP_FSM_MODEL=model)
    session = await agent.new_session(project)
    server.script(Reply(text="one", usage=CACHED), Reply(text="two", usage=DEFAULT_USAGE))

    first = await agent.prompt(session, "first")
    second = await agent.prompt(session, "second")

    one = listed(model, counted(provider, CACHED))
    both = one + listed(model, counted(provider, DEFAULT_USAGE))
    assert 0 < one < both
    assert costs(agent, session) == [usd(one), usd(both)]
    assert session_cost(first) == usd(one) and session_cost(second) == usd(both)
    # every message validates against ACP's schema (checked when the launcher closes it)


@pytest.mark.parametrize(
    ("provider", "amount"),
    [
        # OpenAI: 4000 prompt tokens of which 3000 cached, no cache writes
        ("openai", (1000 * 2 + 3000 * 0.5 + 200 * 10) / 1e6),
        # Anthropic: 1000 input tokens beside 3000 read from the cache and 500 written
        ("anthropic", (1000 * 2 + 3000 * 0.5 + 500 * 3 + 200 * 10) / 1e6),
    ],
)
async def test_a_model_the_prices_file_adds_is_priced_by_kind_of_token(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    tmp_path: Path,
    provider: str,
    amount: float,
) -> None:
    agent = await launch.start(
        provider,
        ACP_FSM_MODEL="house-model",
        ACP_FSM_PRICES=prices(tmp_path, {"house-model": HOUSE}),
    )
    session = await agent.new_session(project)
    server.script(Reply(text="one", usage=CACHED), Reply(text="two", usage=CACHED))

    await agent.prompt(session, "first")
    second = await agent.prompt(session, "second")

    assert costs(agent, session) == [usd(amount), usd(2 * amount)]
    assert session_cost(second) == usd(2 * amount)
    [usage] = [b for kind, b in stored(launch.home, session) if kind == "usage"][:1]
    assert usage["model"] == "house-model" and usage["call"] == "turn"
    assert usage["cost"] == {"amount": pytest.approx(amount), "currency": "USD"}


async def test_the_prices_file_overrides_genai_prices_and_prices_a_local_model_at_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    table = {
        "gpt-4o": {"input": 1, "output": 3, "currency": "EUR"},  # cache reads at the input's
        "local-coder": {"input": 0, "output": 0},
    }
    path = prices(tmp_path, table)
    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-4o", ACP_FSM_PRICES=path)
    session = await agent.new_session(project)
    server.script(Reply(text="one", usage=CACHED))
    await agent.prompt(session, "first")
    assert costs(agent, session) == [{"amount": (4000 * 1 + 200 * 3) / 1e6, "currency": "EUR"}]

    local = await launch.start("openai", ACP_FSM_MODEL="local-coder", ACP_FSM_PRICES=path)
    free = await local.new_session(project)
    server.script(Reply(text="one", usage=CACHED), Reply(text="two", usage=None))
    await local.prompt(free, "first")
    second = await local.prompt(free, "second")  # no usage reported (and no usage_update)
    assert costs(local, free) == [usd(0)]
    assert session_cost(second) == usd(0)  # a free model costs nothing all the same
    assert local.log("price_unknown") == []


async def test_a_model_of_unknown_price_has_no_cost(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_MODEL="no-such-model-anywhere")
    session = await agent.new_session(project)
    server.script(Reply(text="one"), Reply(text="two"))

    await agent.prompt(session, "first")
    second = await agent.prompt(session, "second")

    assert costs(agent, session) == [None, None]
    assert session_cost(second) is None
    [unknown] = agent.log("price_unknown")  # said once
    assert unknown["model"] == "no-such-model-anywhere"
    usage = [b for kind, b in stored(launch.home, session) if kind == "usage"]
    turns = [b for b in usage if b["call"] == "turn"]
    assert len(turns) == 2 and not any("cost" in b for b in turns)
    # the title call is priced (free) and stored like the others
    assert [b["cost"] for b in usage if b["call"] == "title"] == [usd(0)]


async def test_a_call_that_reports_no_tokens_makes_the_cost_unknown(
    launch: Launcher, server: ScriptedProvider, project: Path
) -> None:
    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-4o")
    session = await agent.new_session(project)
    server.script(Reply(text="one"), Reply(text="two", usage=None), Reply(text="three"))
    for prompt in ("first", "second", "third"):
        await agent.prompt(session, prompt)
    # the second call sends no usage_update (it used nothing, it says), and the total is
    # unknown from then on rather than too low
    assert costs(agent, session) == [usd(listed("gpt-4o", DEFAULT_USAGE)), None]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_subagent_calls_count_at_their_own_models_price(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path, provider: str
) -> None:
    (project / "a.py").write_text("x = 1\n")
    server.fallback = delegating("a.py")
    table = {"main-model": {"input": 1, "output": 2}, "sub-model": {"input": 10, "output": 20}}
    agent = await launch.start(
        provider,
        ACP_FSM_MODEL="main-model",
        ACP_FSM_SUBAGENT_MODEL="sub-model",
        ACP_FSM_PRICES=prices(tmp_path, table),
    )
    session = await agent.new_session(project)

    turn = await agent.prompt(session, "investigate")

    assert turn.stop_reason == "end_turn"
    assert [is_subagent(r) for r in server.requests] == [False, True, True, False]
    main = (12 * 1 + 7 * 2) / 1e6  # DEFAULT_USAGE at main-model's prices
    sub = (12 * 10 + 7 * 20) / 1e6
    assert costs(agent, session) == [usd(main), usd(2 * main + 2 * sub)]
    assert session_cost(turn) == usd(2 * main + 2 * sub)
    calls = [  # the turn's (the title's, made after the answer, may be stored by now)
        (b["model"], b.get("subagent", False))
        for k, b in stored(launch.home, session)
        if k == "usage" and b["call"] == "turn"
    ]
    assert calls == [
        ("main-model", False),
        ("sub-model", True),
        ("sub-model", True),
        ("main-model", False),
    ]


async def test_a_subagent_of_unknown_price_makes_the_sessions_cost_unknown(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    (project / "a.py").write_text("x = 1\n")
    server.fallback = delegating("a.py")
    agent = await launch.start(
        "anthropic",
        ACP_FSM_MODEL="main-model",
        ACP_FSM_SUBAGENT_MODEL="unpriced-sub-model",
        ACP_FSM_PRICES=prices(tmp_path, {"main-model": {"input": 1, "output": 2}}),
    )
    session = await agent.new_session(project)
    turn = await agent.prompt(session, "investigate")
    assert costs(agent, session) == [usd((12 * 1 + 7 * 2) / 1e6), None]
    assert session_cost(turn) is None
    assert [e["model"] for e in agent.log("price_unknown")] == ["unpriced-sub-model"]


async def test_a_compactions_summary_call_counts(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    agent = await launch.start(
        "anthropic",
        ACP_FSM_MODEL="house-model",
        ACP_FSM_PRICES=prices(tmp_path, {"house-model": HOUSE}),
    )
    session = await agent.new_session(project)
    server.script(Reply(text="one"), Reply(text="two"), Reply(text=SUMMARY), Reply(text="three"))
    await agent.prompt(session, "first question")
    await agent.prompt(session, "second question")

    compact = await agent.prompt(session, "/compact")
    third = await agent.prompt(session, "third question")

    assert [is_summary_call(r) for r in server.requests] == [False, False, True, False]
    call = (12 * 2 + 7 * 10) / 1e6
    assert session_cost(compact) == usd(3 * call)
    assert session_cost(third) == usd(4 * call)
    assert costs(agent, session) == [usd(call), usd(2 * call), usd(4 * call)]
    kinds = [b["call"] for k, b in stored(launch.home, session) if k == "usage"]
    assert kinds == ["turn", "title", "turn", "summary", "turn"]  # title: after the first


async def test_a_loaded_session_goes_on_from_its_stored_cost_and_tokens(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    env: Priced = {
        "ACP_FSM_MODEL": "house-model",
        "ACP_FSM_PRICES": prices(tmp_path, {"house-model": HOUSE}),
    }
    agent = await launch.start("openai", **env)
    session = await agent.new_session(project)
    server.script(Reply(text="one", usage=CACHED), Reply(text="two", usage=CACHED))
    await agent.prompt(session, "first")
    await launch.close(agent)

    other = await launch.start("openai", **env)
    await other.result(
        "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
    )
    turn = await other.prompt(session, "second")

    amount = (1000 * 2 + 3000 * 0.5 + 200 * 10) / 1e6
    assert costs(other, session) == [usd(2 * amount)]
    assert session_cost(turn) == usd(2 * amount)
    # so do the tokens of `sessionUsage`: every stored call's up to this turn's (the first
    # process's title call's too, when it ended before that process did)
    usage = [b for k, b in stored(launch.home, session) if k == "usage"]
    last_turn = max(i for i, b in enumerate(usage) if b["call"] == "turn")
    told = turn.response["result"]["_meta"]["acpFsm"]["sessionUsage"]["inputTokens"]
    assert told == sum(b["usage"]["inputTokens"] for b in usage[: last_turn + 1])
    assert told >= 8000


@pytest.mark.parametrize(
    ("table", "logged"),
    [
        ("{not json", "prices_file_unusable"),
        ('["gpt-4o"]', "prices_file_unusable"),
        ({"gpt-4o": {"input": "cheap", "output": 1}}, "prices_entry_invalid"),
        ({"gpt-4o": {"input": 1, "output": 1, "cached_read": 0.1}}, "prices_entry_invalid"),
        ({"gpt-4o": {"input": 1}}, "prices_entry_invalid"),
    ],
)
async def test_a_prices_file_that_cannot_be_used_is_logged_and_prices_nothing(
    launch: Launcher,
    server: ScriptedProvider,
    project: Path,
    tmp_path: Path,
    table: Any,
    logged: str,
) -> None:
    """A file that is not an object of prices prices nothing; an entry that is not valid
    prices nothing for its model (not genai-prices' price either: the file meant another)."""
    agent = await launch.start(
        "openai", ACP_FSM_MODEL="gpt-4o", ACP_FSM_PRICES=prices(tmp_path, table)
    )
    session = await agent.new_session(project)
    server.script(Reply(text="one"))

    turn = await agent.prompt(session, "first")

    assert turn.stop_reason == "end_turn"
    assert costs(agent, session) == [None]
    [problem] = agent.log(logged)
    assert problem["path"] == str(tmp_path / "prices.json") and problem["error"]
    if logged == "prices_entry_invalid":
        assert problem["model"] == "gpt-4o"


async def test_a_missing_prices_file_is_logged_and_prices_nothing(
    launch: Launcher, server: ScriptedProvider, project: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere.json"
    agent = await launch.start("openai", ACP_FSM_MODEL="gpt-4o", ACP_FSM_PRICES=str(missing))
    session = await agent.new_session(project)
    server.script(Reply(text="one"))
    assert (await agent.prompt(session, "first")).stop_reason == "end_turn"
    assert costs(agent, session) == [None]
    [problem] = agent.log("prices_file_unusable")
    assert "nowhere.json" in problem["error"]
