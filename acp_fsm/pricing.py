"""What a session's model calls cost: ACP's `UsageUpdate.cost` (docs/cost.md).

Each model call is priced on its own, at the prices of its own model: the turn's calls, the
summaries of compactions and the calls of subagents alike (a subagent may use another model,
`ACP_FSM_SUBAGENT_MODEL`). Prices come from `ACP_FSM_PRICES` for the models that file names
(schemas/prices.json), else from the genai-prices package, whose table its releases keep up to
date (prices by request size included). A session's cost is the sum of its calls', stored
with each call (a `usage` entry), so a load or another process goes on from the whole
session's. One call of unknown price makes the total unknown: no cost is told rather than
too little.

The table is loaded once a process, on a thread started after the first session's answer
(`acp_fsm.warm`) or by the first model call: genai-prices and its data take some 250 ms to
import, which neither `initialize`, a session nor the event loop waits for.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import structlog

from acp_fsm import env_vars, small_files, transcript, updates
from acp_fsm.blocking import run_blocking

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from acp_fsm.providers.types import Usage
    from acp_fsm.schemas import acp_types as acp
    from acp_fsm.store import Entry

log = structlog.get_logger("pricing")

PER_TOKENS = 1_000_000  # prices are per million tokens
DIGITS = 6  # an amount is told to a millionth of its unit
# The prices file is read up to this size (an entry takes some 80 bytes).
MAX_PRICES_BYTES = 1024 * 1024
DEFAULT_CURRENCY = "USD"  # genai-prices' currency, and the file's unless it says
USAGE_ENTRY = "usage"  # the stored entry of one model call: its model, tokens and cost
THREAD_NAME = "acp-fsm-load-prices"
NO_COST = "no cost is reported"  # what an unknown price means, as the log says it
# Stop reasons of a message a cancel or a failure cut short (its call was not counted).
_CUT = frozenset({transcript.CANCELLED, "error"})


class Cost(NamedTuple):
    """An amount of `currency`; the cost of no call at all has none ("")."""

    amount: float
    currency: str

    def plus(self, other: Cost | None) -> Cost | None:
        """Both together; None (unknown) when `other` is, or is in another currency."""
        if other is None or (self.currency and other.currency not in ("", self.currency)):
            return None
        return Cost(self.amount + other.amount, self.currency or other.currency)


NOTHING = Cost(0.0, "")


def to_acp(cost: Cost | None) -> acp.Cost | None:
    """ACP's `Cost` of a total, rounded; None when it is unknown or no call was priced."""
    if cost is None or not cost.currency:
        return None
    return {"amount": round(cost.amount, DIGITS), "currency": cost.currency}


def added(total: Cost | None, cost: Cost | None) -> Cost | None:
    """`total` with `cost` added (unknown stays unknown)."""
    return None if total is None else total.plus(cost)


class Charge(NamedTuple):
    """One model call: what it was (`turn` or `summary`, of a subagent or not), its model,
    its tokens and what they cost (None: unknown)."""

    call: str
    subagent: bool
    model: str
    usage: Usage
    cost: Cost | None

    def body(self) -> dict[str, Any]:
        """Its stored entry (`USAGE_ENTRY`); no `cost` when unknown."""
        body: dict[str, Any] = {"call": self.call, "model": self.model}
        if self.subagent:
            body["subagent"] = True
        body["usage"] = updates.usage_totals(self.usage)
        if self.cost is not None:
            body["cost"] = {"amount": self.cost.amount, "currency": self.cost.currency}
        return body


def cost_of(entries: Iterable[Entry]) -> Cost | None:
    """A stored session's cost: the sum of its calls'. Unknown when one call's is, and for a
    session stored before calls were (a complete assistant message before any usage entry)."""
    total: Cost | None = NOTHING
    counted = False
    for entry in entries:
        if entry.kind == USAGE_ENTRY:
            counted = True
            total = added(total, _stored(entry.body))
        elif entry.kind == "assistant" and not counted and entry.body.get("stopReason") not in _CUT:
            return None
    return total


def _stored(body: dict[str, Any]) -> Cost | None:
    cost = body.get("cost")
    return None if cost is None else Cost(float(cost["amount"]), str(cost["currency"]))


