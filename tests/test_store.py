"""Session store on real SQLite files: round trips, ordering and pagination, durability across
stores and processes (including SIGKILL right after an append), concurrency, file modes,
migrations, and that store work never stalls the event loop.

Pagination semantics under test (keyset on updated_at, id): every session not updated during a
walk is returned exactly once, in order; a session updated mid-walk moves to the front, so the
walk returns it at most once — if it was already returned it is not repeated, if it was not yet
reached this walk skips it (the next listing starts with it).
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import os
import signal
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from acp_fsm import leases, limits, sessions_db
from acp_fsm import store as store_module
from acp_fsm.sessions_db import SCHEMA_VERSION, default_path
from acp_fsm.store import (
    MAX_BODY_BYTES,
    MAX_PAGE_SIZE,
    Claim,
    Entry,
    SessionGone,
    SessionRecord,
    Store,
    StoreError,
    stored_size,
)
from tests.harness import wait_until

ROOT = Path(__file__).resolve().parents[1]
TEN_MB = 10 * 1024 * 1024
TICK_S = 0.001
WAIT_S = 30  # bound on anything that waits for a subprocess or a thread


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sessions.db"


@pytest.fixture
async def store(db: Path) -> AsyncIterator[Store]:
    opened = await Store.open(db)
    yield opened
    await opened.close()


def record(session_id: str, cwd: str = "/work/a", updated_at: float = 0.0) -> SessionRecord:
    return SessionRecord(session_id, cwd, created_at=updated_at, updated_at=updated_at)


def file_size(path: Path | str) -> int:
    return os.stat(path).st_size


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def make_file(path: Path, file_mode: int = 0o644) -> None:
    path.parent.mkdir(exist_ok=True)
    path.touch()
    path.chmod(file_mode)


def sql(path: Path, query: str) -> list[Any]:
    """A query through a plain connection of our own, as another process would see the file."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def store_threads(path: Path) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"acp-fsm store {path}"]


async def wait_for_no_thread(path: Path) -> None:
    """The worker thread ends after a close or a failed open."""
    for thread in store_threads(path):
        await asyncio.to_thread(thread.join, WAIT_S)
    assert store_threads(path) == []


@contextmanager
def umask(value: int) -> Iterator[None]:
    previous = os.umask(value)
    try:
        yield
    finally:
        os.umask(previous)


