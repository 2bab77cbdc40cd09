"""The suite on several processes: with pytest-xdist (in the test extra) the tests of a
folder, the whole suite when none is named, run on one worker a core and one more unless the
command line says how many (`-n 4`; `-n 0` or `-p no:xdist`: in the pytest process itself). A
run of files or single tests starts no workers: they take seconds to start, longer than most
files run.

The controller makes the run's folder (tests/homes.py) and hands its path to each worker; a
worker makes its homes in a folder of its own inside it, so two workers never share a
session store, a credentials file or a model list, and the controller alone checks the
user's folders at the end. Every server a test starts binds port 0 (the system picks a free
one), so workers never race for a port.

Workers are handed a file at a time (`--dist loadfile`: a file's module fixtures, the wheel's
build say, are made once), the files of `slow` tests first, then in the order collected. A test
marked `alone` runs while no other test does, on any worker (`Turns`): a test that steers the
pids the system hands out, say.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# The run folder's path in what the controller hands each worker (`config.workerinput`).
RUN_FOLDER = "acp_fsm_run_folder"
ALONE = "alone"
SLOW = "slow"
MARKERS = (
    f"{ALONE}: runs while no other test runs on any worker",
    f"{SLOW}: several processes, a package index or a deliberate multi-second wait; their "
    "files are handed to workers first, so that the run does not end waiting on one "
    "(deselect them with -m 'not slow')",
)


def workers() -> int:
    """How many workers a run that does not say gets: one a core the run may use, and one
    more. Most tests spend part of their time waiting on the processes they start (an agent
    starting, a deliberate timeout), and with a worker a core that time is a core left idle:
    on 2 cores the suite took 7 min 1 s on 2 workers (162 % of a core), 6 min 11 s on 3 (187 %),
    for the same CPU time."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return (len(usable) if usable else os.cpu_count() or 1) + 1


def is_worker(config: Any) -> bool:
    """Whether `config` is a worker's (pytest-xdist), the tests then run there."""
    return hasattr(config, "workerinput")


def spreads(config: Any) -> bool:
    """Whether a run whose command line does not say spreads over workers: a folder's
    tests do (the whole suite is the folder `tests`), a file's or a test's do not."""
    where = config.invocation_params.dir
    return not is_worker(config) and any(
        (where / arg.split("::")[0]).is_dir() for arg in config.args
    )


def distributes(config: Any) -> bool:
    """Whether this process hands the tests to workers instead of running them."""
    return not is_worker(config) and bool(getattr(config.option, "numprocesses", None))


def run_folder(config: Any) -> Path | None:
    """In a worker, the folder the controller made for the run."""
    return Path(config.workerinput[RUN_FOLDER]) if is_worker(config) else None


def slow_first(items: list[Any]) -> None:
    """The `slow` tests first, each set in the order collected: their files are handed out
    first (every worker collects the same order), so the long ones overlap the many short ones
    instead of keeping one worker busy after the others are done."""
    items.sort(key=lambda item: item.get_closest_marker(SLOW) is None)


def bytecode_cache(folder: Path) -> None:
    """Python told not to write bytecode beside the sources (`PYTHONDONTWRITEBYTECODE`) would
    compile the checkout anew in each of the ~2,000 agents a run starts (a fifth of an
    agent's CPU): the processes the tests start keep theirs in `folder` instead, which goes
    with the run. Without that setting they write it beside the sources, as always."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        os.environ["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")


class Turns:
    """Tests on different workers take turns through two locks in the run's folder: every test
    holds `room` shared, a test that must be alone holds it exclusively. Whoever enters
    passes `gate` first, which a test waiting to be alone holds: tests that keep coming on
    the other worker cannot keep it waiting forever."""

    def __init__(self, folder: Path) -> None:
        self.gate = os.open(folder / "gate.lock", os.O_RDWR | os.O_CREAT, 0o600)
        self.room = os.open(folder / "room.lock", os.O_RDWR | os.O_CREAT, 0o600)

    @contextmanager
    def turn(self, alone: bool) -> Iterator[None]:
        fcntl.flock(self.gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self.room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self.room, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self.gate)
        os.close(self.room)