class Price(NamedTuple):
    """A model's prices per million tokens (an entry of the prices file)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    currency: str

    @classmethod
    def of(cls, entry: dict[str, Any]) -> Price:
        """From a valid entry (schemas/prices.json, `Price`)."""
        fresh = float(entry["input"])
        return cls(
            fresh,
            float(entry["output"]),
            float(entry.get("cache_read", fresh)),
            float(entry.get("cache_write", fresh)),
            entry.get("currency", DEFAULT_CURRENCY),
        )

    @property
    def free(self) -> bool:
        return not any(self[:4])

    def cost(self, usage: Usage) -> Cost:
        # `Usage.input_tokens` counts the cached tokens too, for every provider.
        fresh = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        amount = (
            fresh * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        )
        return Cost(amount / PER_TOKENS, self.currency)


class PriceTable:
    """The prices in force: the file's entries (None for one that is not valid), then the
    package's (`listed`, None when it could not be imported). A file that could not be
    used at all (`usable` False) prices nothing: costs would be reported that it meant to
    change."""

    def __init__(
        self,
        own: dict[str, Price | None],
        listed: Callable[[Usage, str, str], Cost | None] | None,
        *,
        usable: bool = True,
    ) -> None:
        self.own = own
        self.listed = listed
        self.usable = usable
        self._unknown: set[str] = set()  # models whose unknown price was logged

    def __repr__(self) -> str:
        return f"<PriceTable own={len(self.own)} listed={self.listed is not None}>"

    def cost(self, usage: Usage, model: str, base_url: str) -> Cost | None:
        """What a call of `model` at `base_url` that used `usage` cost; None when unknown
        (said in the log once a model)."""
        found, why = self._priced(usage, model, base_url)
        if found is None and model not in self._unknown:
            self._unknown.add(model)
            log.warning("price_unknown", model=model, reason=why, effect=NO_COST)
        return found

    def _priced(self, usage: Usage, model: str, base_url: str) -> tuple[Cost | None, str]:
        """The cost, or None and why. A call that reported no tokens is unknown (priced as
        none, it would say too little), unless the model is free."""
        if not self.usable:
            return None, "the prices file (ACP_FSM_PRICES) cannot be used"
        price = self.own.get(model)
        if model in self.own and price is None:
            return None, "its entry in the prices file is not valid"
        if not any(usage) and not (price is not None and price.free):
            return None, "the provider reported no token counts"
        if price is not None:
            return price.cost(usage), ""
        found = self.listed(usage, model, base_url) if self.listed is not None else None
        return found, "no price is known for it: give it one in ACP_FSM_PRICES"


def listed_cost(usage: Usage, model: str, base_url: str) -> Cost | None:
    """genai-prices' price of a call: at the provider its API URL names (OpenRouter, Azure,
    the vendors' own), else at the one whose models go by that name (a proxy, a compatible
    server)."""
    from genai_prices import Usage as Counts
    from genai_prices import calc_price

    counts = Counts(
        input_tokens=usage.input_tokens,  # cached ones included, as genai-prices counts
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    for where in (base_url, None):
        try:
            if where is None:
                calculation = calc_price(counts, model)
            else:
                calculation = calc_price(counts, model, provider_api_url=where)
        except (LookupError, ValueError):  # not there; counts it refuses (more cached than all)
            continue
        return Cost(float(calculation.total_price), DEFAULT_CURRENCY)
    return None


class Found(NamedTuple):
    """What the loading thread found: the prices file's path (None: none is set), its bytes
    or why it cannot be read, and whether genai-prices imported."""

    path: str | None
    contents: bytes | str  # str: the reason it cannot be read
    listed: bool


def find() -> Found:
    """Blocking: read the prices file, import genai-prices and its table. Nothing of ours is
    imported here, so neither this thread nor the loop waits for a module the other imports
    (as `acp_fsm.warm`'s)."""
    path = env_vars.prices_file()
    contents: bytes | str = b""
    if path is not None:
        try:
            head = small_files.read_head(path, MAX_PRICES_BYTES)
            contents = f"it is over {MAX_PRICES_BYTES:,} bytes" if head.cut else head.data
        except OSError as exc:
            contents = str(exc)
    try:
        # Its table, and what its first price imports, else imported by the first call.
        for name in ("genai_prices.data", "genai_prices.decompose", "genai_prices.validation"):
            importlib.import_module(name)
    except Exception as exc:  # the file's prices still hold
        log.error("genai_prices_unavailable", error=f"{type(exc).__name__}: {exc}")
        return Found(path, contents, False)
    return Found(path, contents, True)


def table_of(found: Found) -> PriceTable:
    """The table of what `find` found: the file's entries, validated (schemas/prices.json),
    then genai-prices'. What cannot be used is logged."""
    listed = listed_cost if found.listed else None
    if found.path is None:
        return PriceTable({}, listed)
    try:
        if isinstance(found.contents, str):
            raise ValueError(found.contents)
        data = orjson.loads(found.contents)
        if not isinstance(data, dict):
            raise ValueError(f"expected an object of model names, got {type(data).__name__}")
    except ValueError as exc:
        log.error("prices_file_unusable", path=found.path, error=str(exc), effect=NO_COST)
        return PriceTable({}, listed, usable=False)
    return PriceTable({model: _entry(found.path, model, e) for model, e in data.items()}, listed)


def _entry(path: str, model: str, entry: object) -> Price | None:
    from acp_fsm import schemas

    problem = schemas.validate("prices.Price", entry)
    if problem is None:
        assert isinstance(entry, dict)
        return Price.of(entry)
    log.error(
        "prices_entry_invalid",
        path=path,
        model=model,
        error=str(problem),
        effect="no cost is reported for this model",
    )
    return None


_table: PriceTable | None = None
_found: Found | None = None
_finding = threading.Lock()
_started = False


def start() -> None:
    """Read the prices on a thread, once a process (when the first model call starts, so
    that pricing it waits for nothing)."""
    global _started
    if not _started:
        _started = True
        threading.Thread(target=_found_once, name=THREAD_NAME, daemon=True).start()


async def table() -> PriceTable:
    """The table, read off the event loop once a process."""
    global _table
    if _table is None:
        found = await run_blocking(None, _found_once)
        if _table is None:  # not built by another caller meanwhile
            _table = table_of(found)
    return _table


def _found_once() -> Found:
    global _found
    with _finding:
        if _found is None:
            _found = find()
        return _found
