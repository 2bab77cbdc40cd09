"""Building many objects at once without the cyclic garbage collector stepping in: a long
session's load decodes, rebuilds and replays tens of thousands of objects, all of them alive,
so a collection meanwhile finds nothing to free, and costs more the more there are (it made a
load of 10,000 messages take up to twice as long; bench/long_session.py). Process-wide, for
the moment the work takes; nested and threaded uses share one pause."""

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