class Ticker:
    """Counts event-loop ticks of ~1 ms; `ticks` only grows while the loop is free."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            self.ticks += 1

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self._task


# --- paths -------------------------------------------------------------------------------------


def test_default_path_prefers_acp_fsm_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_FSM_HOME", "/srv/acp")
    monkeypatch.setenv("XDG_DATA_HOME", "/xdg")
    assert default_path() == Path("/srv/acp/sessions.db")


def test_default_path_uses_xdg_data_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACP_FSM_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", "/xdg")
    assert default_path() == Path("/xdg/acp-fsm/sessions.db")


@pytest.mark.parametrize("xdg", [None, "", "relative/dir"])
def test_default_path_falls_back_to_local_share(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, xdg: str | None
) -> None:
    monkeypatch.setenv("ACP_FSM_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    assert default_path() == tmp_path / ".local/share/acp-fsm/sessions.db"


async def test_open_without_a_path_uses_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ACP_FSM_HOME", str(tmp_path / "home"))
    opened = await Store.open()
    try:
        assert opened.path == tmp_path / "home" / "sessions.db"
        assert opened.path.exists()
    finally:
        await opened.close()


# --- sessions ----------------------------------------------------------------------------------


async def test_session_round_trip(store: Store) -> None:
    servers = (
        {
            "name": "fs",
            "command": "/bin/mcp",
            "args": ["--x"],
            "env": [{"name": "A", "value": "é"}],
        },
    )
    given = SessionRecord(
        "s1", "/work/a", ("/work/b", "/work/ç"), servers, "Title", 10.5, 20.25, model_title=True
    )
    await store.create_session(given)
    assert await store.get_session("s1") == given
    assert await store.get_session("absent") is None


async def test_zero_timestamps_mean_now(store: Store) -> None:
    before = time.time()
    await store.create_session(SessionRecord("s", "/w"))
    got = await store.get_session("s")
    assert got is not None
    assert before <= got.created_at == got.updated_at <= time.time()


async def test_duplicate_id_is_refused(store: Store) -> None:
    await store.create_session(record("s", "/first"))
    with pytest.raises(StoreError, match="'s' already exists"):
        await store.create_session(record("s", "/second"))
    got = await store.get_session("s")
    assert got is not None and got.cwd == "/first"


async def test_bad_records_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="non-empty string"):
        await store.create_session(record(""))
    with pytest.raises(StoreError, match="not a string"):
        bad_servers: Any = ({1: "x"},)  # a non-string key: not JSON
        await store.create_session(SessionRecord("s", "/w", mcp_servers=bad_servers))
    assert await store.get_session("s") is None


async def test_title_is_set_once(store: Store) -> None:
    await store.create_session(record("s"))
    await store.set_title("s", "first")
    await store.set_title("s", "second")
    got = await store.get_session("s")
    assert got is not None and got.title == "first"
    await store.create_session(SessionRecord("t", "/w", title="given"))
    await store.set_title("t", "other")
    got = await store.get_session("t")
    assert got is not None and got.title == "given"
    with pytest.raises(StoreError, match="no session 'absent'"):
        await store.set_title("absent", "x")


async def test_a_model_s_title_replaces_the_first_one_once(store: Store, db: Path) -> None:
    await store.create_session(record("s", updated_at=100.0))
    await store.set_title("s", "first prompt")
    assert await store.set_model_title("s", "Made") == 100.0  # a title is no activity
    assert await store.set_model_title("s", "Made again") is None
    await store.set_title("s", "another prompt")
    got = await store.get_session("s")
    assert got is not None and (got.title, got.model_title, got.updated_at) == ("Made", True, 100)
    other = await Store.open(db)  # another process: made once, whoever makes it
    try:
        assert await other.set_model_title("s", "Mine") is None
    finally:
        await other.close()
    with pytest.raises(SessionGone, match="no session 'absent'"):
        await store.set_model_title("absent", "x")


async def test_delete_removes_session_and_entries(store: Store, db: Path) -> None:
    for session_id in ("gone", "kept"):
        await store.create_session(record(session_id))
        await store.append(session_id, "user", {"text": session_id})
    assert await store.delete_session("gone") is True
    assert await store.get_session("gone") is None
    assert await store.entries("gone") == []
    assert sql(db, "SELECT count(*) FROM entries WHERE session_id = 'gone'") == [(0,)]
    assert [e.body for e in await store.entries("kept")] == [{"text": "kept"}]
    assert await store.delete_session("gone") is False
    # The id is free again, and its transcript starts over.
    await store.create_session(record("gone"))
    assert await store.append("gone", "user", {}) == 1


# --- entries -----------------------------------------------------------------------------------


async def test_entries_in_seq_order(store: Store) -> None:
    await store.create_session(record("a"))
    await store.create_session(record("b"))
    kinds = ["user", "assistant", "tool_result", "tool_result", "assistant"]
    for i, kind in enumerate(kinds):
        assert await store.append("a", kind, {"i": i}) == i + 1
    assert await store.append("b", "user", {"i": 0}) == 1  # seq is per session
    got = await store.entries("a")
    assert [(e.seq, e.kind, e.body) for e in got] == [
        (i + 1, k, {"i": i}) for i, k in enumerate(kinds)
    ]
    assert all(isinstance(e, Entry) for e in got)
    assert [e.created_at for e in got] == sorted(e.created_at for e in got)
    assert await store.entries("absent") == []


async def test_append_to_unknown_session_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="no session 'absent'"):
        await store.append("absent", "user", {})


async def test_every_write_to_a_deleted_session_says_it_is_gone(store: Store) -> None:
    """Another process may delete a session between any two writes of a turn."""
    await store.create_session(record("s"))
    seq = await store.append("s", "user", {})
    await store.delete_session("s")
    writes: list[Callable[[], Awaitable[Any]]] = [
        lambda: store.append("s", "assistant", {}),
        lambda: store.set_title("s", "t"),
        lambda: store.append_soon("s", "turn_end", {}),
        lambda: store.rewrite_soon("s", seq, {}),
        lambda: store.claim_turn("s", "owner"),
    ]
    for write in writes:
        with pytest.raises(SessionGone, match="no session 's'"):
            await write()


async def test_bodies_round_trip_exactly(store: Store) -> None:
    body = {
        "text": 'héllo 中文 😀 \u0000 \n "quoted" \\',
        "nested": {
            "list": [1, 2.5, -0.0, 1e308, 5e-324, 0.1 + 0.2, None, True, False, [[[]]]],
            "empty": {},
            "ключ": "значение",
        },
        "int": 2**63 - 1,
    }
    await store.create_session(record("s"))
    await store.append("s", "assistant", body)
    (entry,) = await store.entries("s")
    assert repr(entry.body) == repr(body)  # repr tells 1 from 1.0 from True, and -0.0 from 0.0


async def test_values_orjson_refuses_still_round_trip(store: Store) -> None:
    body = {"huge": 2**80, "lone surrogate": "\ud800", "nested": [{"x": -(2**70)}]}
    await store.create_session(record("s"))
    await store.append("s", "tool_result", body)
    (entry,) = await store.entries("s")
    assert repr(entry.body) == repr(body)
    # measured as stored, so the limit checked before storing (`limits.check_stored`) does
    # not fail on what the store holds
    written = '{"huge":1208925819614629174706176,"lone surrogate":"\\ud800",'
    assert stored_size(body) == len(written + '"nested":[{"x":-1180591620717411303424}]}')
    limits.check_stored("prompt", body)


async def test_ten_megabyte_body(store: Store) -> None:
    body = {"type": "tool_result", "content": [{"type": "text", "text": "x" * TEN_MB + "é"}]}
    await store.create_session(record("s"))
    await store.append("s", "tool_result", body)
    (entry,) = await store.entries("s")
    assert entry.body == body


def circular() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (["not", "a", "dict"], "must be a dict"),
        ({1: "int key"}, "key 1 at \\$ is not a string"),
        ({"deep": [{"x": {2: 3}}], "big": 2**80}, "key 2 at \\$.deep\\[0\\].x is not a string"),
        ({"a": object()}, "object at \\$.a is not JSON"),
        ({"when": datetime.datetime(2025, 1, 1)}, "datetime at \\$.when is not JSON"),
        (circular(), "circular"),
    ],
)
async def test_bodies_that_are_not_json_are_refused(store: Store, body: Any, message: str) -> None:
    await store.create_session(record("s"))
    with pytest.raises(StoreError, match=message):
        await store.append("s", "user", body)
    assert await store.entries("s") == []


async def test_body_size_limit(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_BODY_BYTES", 1000)
    await store.create_session(record("s"))
    await store.append("s", "user", {"text": "x" * 900})
    with pytest.raises(StoreError, match="over 1000"):
        await store.append("s", "user", {"text": "x" * 1000})
    assert len(await store.entries("s")) == 1


async def test_body_is_captured_when_append_is_called(store: Store) -> None:
    await store.create_session(record("s"))
    body = {"text": "before"}
    pending = asyncio.create_task(store.append("s", "user", body))
    await asyncio.sleep(0)
    body["text"] = "after"
    await pending
    assert (await store.entries("s"))[0].body == {"text": "before"}


# --- listing -----------------------------------------------------------------------------------


async def test_append_bumps_updated_at_and_list_order(store: Store) -> None:
    for i, session_id in enumerate(["a", "b", "c"]):
        await store.create_session(record(session_id, updated_at=1000.0 + i))
    page, cursor = await store.list_sessions()
    assert [s.id for s in page] == ["c", "b", "a"] and cursor is None
    await store.append("a", "user", {})
    bumped = await store.get_session("a")
    assert bumped is not None and bumped.updated_at > 1002.0 and bumped.created_at == 1000.0
    page, _ = await store.list_sessions()
    assert [s.id for s in page] == ["a", "c", "b"]


async def test_ties_are_ordered_by_id_descending(store: Store) -> None:
    for session_id in ["m", "z", "a"]:
        await store.create_session(record(session_id, updated_at=5.0))
    page, _ = await store.list_sessions()
    assert [s.id for s in page] == ["z", "m", "a"]


async def test_cwd_filter_is_exact(store: Store) -> None:
    await store.create_session(record("1", "/work/a", 1.0))
    await store.create_session(record("2", "/work/b", 2.0))
    await store.create_session(record("3", "/work/a", 3.0))
    await store.create_session(record("4", "/work/a/sub", 4.0))
    page, _ = await store.list_sessions(cwd="/work/a")
    assert [s.id for s in page] == ["3", "1"]
    assert (await store.list_sessions(cwd="/nowhere")) == ([], None)


async def make_sessions(store: Store, count: int) -> list[str]:
    """`count` sessions with tied timestamps in threes (ties straddle page boundaries);
    returns their ids in list order."""
    for i in range(count):
        await store.create_session(record(f"s{i:03d}", updated_at=1000.0 + i // 3))
    return [f"s{i:03d}" for i in sorted(range(count), key=lambda i: (-(i // 3), -i))]


async def walk(store: Store, limit: int, cwd: str | None = None) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page, cursor = await store.list_sessions(cwd=cwd, cursor=cursor, limit=limit)
        pages.append([s.id for s in page])
        if cursor is None:
            return pages


async def test_pagination_has_no_duplicates_and_no_gaps(store: Store) -> None:
    expected = await make_sessions(store, 120)
    pages = await walk(store, 50)
    assert [len(p) for p in pages] == [50, 50, 20]
    assert [i for p in pages for i in p] == expected
    assert await walk(store, 120) == [expected]  # exactly one page: no empty page after it
    assert await walk(store, 1) == [[i] for i in expected]


async def test_pagination_with_cwd_filter(store: Store) -> None:
    for i in range(30):
        await store.create_session(record(f"s{i:02d}", f"/w{i % 2}", float(i)))
    pages = await walk(store, 4, cwd="/w1")
    assert [i for p in pages for i in p] == [f"s{i:02d}" for i in range(29, 0, -2)]


async def test_session_updated_behind_the_cursor_is_not_repeated(store: Store) -> None:
    expected = await make_sessions(store, 120)
    first, cursor = await store.list_sessions(limit=50)
    await store.append(first[10].id, "user", {})  # already returned: moves to the front
    rest = await store.list_sessions(cursor=cursor, limit=50)
    last = await store.list_sessions(cursor=rest[1], limit=50)
    assert last[1] is None
    seen = [s.id for s in first] + [s.id for s in rest[0]] + [s.id for s in last[0]]
    assert seen == expected


async def test_session_updated_ahead_of_the_cursor_is_skipped_once(store: Store) -> None:
    expected = await make_sessions(store, 120)
    first, cursor = await store.list_sessions(limit=50)
    moved = expected[100]  # not reached yet: jumps in front of the cursor
    await store.append(moved, "user", {})
    seen = [s.id for s in first]
    while cursor is not None:
        page, cursor = await store.list_sessions(cursor=cursor, limit=50)
        seen += [s.id for s in page]
    assert seen == [i for i in expected if i != moved]
    top, _ = await store.list_sessions(limit=1)
    assert [s.id for s in top] == [moved]


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64!",
        "",
        b64(b"not json"),
        b64(b'{"updated_at": 1, "id": "x"}'),
        b64(b"[1]"),
        b64(b'["x", "y"]'),
        b64(b'[true, "x"]'),
        b64(b'[NaN, "x"]'),
        b64(b"[1, 2]"),
        "é",
        "A" * 5000,
        42,
    ],
)
async def test_malformed_cursor(store: Store, cursor: Any) -> None:
    with pytest.raises(StoreError, match=r"malformed cursor .*pass the next_cursor"):
        await store.list_sessions(cursor=cursor)


@pytest.mark.parametrize("limit", [0, -1, MAX_PAGE_SIZE + 1, True, "5", 2.0])
async def test_bad_limit(store: Store, limit: Any) -> None:
    with pytest.raises(StoreError, match="limit must be"):
        await store.list_sessions(limit=limit)


# --- durability and concurrency ----------------------------------------------------------------


async def test_reopen_in_a_new_store(db: Path) -> None:
    first = await Store.open(db)
    await first.create_session(SessionRecord("s", "/w", ("/x",), ({"name": "m"},), "T"))
    await first.append("s", "user", {"text": "hi"})
    await first.close()
    second = await Store.open(db)
    try:
        assert await second.get_session("s") is not None
        assert [(e.seq, e.body) for e in await second.entries("s")] == [(1, {"text": "hi"})]
        assert await second.append("s", "assistant", {"text": "hello"}) == 2
    finally:
        await second.close()


CHILD = """
import asyncio, sys
from pathlib import Path
from acp_fsm.store import SessionRecord, Store

