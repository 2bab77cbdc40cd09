"""Every benchmark, one after another, in one run on one machine state (the figures of a
change are compared on the same run): python -m bench [name ...] [--option ...], names as in
`SUITE` or `ON_DEMAND`; the options after the names go to each benchmark named."""

from __future__ import annotations

import importlib
import sys
import time

# Fast first; each prints its own table. store_stall takes arguments and runs alone.
SUITE = (
    "startup",
    "bench_validation",
    "throughput",
    "relay",
    "cancel",
    "slow_reader",
    "shutdown",
    "sessions",
    "long_session",
    "edits",
    "fetch_stall",
    "commands",
    "text_calls",
)
# Run only when named: a real model on a real server (bench/README.md says how to get them).
ON_DEMAND = ("local_model",)


def main() -> None:
    given = sys.argv[1:]
    split = next((i for i, arg in enumerate(given) if arg.startswith("-")), len(given))
    names, options = given[:split] or SUITE, given[split:]
    unknown = sorted(set(names) - set(SUITE) - set(ON_DEMAND))
    if unknown:
        choices = ", ".join((*SUITE, *ON_DEMAND))
        sys.exit(f"no such benchmark: {', '.join(unknown)} (choose from {choices})")
    for name in names:
        started = time.monotonic()
        sys.argv = [f"bench.{name}", *options]  # each reads its own optional arguments
        importlib.import_module(f"bench.{name}").main()
        print(f"({name}: {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
