"""Every benchmark, one after another, in one run on one machine state (the figures of a
change are compared on the same run): python -m bench [name ...], names as in `SUITE`."""

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
)


def main() -> None:
    names = sys.argv[1:] or SUITE
    unknown = sorted(set(names) - set(SUITE))
    if unknown:
        sys.exit(f"no such benchmark: {', '.join(unknown)} (choose from {', '.join(SUITE)})")
    for name in names:
        started = time.monotonic()
        sys.argv = [f"bench.{name}"]  # each reads its own optional arguments
        importlib.import_module(f"bench.{name}").main()
        print(f"({name}: {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