async def main():
    store = await Store.open(Path(sys.argv[1]))
    await store.create_session(SessionRecord("s", "/w"))
    while True:  # a turn that never ends: there is always an append in flight
        seq = await store.append("s", "assistant", {"text": "x" * 100_000})
        print(seq, flush=True)

asyncio.run(main())
"""


async def test_entry_survives_sigkill_right_after_append_returned(db: Path) -> None:
    wanted = 20
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        str(db),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None
    try:
        async with asyncio.timeout(WAIT_S):
            while int(await child.stdout.readline() or b"-1") < wanted:
                assert child.returncode is None
            child.send_signal(signal.SIGKILL)  # mid-turn: the next append is under way
            assert await child.wait() == -signal.SIGKILL
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    reopened = await Store.open(db)
    try:
        got = await reopened.entries("s")
    finally:
        await reopened.close()
    assert len(got) >= wanted
    assert [e.seq for e in got] == list(range(1, len(got) + 1))
    assert all(e.body["text"] == "x" * 100_000 for e in got)


async def test_two_stores_on_one_file_append_concurrently(db: Path) -> None:
    first, second = await Store.open(db), await Store.open(db)
    try:
        await first.create_session(record("s"))

        async def writer(store: Store, name: str) -> list[int]:
            return [await store.append("s", name, {"i": i}) for i in range(100)]

        seqs = await asyncio.gather(writer(first, "first"), writer(second, "second"))
        assert sorted(seqs[0] + seqs[1]) == list(range(1, 201))
        got = await second.entries("s")
        assert [e.seq for e in got] == list(range(1, 201))
        for name in ("first", "second"):
            assert [e.body["i"] for e in got if e.kind == name] == list(range(100))
    finally:
        await first.close()
        await second.close()


async def test_cancelled_callers_leave_a_consistent_transcript(store: Store) -> None:
    await store.create_session(record("s"))
    never_queued = asyncio.create_task(store.append("s", "user", {"i": -1}))
    never_queued.cancel()  # before its first step: nothing was queued
    tasks = [asyncio.create_task(store.append("s", "assistant", {"i": i})) for i in range(30)]
    await asyncio.sleep(0)  # every task has queued its append
    for task in tasks[::2]:
        task.cancel()
    outcomes = await asyncio.gather(never_queued, *tasks, return_exceptions=True)
    assert isinstance(outcomes[0], asyncio.CancelledError)
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes[1::2])
    got = await store.entries("s")
    # Queued work completes even when its caller is gone: all 30, in queue order.
    assert [(e.seq, e.body["i"]) for e in got] == [(i + 1, i) for i in range(30)]
    assert outcomes[2::2] == [i + 1 for i in range(1, 30, 2)]


# --- group commit and checkpoints ---------------------------------------------------------------


@contextmanager
def worker_held(store: Store) -> Iterator[None]:
    """The worker busy on a job of ours until the block ends: what is queued meanwhile waits
    behind it, as a turn's last writes wait behind a commit under way."""
    gate = threading.Event()
    held = store._worker.submit("hold", lambda conn: gate.wait(WAIT_S))
    try:
        yield
    finally:
        gate.set()
    assert not held.cancelled()


