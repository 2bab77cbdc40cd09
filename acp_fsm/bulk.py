"""Building many objects at once without the cyclic garbage collector stepping in: a long
session's load decodes, rebuilds and replays tens of thousands of objects, all of them alive,
so a collection meanwhile finds nothing to free, and costs more the more there are (it made a
load of 10,000 messages take up to twice as long; bench/long_session.py). Process-wide, for
the moment the work takes; nested and threaded uses share one pause.

`freeze_long_lived` hides from the collector what lives as long as the process (modules,
the price table, validators), once they are loaded: a full collection then no longer walks
them, some 70,000 objects whose walk took 10-15 ms on a 2-core machine, a pause that a
cancel read meanwhile waited out (bench/cancel.py's p99)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # uses under way
_resume = False  # whether the collector was on when the first began


@contextmanager
def paused_collector() -> Iterator[None]:
    """Keep the cyclic collector off inside (reference counting frees as usual)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


def freeze_long_lived() -> None:
    """Move every object alive now out of the collector's generations (`gc.freeze`): never
    walked again; reference counting still frees each."""
    gc.freeze()
