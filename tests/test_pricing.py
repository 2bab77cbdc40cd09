"""The pure parts of `acp_fsm.pricing`: a price by kind of token, totals and currencies, the
cost of a stored session, and what a prices file that cannot be used leaves (the agent's own
behaviour, end to end: tests/e2e/test_cost.py)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from acp_fsm.pricing import (
    NOTHING,
    USAGE_ENTRY,
    Charge,
    Cost,
    Found,
    Price,
    cost_of,
    table_of,
    to_acp,
)
from acp_fsm.providers.types import Usage
from acp_fsm.store import Entry

# Every prompt token as input, 3000 of them read from the cache and 500 written to it.
CACHED = Usage(input_tokens=4500, output_tokens=200, cache_read_tokens=3000, cache_write_tokens=500)


def entry(kind: str, body: dict[str, Any]) -> Entry:
    return Entry(1, kind, body, 0.0)


def charged(amount: float | None, currency: str = "USD") -> Entry:
    cost = None if amount is None else Cost(amount, currency)
    return entry(USAGE_ENTRY, Charge("turn", False, "m", CACHED, cost).body())


def answer(stop: str = "end_turn") -> Entry:
    return entry("assistant", {"parts": [], "stopReason": stop, "views": {}})


def test_cached_tokens_are_priced_apart_from_the_rest_of_the_input() -> None:
    price = Price.of({"input": 2, "output": 10, "cache_read": 0.5, "cache_write": 3})
    assert price.cost(CACHED) == Cost((1000 * 2 + 3000 * 0.5 + 500 * 3 + 200 * 10) / 1e6, "USD")


def test_cache_prices_default_to_the_input_price() -> None:
    price = Price.of({"input": 2, "output": 10, "currency": "EUR"})
    assert price == Price(2, 10, 2, 2, "EUR")
    assert price.cost(CACHED) == Cost((4500 * 2 + 200 * 10) / 1e6, "EUR")


def test_a_total_is_unknown_once_a_cost_is_or_currencies_differ() -> None:
    usd = Cost(0.5, "USD")
    assert NOTHING.plus(usd) == usd and NOTHING.plus(Cost(1, "EUR")) == Cost(1, "EUR")
    assert usd.plus(Cost(0.25, "USD")) == Cost(0.75, "USD")
    assert usd.plus(NOTHING) == usd
    assert usd.plus(None) is None
    assert usd.plus(Cost(1, "EUR")) is None


def test_a_total_is_told_rounded_and_only_once_something_was_priced() -> None:
    assert to_acp(Cost(0.1 + 0.2, "USD")) == {"amount": 0.3, "currency": "USD"}
    assert to_acp(Cost(1.23456789, "USD")) == {"amount": 1.234568, "currency": "USD"}
    assert to_acp(NOTHING) is None and to_acp(None) is None


def test_a_stored_sessions_cost_is_the_sum_of_its_calls() -> None:
    calls = [entry("user", {}), charged(0.25), answer("tool_use"), charged(0.5), answer()]
    assert cost_of(calls) == Cost(0.75, "USD")
    assert cost_of([]) == NOTHING
    assert cost_of([charged(0.25), charged(None), charged(0.5)]) is None


def test_a_session_stored_before_calls_were_has_an_unknown_cost() -> None:
    assert cost_of([entry("user", {}), answer(), charged(0.5), answer()]) is None
    # a message a cancel cut came with no counted call: it says nothing of the kind
    assert cost_of([answer("cancelled"), answer("error"), charged(0.5), answer()]) == Cost(
        0.5, "USD"
    )


def found(table: Any) -> Found:
    return Found("/p/prices.json", orjson.dumps(table), listed=False)


@pytest.mark.parametrize(
    "contents", [b"{not json", b"[]", b"\xff", "No such file or directory: '/p/prices.json'"]
)
def test_a_file_that_cannot_be_used_prices_nothing(contents: bytes | str) -> None:
    table = table_of(Found("/p/prices.json", contents, listed=True))
    assert not table.usable
    assert table.cost(CACHED, "gpt-4o", "https://api.openai.com/v1") is None


def test_an_entry_that_is_not_valid_prices_nothing_for_its_model_only() -> None:
    table = table_of(found({"bad": {"input": -1, "output": 1}, "good": {"input": 1, "output": 1}}))
    assert table.own == {"bad": None, "good": Price(1, 1, 1, 1, "USD")}
    assert table.cost(CACHED, "bad", "") is None
    assert table.cost(CACHED, "good", "") == Cost(4700 / 1e6, "USD")


def test_a_call_that_reported_no_tokens_is_unknown_unless_the_model_is_free() -> None:
    table = table_of(found({"paid": {"input": 1, "output": 1}, "free": {"input": 0, "output": 0}}))
    assert table.cost(Usage(), "paid", "") is None
    assert table.cost(Usage(), "free", "") == Cost(0.0, "USD")