async def test_writes_queued_together_share_one_transaction(store: Store) -> None:
    await store.create_session(record("s"))
    with worker_held(store):
        written = [store.append_soon("s", "assistant", {"i": i}) for i in range(3)]
        seen = store._worker.submit("probe", lambda conn: conn.in_transaction, group=True)
        alone = store._worker.submit("probe", lambda conn: conn.in_transaction)
    assert await asyncio.gather(*written) == [1, 2, 3]
    assert await seen is True  # inside the group's transaction, beside the appends
    assert await alone is False  # not a group write: a transaction of its own
    assert [e.body["i"] for e in await store.entries("s")] == [0, 1, 2]


async def test_a_failing_write_in_a_group_undoes_only_itself(store: Store) -> None:
    await store.create_session(record("s"))

    def half_done(conn: sqlite3.Connection) -> None:
        with sessions_db.transaction(conn):  # as every operation that writes
            conn.execute(
                "INSERT INTO entries (session_id, seq, kind, body, created_at) "
                "VALUES ('s', 99, 'user', '{}', 0)"
            )
            raise ValueError("failed half-way")

    with worker_held(store):
        first = store.append_soon("s", "user", {"i": 1})
        gone = store.append_soon("nobody", "user", {"i": 0})
        broken = store._worker.submit("broken", half_done, group=True)
        last = store.append_soon("s", "user", {"i": 2})
    assert await first == 1
    assert await last == 2
    with pytest.raises(SessionGone):
        await gone
    with pytest.raises(StoreError, match="failed half-way"):
        await broken
    assert [(e.seq, e.body["i"]) for e in await store.entries("s")] == [(1, 1), (2, 2)]


