"""Store stall: does session-store work hold up the event loop?

Appends entries one after another (each awaited, as the turn runner does) while a probe
coroutine sleeps 1 ms at a time and records how late it wakes: that lateness is the event-loop
lag a streaming turn or a `session/cancel` would see. Reports appends/s, p50/p99/max loop lag,
and the time from calling `append()` to its return (the commit).

Run: python -m bench.store_stall [small_count] [large_count]
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_fsm.store import SessionRecord, Store
from bench.common import table

SMALL_COUNT = 10_000
LARGE_COUNT = 100
LARGE_BYTES = 1024 * 1024
TICK_S = 0.001  # the probe's sleep: lag is measured every millisecond
IDLE_S = 1.0  # how long the baseline row watches a loop with no store work
SMALL_BODY = {"role": "assistant", "content": [{"type": "text", "text": "Done: 3 files changed."}]}


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


@dataclass
class LagProbe:
    """Sleeps TICK_S in a loop and records, in ms, how much later than asked it woke."""

    lags_ms: list[float] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            asked = time.perf_counter() + TICK_S
            await asyncio.sleep(TICK_S)
            self.lags_ms.append(max(0.0, time.perf_counter() - asked) * 1000)

    def start(self) -> None:
        self.lags_ms.clear()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> list[float]:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        return list(self.lags_ms)


def row(name: str, rate: str, lags: list[float], calls: list[float]) -> str:
    lag = f"{percentile(lags, 0.5):8.3f} {percentile(lags, 0.99):8.3f} {max(lags):8.2f}"
    call = (
        f"{percentile(calls, 0.5):8.3f} {percentile(calls, 0.99):8.3f}"
        if calls
        else f"{'-':>8} {'-':>8}"
    )
    return f"{name:<26} {rate:>10} {lag} {call}"


async def appends(store: Store, name: str, count: int, body: dict[str, Any]) -> str:
    """`count` awaited appends of `body` to a fresh session, under the probe."""
    await store.create_session(SessionRecord(name, "/bench"))
    probe = LagProbe()
    calls: list[float] = []
    probe.start()
    await asyncio.sleep(TICK_S * 2)  # the probe is running before the first append
    started = time.perf_counter()
    for _ in range(count):
        called = time.perf_counter()
        await store.append(name, "assistant", body)
        calls.append((time.perf_counter() - called) * 1000)
    elapsed = time.perf_counter() - started
    lags = await probe.stop()
    return row(name, f"{count / elapsed:10.0f}", lags, calls)


async def idle() -> str:
    probe = LagProbe()
    probe.start()
    await asyncio.sleep(IDLE_S)
    return row("idle loop (baseline)", "-", await probe.stop(), [])


async def main(small_count: int, large_count: int) -> None:
    with tempfile.TemporaryDirectory(prefix="store-stall-") as directory:
        store = await Store.open(Path(directory) / "sessions.db")
        try:
            rows = [
                await idle(),
                await appends(store, f"{small_count} small appends", small_count, SMALL_BODY),
                await appends(
                    store,
                    f"{large_count} x 1 MB appends",
                    large_count,
                    {"type": "tool_result", "text": "x" * LARGE_BYTES},
                ),
            ]
        finally:
            await store.close()
    header = (
        f"{'workload':<26} {'appends/s':>10} {'lag p50':>8} {'lag p99':>8} {'lag max':>8} "
        f"{'call p50':>8} {'call p99':>8}"
    )
    table("session store: event-loop lag during appends (ms; probe sleeps 1 ms)", header, rows)


if __name__ == "__main__":
    counts = [int(arg) for arg in sys.argv[1:3]]
    asyncio.run(main(*counts, *(SMALL_COUNT, LARGE_COUNT)[len(counts) :]))