async def test_a_caller_about_to_wait_commits_small_writes_itself(store: Store) -> None:
    """`hurry`: the thread idle, a few small writes are committed on the caller's thread at
    once (no thread switch before the answer that waits for them)."""
    await store.create_session(record("s"))
    first = store.append_soon("s", "assistant", {"i": 0})
    where = store._worker.submit("probe", lambda conn: threading.get_ident(), group=True)
    last = store.append_soon("s", "turn_end", {"i": 1})
    store.hurry()
    assert first.done() and where.done() and last.done()
    assert (first.result(), where.result(), last.result()) == (1, threading.get_ident(), 2)
    assert [e.body["i"] for e in await store.entries("s")] == [0, 1]


async def test_what_hurry_leaves_to_the_thread(store: Store) -> None:
    await store.create_session(record("s"))
    large = store.append_soon("s", "user", {"text": "x" * (store_module.HURRY_MAX_BYTES + 1)})
    store.hurry()
    assert not large.done()  # too large for the loop's thread
    assert await large == 1
    with worker_held(store):
        busy = store.append_soon("s", "user", {"i": 3})
        store.hurry()
        assert not busy.done()  # the thread is under way: never two at once
    assert await busy == 2


async def test_hurry_never_waits_for_another_writer(store: Store, db: Path) -> None:
    await store.create_session(record("s"))
    other = sqlite3.connect(db, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's transaction holds the write lock
        written = store.append_soon("s", "user", {"i": 1})
        store.hurry()
        assert not written.done()  # given back to the thread, which waits for the lock
        other.execute("COMMIT")
        assert await written == 1
    finally:
        other.close()


async def test_no_commit_copies_the_wal_into_the_database(db: Path) -> None:
    """SQLite's own checkpoint (at 1,000 WAL pages) is off: 5 MB of appends stay in the WAL
    until the worker is idle, so no commit an answer waits for pays for the copy."""
    opened = await Store.open(db)
    try:
        await opened.create_session(record("s"))
        for _ in range(5):
            await opened.append("s", "user", {"text": "x" * (1024 * 1024)})
        assert file_size(db) < 1024 * 1024
        assert file_size(f"{db}-wal") > 5 * 1024 * 1024
    finally:
        await opened.close()


async def test_the_worker_checkpoints_once_idle(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "CHECKPOINT_AFTER", 3)
    monkeypatch.setattr(store_module, "CHECKPOINT_IDLE_S", 0.01)
    opened = await Store.open(db)
    try:
        await opened.create_session(record("s"))
        for _ in range(3):
            await opened.append("s", "user", {"text": "x" * (1024 * 1024)})
        await wait_until(lambda: file_size(db) > 3 * 1024 * 1024, "a checkpoint")
        assert len(await opened.entries("s")) == 3
    finally:
        await opened.close()


# --- files -------------------------------------------------------------------------------------


async def test_modes_with_a_permissive_umask(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "sessions.db"
    with umask(0):
        opened = await Store.open(path)
        try:
            await opened.create_session(record("s"))
            await opened.append("s", "user", {"text": "secret"})
            sides = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
            assert all(side.exists() for side in sides)
            assert [mode(p) for p in (path, *sides)] == [0o600] * 3
        finally:
            await opened.close()
    assert mode(tmp_path / "a") == mode(tmp_path / "a" / "b") == 0o700
    assert mode(path) == 0o600


async def test_existing_file_is_tightened_and_existing_dir_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    make_file(path)
    os.chmod(tmp_path, 0o755)
    opened = await Store.open(path)
    await opened.close()
    assert mode(path) == 0o600
    assert mode(tmp_path) == 0o755


async def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"this is not SQLite " * 100)
    with pytest.raises(StoreError, match=f"open \\({path}\\): .*not a database"):
        await Store.open(path)
    await wait_for_no_thread(path)


async def test_unwritable_directory_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "file" / "sessions.db"
    (tmp_path / "file").write_text("a file where a directory should be")
    with pytest.raises(StoreError, match=f"open \\({path}\\)") as raised:
        await Store.open(path)
    assert str(tmp_path) not in raised.value.public  # what the editor may be told
    assert raised.value.public.startswith("open: ")


async def test_an_errors_public_form_names_no_file(store: Store) -> None:
    with pytest.raises(StoreError) as raised:
        await store.append("absent", "user", {"big": "x" * MAX_BODY_BYTES})
    assert str(store.path) in str(raised.value)  # for the log
    assert raised.value.public.startswith("append: entry body is ")
    assert str(store.path.parent) not in raised.value.public


# --- migrations --------------------------------------------------------------------------------


def schema(path: Path) -> set[str]:
    return {
        name
        for (name,) in sql(path, "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
    }


@pytest.mark.parametrize("existing", [False, True])
async def test_migrates_a_missing_or_empty_file(db: Path, existing: bool) -> None:
    if existing:
        make_file(db)
    opened = await Store.open(db)
    await opened.close()
    assert sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert sql(db, "PRAGMA journal_mode") == [("wal",)]
    assert schema(db) == {
        "sessions",
        "entries",
        "sessions_by_recency",
        "sessions_by_cwd",
        "entries_by_session",
        "turn_leases",
    }


async def test_migrations_apply_in_order_and_keep_data(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = await Store.open(db)
    await first.create_session(record("s"))
    await first.append("s", "user", {"text": "kept"})
    await first.close()
    added = ("ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",)
    monkeypatch.setattr(sessions_db, "MIGRATIONS", (*sessions_db.MIGRATIONS, added))
    second = await Store.open(db)
    try:
        assert [e.body for e in await second.entries("s")] == [{"text": "kept"}]
    finally:
        await second.close()
    assert sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]
    assert sql(db, "SELECT id, pinned FROM sessions") == [("s", 0)]


async def test_a_session_stored_before_model_titles_has_none(db: Path) -> None:
    db.parent.mkdir()
    with sqlite3.connect(db) as conn:
        for statement in (s for step in sessions_db.MIGRATIONS[:2] for s in step):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO sessions VALUES ('old', '/w', '[]', '[]', 'first prompt', 1.0, 2.0)"
        )
        conn.execute("PRAGMA user_version = 2")
    conn.close()
    opened = await Store.open(db)
    try:
        got = await opened.get_session("old")
        assert got is not None and (got.title, got.model_title) == ("first prompt", False)
    finally:
        await opened.close()


async def test_failed_migration_changes_nothing(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await (await Store.open(db)).close()
    broken = ("ALTER TABLE sessions ADD COLUMN half INTEGER", "SELECT * FROM nowhere")
    monkeypatch.setattr(sessions_db, "MIGRATIONS", (*sessions_db.MIGRATIONS, broken))
    with pytest.raises(StoreError, match="no such table: nowhere"):
        await Store.open(db)
    assert sql(db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert "half" not in {row[1] for row in sql(db, "PRAGMA table_info(sessions)")}


async def test_newer_schema_is_refused_untouched(db: Path) -> None:
    db.parent.mkdir()
    sql(db, "PRAGMA user_version = 99")
    with pytest.raises(
        StoreError, match=f"schema version 99, newer than this acp-fsm knows \\({SCHEMA_VERSION}\\)"
    ):
        await Store.open(db)
    await wait_for_no_thread(db)
    assert sql(db, "PRAGMA user_version") == [(99,)]
    assert sql(db, "PRAGMA journal_mode") == [("delete",)]


# --- the event loop ----------------------------------------------------------------------------


async def test_loop_keeps_ticking_during_a_ten_megabyte_append(store: Store) -> None:
    await store.create_session(record("s"))
    body = {"text": "x" * TEN_MB}
    async with Ticker() as ticker:
        await asyncio.sleep(0.01)
        before = ticker.ticks
        await store.append("s", "tool_result", body)
        during = ticker.ticks - before
    assert during >= 1, "the event loop did not run while the worker wrote 10 MB"


async def test_loop_keeps_ticking_while_waiting_for_another_writer(store: Store, db: Path) -> None:
    await store.create_session(record("s"))
    other = sqlite3.connect(db, isolation_level=None)  # another agent process, in effect
    try:
        other.execute("BEGIN IMMEDIATE")
        hold = 0.2
        asyncio.get_running_loop().call_later(hold, other.execute, "COMMIT")
        async with Ticker() as ticker:
            started = time.perf_counter()
            assert await store.append("s", "user", {}) == 1
            waited = time.perf_counter() - started
    finally:
        other.close()
    assert waited >= hold * 0.9  # it really waited for the lock (busy_timeout) ...
    assert ticker.ticks >= 20  # ... and the loop ran meanwhile


# --- lifecycle ---------------------------------------------------------------------------------


async def test_close_is_idempotent_and_later_calls_raise(db: Path) -> None:
    opened = await Store.open(db)
    assert repr(opened) == f"<Store {db} open>"
    await asyncio.gather(opened.close(), opened.close())
    await opened.close()
    assert repr(opened) == f"<Store {db} closed>"
    await wait_for_no_thread(db)
    for call in (
        opened.get_session("s"),
        opened.entries("s"),
        opened.list_sessions(),
        opened.append("s", "user", {}),
        opened.create_session(record("s")),
        opened.set_title("s", "t"),
        opened.delete_session("s"),
    ):
        with pytest.raises(StoreError, match="the store is closed"):
            await call


async def test_close_waits_for_queued_work(db: Path) -> None:
    opened = await Store.open(db)
    await opened.create_session(record("s"))
    tasks = [asyncio.create_task(opened.append("s", "user", {"i": i})) for i in range(20)]
    await asyncio.sleep(0)  # queued, not yet done
    await opened.close()
    assert await asyncio.gather(*tasks) == list(range(1, 21))
    reopened = await Store.open(db)
    try:
        assert len(await reopened.entries("s")) == 20
    finally:
        await reopened.close()


# ------------------------------------------------------------------------ turn leases


async def test_a_turn_lease_is_held_by_one_live_owner(db: Path) -> None:
    """One owner runs a session's turn; another is refused while it lives, and takes the
    lease over (told so) once it is gone. Releasing is per owner. A deleted session cannot be
    claimed."""
    store = await Store.open(db)
    try:
        await store.create_session(record("s"))
        await store.append("s", "user", {"text": "hi"})
        me, mine_too = leases.new_owner(), leases.new_owner()
        other = await asyncio.create_subprocess_exec("sleep", "30")
        try:
            host = me.split(":")[0]
            alive = f"{host}:{other.pid}:{leases._start_ticks(other.pid)}:n1"
            assert await store.claim_turn("s", alive) == Claim(None, 1)
            assert await store.claim_turn("s", me) == Claim(alive, 1)  # refused
        finally:
            other.kill()
            await other.wait()
        assert await store.claim_turn("s", me) == Claim(None, 1, taken_over=True)
        assert await store.claim_turn("s", mine_too) == Claim(me, 1)  # another turn of ours
        await store.release_turn_soon("s", mine_too)  # not its lease: nothing happens
        assert await store.claim_turn("s", mine_too) == Claim(me, 1)
        await store.renew_turn("s", me)
        await store.release_turn_soon("s", me)
        assert await store.claim_turn("s", mine_too) == Claim(None, 1)  # released cleanly
        await store.delete_session("s")
        with pytest.raises(SessionGone):
            await store.claim_turn("s", me)
    finally:
        await store.close()


def test_a_lease_lives_exactly_as_long_as_its_process_on_this_host() -> None:
    """A store stalled past the heartbeat (a backup, a lock held by hand, a suspended laptop)
    must not hand a running turn to another process: on this host only the process counts.
    Elsewhere, the heartbeat is all there is."""
    owner = leases.new_owner()
    assert leases.owner_alive(owner, time.time() - leases.STALE_S - 100)
    host, pid, start, nonce = owner.split(":")
    assert not leases.owner_alive(f"{host}:{pid}:{int(start) + 1}:{nonce}", time.time())
    elsewhere = f"another-host:{pid}:{start}:{nonce}"
    assert leases.owner_alive(elsewhere, time.time())
    assert not leases.owner_alive(elsewhere, time.time() - leases.STALE_S - 1)
    assert leases.purpose(leases.new_owner(leases.REPAIR)) == leases.REPAIR
    assert leases.purpose(owner) == leases.TURN
