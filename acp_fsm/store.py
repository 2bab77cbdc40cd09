"""Session store: every ACP session and its transcript, in one SQLite file.

`session/load` replays a conversation from here, also in a new process and after a `kill -9`
mid-turn, so each message is committed the moment it completes (ACP: `session/load`
replays the whole conversation).

How it is built, and why:
- One worker thread owns the `sqlite3` connection. Coroutines queue operations to it in order
  and get the outcome back on their own loop through `call_soon_threadsafe`; `sqlite3` releases
  the GIL while SQLite reads and writes, so the loop keeps streaming during a large write.
- Each operation is one transaction. Cancelling a caller that waits does not cancel its
  operation: once queued, it commits or fails whole, and `close()` waits for it.
- Group commit: writes queued together (the last entries of a turn) share one transaction
  (should one fail, it is undone and they run one by one, so a failure costs only its own
  write); none is told committed before that transaction's COMMIT. The thread is woken for
  them when the loop's step ends; a caller about to wait for a few small ones while the
  thread is idle commits them itself first (`Store.hurry`: a few hundred microseconds on the
  loop instead of two thread switches, and without waiting for another process's lock: that
  stays the thread's). Nothing else runs SQLite on the event loop.
- Checkpoints are the worker's, when it has been idle a moment (or the WAL has grown long), not
  SQLite's automatic one inside whichever commit crosses its threshold: a commit an answer waits
  for never copies the WAL into the database.
- WAL with `synchronous=NORMAL`: a committed transaction survives the death of the process; only
  an OS crash or a power cut can lose the last commits. `BEGIN IMMEDIATE` plus `busy_timeout`
  let several agent processes (an editor may spawn more than one) write the same file in turn.
- Bodies are encoded to JSON on the caller's side (the GIL is held while encoding wherever it
  runs, so orjson's speed is what keeps that short), which also snapshots the body as it was when
  `append()` was called.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson
import structlog

from acp_fsm import leases
from acp_fsm.bulk import paused_collector
from acp_fsm.sessions_db import (
    BUSY_TIMEOUT_MS,
    SESSION_COLUMNS,
    connect,
    default_path,
    get_session,
    insert_session,
    migrate,
    plain_json,
    session_from_row,
    session_row,
    transaction,
)
from acp_fsm.sessions_db import (
    MAX_BODY_BYTES as MAX_BODY_BYTES,
)
from acp_fsm.sessions_db import (
    SessionRecord as SessionRecord,
)
from acp_fsm.sessions_db import (
    StoreError as StoreError,
)

# The worker checkpoints once it has committed this many transactions and then been idle for
# CHECKPOINT_IDLE_S; past CHECKPOINT_FORCE commits it checkpoints between jobs regardless.
CHECKPOINT_AFTER = 64
CHECKPOINT_IDLE_S = 0.25
CHECKPOINT_FORCE = 1024
# Most writes one group commit takes, and the most bytes `_Worker.hurry` writes on the caller's
# thread (a few hundred microseconds at most).
MAX_GROUP = 64
HURRY_MAX_BYTES = 64 * 1024
DEFAULT_PAGE_SIZE = 50
log = structlog.get_logger("store")
MAX_PAGE_SIZE = 1000
MAX_CURSOR_CHARS = 1024  # a cursor holds one timestamp and one session id
# orjson would write dataclasses and datetimes as objects or strings that read back as something
# else; let them fail and reach the strict check instead.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


T = TypeVar("T")


class SessionGone(StoreError):
    """The session is not (or no longer) in the store: deleted, perhaps by another process."""


@dataclass(frozen=True, slots=True)
class Claim:
    """The outcome of `Store.claim_turn`.

    `holder` is the live process that runs the session's turn (None: the claim is granted).
    `last_seq` is the session's last entry then; `taken_over` says the previous holder died
    with its turn unfinished (its transcript may need repair)."""

    holder: str | None
    last_seq: int
    taken_over: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    """One committed message of a session's transcript."""

    seq: int  # 1, 2, 3 ... per session, in append order
    kind: str  # "user", "assistant", "tool_result", ... (opaque to the store)
    body: dict[str, Any]
    created_at: float


# --- JSON --------------------------------------------------------------------------------------


def _encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON. orjson first (fast); what it refuses but JSON holds exactly (integers
    beyond 64 bits, lone surrogates) goes through the stdlib encoder after a strict check, so a
    value is either stored exactly or refused. orjson writes NaN and infinities as null."""
    try:
        return orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:
        return plain_json(value).encode()


def _decode_json(data: bytes | str) -> Any:
    """A stored body: orjson first (a long session's load reads thousands); what it refuses
    and `_encode_json` may have written (integers beyond 64 bits, lone surrogates) goes
    through the standard library's decoder."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def stored_size(body: dict[str, Any]) -> int:
    """How many bytes `body` takes as an entry (`MAX_BODY_BYTES` bounds it)."""
    return len(_encode_json(body))


def _encode_body(body: Any) -> bytes:
    if not isinstance(body, dict):
        raise TypeError(f"an entry body must be a dict, not {type(body).__name__}")
    data = _encode_json(body)
    if len(data) > MAX_BODY_BYTES:
        raise ValueError(f"entry body is {len(data)} bytes of JSON, over {MAX_BODY_BYTES}")
    return data


# --- cursors -----------------------------------------------------------------------------------


def _encode_cursor(record: SessionRecord) -> str:
    """The sort key of the last row of a page; JSON keeps the float exact."""
    return base64.urlsafe_b64encode(orjson.dumps([record.updated_at, record.id])).decode("ascii")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    """Raise ValueError/TypeError saying why `cursor` is not one of ours."""
    if not isinstance(cursor, str):
        raise TypeError(f"a cursor is a string, not {type(cursor).__name__}")
    if len(cursor) > MAX_CURSOR_CHARS:
        raise ValueError(f"longer than {MAX_CURSOR_CHARS} characters")
    raw = base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True)
    key = json.loads(raw)
    if not (
        isinstance(key, list)
        and len(key) == 2
        and isinstance(key[0], int | float)
        and not isinstance(key[0], bool)
        and math.isfinite(key[0])
        and isinstance(key[1], str)
    ):
        raise ValueError("not a [updated_at, id] sort key")
    return float(key[0]), key[1]


# --- operations: plain functions run on the worker thread, one transaction each -----------------


def _rewrite(conn: sqlite3.Connection, session_id: str, seq: int, body: bytes) -> None:
    with transaction(conn):
        changed = conn.execute(
            "UPDATE entries SET body = CAST(? AS TEXT) WHERE session_id = ? AND seq = ?",
            (body, session_id, seq),
        )
        if changed.rowcount == 0:
            _check_session(conn, session_id)
            raise StoreError(f"no entry {seq} in session {session_id!r}")


def _append(conn: sqlite3.Connection, session_id: str, kind: str, body: bytes) -> int:
    now = time.time()
    with transaction(conn):
        # max(): a clock stepping back must not move the session down the list.
        bumped = conn.execute(
            "UPDATE sessions SET updated_at = max(updated_at, ?) WHERE id = ?", (now, session_id)
        )
        if bumped.rowcount == 0:
            raise SessionGone(f"no session {session_id!r}")
        (seq,) = conn.execute(
            "SELECT coalesce(max(seq), 0) + 1 FROM entries WHERE session_id = ?", (session_id,)
        ).fetchone()
        conn.execute(
            "INSERT INTO entries (session_id, seq, kind, body, created_at) "
            "VALUES (?, ?, ?, CAST(? AS TEXT), ?)",
            (session_id, seq, kind, body, now),
        )
    return int(seq)


def _set_title(conn: sqlite3.Connection, session_id: str, title: str) -> None:
    with transaction(conn):
        changed = conn.execute(
            "UPDATE sessions SET title = ? WHERE id = ? AND title IS NULL", (title, session_id)
        )
        if changed.rowcount == 0:
            _check_session(conn, session_id)


def _set_model_title(conn: sqlite3.Connection, session_id: str, title: str) -> float | None:
    with transaction(conn):
        changed = conn.execute(
            "UPDATE sessions SET title = ?, model_title = 1 WHERE id = ? AND model_title = 0",
            (title, session_id),
        )
        if changed.rowcount == 0:
            _check_session(conn, session_id)
            return None
        (updated_at,) = conn.execute(
            "SELECT updated_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
    return float(updated_at)


def _set_user_title(
    conn: sqlite3.Connection, session_id: str, title: str
) -> tuple[str, float] | None:
    with transaction(conn):
        changed = conn.execute(
            "UPDATE sessions SET title = ?, model_title = 2 WHERE id = ?", (title, session_id)
        )
        if changed.rowcount == 0:
            return None
        (updated_at,) = conn.execute(
            "SELECT updated_at FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
    return title, float(updated_at)


def _check_session(conn: sqlite3.Connection, session_id: str) -> None:
    """SessionGone unless `session_id` is stored (another process may have deleted it)."""
    if get_session(conn, session_id) is None:
        raise SessionGone(f"no session {session_id!r}")


def _claim_turn(conn: sqlite3.Connection, session_id: str, owner: str, now: float) -> Claim:
    with transaction(conn):
        _check_session(conn, session_id)
        row = conn.execute(
            "SELECT owner, heartbeat_at FROM turn_leases WHERE session_id = ?", (session_id,)
        ).fetchone()
        (last,) = conn.execute(
            "SELECT coalesce(max(seq), 0) FROM entries WHERE session_id = ?", (session_id,)
        ).fetchone()
        held = row is not None and row[0] != owner
        if held and leases.owner_alive(row[0], row[1], now):
            return Claim(row[0], int(last))
        conn.execute(
            "INSERT OR REPLACE INTO turn_leases (session_id, owner, heartbeat_at) VALUES (?, ?, ?)",
            (session_id, owner, now),
        )
        return Claim(None, int(last), taken_over=held)


def _renew_turn(conn: sqlite3.Connection, session_id: str, owner: str, now: float) -> bool:
    with transaction(conn):
        return (
            conn.execute(
                "UPDATE turn_leases SET heartbeat_at = ? WHERE session_id = ? AND owner = ?",
                (now, session_id, owner),
            ).rowcount
            > 0
        )


def _release_turn(conn: sqlite3.Connection, session_id: str, owner: str) -> None:
    with transaction(conn):
        conn.execute(
            "DELETE FROM turn_leases WHERE session_id = ? AND owner = ?", (session_id, owner)
        )


def _entries(conn: sqlite3.Connection, session_id: str) -> list[Entry]:
    rows = conn.execute(
        "SELECT seq, kind, body, created_at FROM entries WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    with paused_collector():
        return [
            Entry(seq, kind, _decode_json(body), created_at) for seq, kind, body, created_at in rows
        ]


def _list_sessions(
    conn: sqlite3.Connection,
    cwd: str | None,
    after: tuple[float, str] | None,
    limit: int,
    prompted: bool,
) -> tuple[list[SessionRecord], str | None]:
    """Keyset pagination on (updated_at, id), both descending, served by the indexes."""
    clauses: list[str] = []
    params: list[Any] = []
    if prompted:  # a prompt is among a session's first entries: a short index walk
        clauses.append(
            "EXISTS (SELECT 1 FROM entries WHERE entries.session_id = sessions.id "
            "AND entries.kind = 'user')"
        )
    if cwd is not None:
        clauses.append("cwd = ?")
        params.append(cwd)
    if after is not None:
        clauses.append("(updated_at, id) < (?, ?)")
        params.extend(after)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions{where} ORDER BY updated_at DESC, id DESC LIMIT ?",
        (*params, limit + 1),  # one more row tells whether another page exists
    ).fetchall()
    page = [session_from_row(row) for row in rows[:limit]]
    return page, (_encode_cursor(page[-1]) if len(rows) > limit else None)


def _delete_session(conn: sqlite3.Connection, session_id: str) -> bool:
    with transaction(conn):  # entries go with it: ON DELETE CASCADE
        return conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0


# --- the worker thread -------------------------------------------------------------------------


def _failure(what: str, path: Path, cause: BaseException, *, named: bool = True) -> StoreError:
    """The one shape of every error: operation, file, cause (with its type when `named` and it
    is a foreign error, e.g. "OperationalError: database is locked"); its `public` form leaves
    out the file, also where the cause names it (an OSError's filename)."""
    if isinstance(cause, StoreError):
        reason, public = str(cause), cause.public
    else:
        reason = public = str(cause)
        if isinstance(cause, OSError) and cause.strerror:
            public = cause.strerror
        if named:
            reason, public = (f"{type(cause).__name__}: {text}" for text in (reason, public))
    kind = type(cause) if isinstance(cause, StoreError) else StoreError  # SessionGone stays
    error = kind(f"{what} ({path}): {reason}", f"{what}: {public}")
    error.__cause__ = cause
    return error


def _closed(what: str, path: Path) -> StoreError:
    return StoreError(f"{what} ({path}): the store is closed", f"{what}: the store is closed")


@dataclass(slots=True)
class _Job:
    what: str  # the operation's name, for error messages
    op: Callable[[sqlite3.Connection], Any] | None  # None: close the connection and stop
    loop: asyncio.AbstractEventLoop | None  # where the outcome goes; None: nobody waits
    future: asyncio.Future[Any] | None
    group: bool = False  # a short write that may share its neighbours' transaction
    size: int = 0  # bytes it writes, for `_Worker.hurry`

    def deliver(self, result: Any, error: BaseException | None) -> None:
        """Hand the outcome to the waiting coroutine's loop (called on the worker thread)."""
        if self.loop is None or self.future is None:
            return
        with suppress(RuntimeError):  # that loop is closed: nobody is left to tell
            self.loop.call_soon_threadsafe(_settle, self.future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the caller's loop. A cancelled caller has gone; its operation still happened."""
    if future.done():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class _Worker:
    """The thread that owns the connection and runs queued operations in order.

    The connection is opened by the first operation. A stop job closes it; jobs queued behind
    the stop are answered (stops with success, others with "closed"), so no caller ever hangs.
    Jobs wait in `_jobs` under `_ready`; whoever runs some (the thread, or a caller's `hurry`)
    takes them from the front and marks the connection `_busy` meanwhile, so they run one at a
    time and in order.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection | None = None) -> None:
        """`conn`: a connection to `path` opened already (by the startup path), to go on with."""
        self.path = path
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Condition()  # guards _jobs, _busy, _stopped, _conn
        self._busy = False
        self._stopped = False
        self._conn = conn
        self._wake_soon = False  # a wake-up of the thread is scheduled on the caller's loop
        self._commits = 0  # transactions since the last checkpoint
        self._thread = threading.Thread(target=self._run, name=f"acp-fsm store {path}", daemon=True)
        self._thread.start()

    async def run(
        self,
        what: str,
        op: Callable[[sqlite3.Connection], T],
        *,
        group: bool = False,
        size: int = 0,
    ) -> T:
        """Queue `op` and wait for its outcome. Cancelling the wait leaves the op queued."""
        return cast(T, await self.submit(what, op, group=group, size=size))

    async def stop(self) -> None:
        """Finish everything queued so far, close the connection, end the thread."""
        await self.submit("close", None)

    def stop_soon(self) -> None:
        """`stop` for when nobody can wait (an `open` that failed or was cancelled)."""
        self._put(_Job("close", None, None, None))

    def submit(
        self,
        what: str,
        op: Callable[[sqlite3.Connection], Any] | None,
        *,
        group: bool = False,
        size: int = 0,
    ) -> asyncio.Future[Any]:
        """Queue `op` now; the future settles when it has run (a `group` write: committed with
        the writes queued beside it). The thread is woken for a group write only once the
        caller's loop step ends, so that `hurry` may commit it first."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        job = _Job(what, op, loop, future, group, size)
        if not self._put(job, wake=not group):
            if op is None:
                future.set_result(None)
            else:
                future.set_exception(_closed(what, self.path))
        elif group and not self._wake_soon:
            self._wake_soon = True
            loop.call_soon(self._wake)
        return future

    def _put(self, job: _Job, *, wake: bool = True) -> bool:
        with self._ready:
            if self._stopped:
                return False
            self._jobs.append(job)
            if wake:
                self._ready.notify()
            return True

    def _wake(self) -> None:
        self._wake_soon = False
        with self._ready:
            if self._jobs:
                self._ready.notify()

    def hurry(self) -> None:
        """Commit the queued writes now, on the caller's thread, when the thread is idle and
        they are a few small group writes: their caller is about to wait, and would wait for
        two thread switches (and for the thread to be scheduled at all, on a busy machine)
        longer than the commit takes. Never waits for another process: if one holds the
        file's write lock, the writes go back to the thread, which does."""
        with self._ready:
            conn, jobs = self._conn, self._jobs
            if (
                self._busy
                or conn is None
                or not jobs
                or len(jobs) > MAX_GROUP
                or sum(job.size for job in jobs) > HURRY_MAX_BYTES
                or not all(job.group for job in jobs)
            ):
                return
            group = list(jobs)
            jobs.clear()
            self._busy = True
        outcomes = None
        try:
            outcomes = _run_group(conn, group, self.path, wait=False)
        finally:
            with self._ready:
                self._busy = False
                if outcomes is None:  # not run: the thread runs them, in their place
                    self._jobs.extendleft(reversed(group))
                else:
                    self._commits += 1
                # The thread is woken only when it has work: jobs, or a checkpoint its wait
                # must now time out for. Woken for nothing, it would take the GIL from the
                # caller, who is about to answer (a cancelled prompt's answer waits on this).
                if self._jobs or self._commits >= CHECKPOINT_AFTER:
                    self._ready.notify()
        if outcomes is None:
            return
        for job, (result, error) in zip(group, outcomes, strict=True):
            assert job.future is not None
            _settle(job.future, result, error)

    def _run(self) -> None:
        while (group := self._take()) is not None:
            try:
                if self._conn is None:
                    self._conn = connect(self.path)
                outcomes = _run_group(self._conn, group, self.path, wait=True)
            except Exception as exc:  # the connection could not be opened
                outcomes = [(None, _failure(job.what, self.path, exc)) for job in group]
            assert outcomes is not None
            with self._ready:
                self._busy = False
                self._commits += 1
                self._ready.notify()
            for job, (result, error) in zip(group, outcomes, strict=True):
                job.deliver(result, error)
        self._close()

    def _take(self) -> list[_Job] | None:
        """The next job, or the group writes at the front of the queue (the connection is then
        busy); None at a stop, which stays queued. Checkpoints first when the queue has stayed
        empty a moment after enough commits, or at once when they have piled up."""
        while True:
            with self._ready:
                idle = False
                while self._busy or not self._jobs:
                    if not self._busy and self._checkpoint_due(idle):
                        break
                    idle = not self._ready.wait(
                        CHECKPOINT_IDLE_S if self._commits >= CHECKPOINT_AFTER else None
                    )
                else:
                    if not self._checkpoint_due(False):
                        return self._front()
                self._busy = True
            assert self._conn is not None
            self._checkpoint(self._conn)
            with self._ready:
                self._busy = False

    def _checkpoint_due(self, idle: bool) -> bool:
        return self._conn is not None and (
            self._commits >= CHECKPOINT_FORCE or (idle and self._commits >= CHECKPOINT_AFTER)
        )

    def _front(self) -> list[_Job] | None:
        """Under `_ready`: take the front job, and the group writes behind a group write."""
        if self._jobs[0].op is None:
            return None
        group = [self._jobs.popleft()]
        while group[0].group and self._jobs and self._jobs[0].group and len(group) < MAX_GROUP:
            group.append(self._jobs.popleft())
        self._busy = True
        return group

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL into the database as far as no reader still needs it (PASSIVE: never
        waits for another process); what is left goes at the next one."""
        self._commits = 0
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # nothing is lost: the WAL holds every commit
            log.warning("store_checkpoint_failed", error=str(exc))

    def _close(self) -> None:
        """At the stop: close the connection, answer the stops and whatever came behind."""
        error: StoreError | None = None
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error as exc:
                error = _failure("close", self.path, exc)
        with self._ready:
            self._stopped = True
            late, self._jobs = list(self._jobs), deque()
        for job in late:
            if job.op is None:
                job.deliver(None, error)
            else:
                job.deliver(None, _closed(job.what, self.path))


def _run_group(
    conn: sqlite3.Connection, group: list[_Job], path: Path, *, wait: bool
) -> list[tuple[Any, BaseException | None]] | None:
    """Run one job, or group writes in one transaction; their outcomes once committed. When
    one fails the transaction is undone and they run again one by one, so a failure costs only
    its own write. Without `wait`: None, and nothing done, rather than wait for another
    connection's write lock, or rather than run them one by one (the thread does that)."""
    if wait and len(group) == 1:
        return [_outcome(conn, group[0], path)]  # its own transaction, if it writes
    if not wait:
        conn.execute("PRAGMA busy_timeout = 0")
    try:
        with transaction(conn):
            results = [job.op(conn) for job in group if job.op is not None]
    except Exception:
        return [_outcome(conn, job, path) for job in group] if wait else None
    finally:
        if not wait:
            with suppress(sqlite3.Error):  # what was committed stays committed
                conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return [(result, None) for result in results]


def _outcome(conn: sqlite3.Connection, job: _Job, path: Path) -> tuple[Any, BaseException | None]:
    assert job.op is not None
    try:
        return job.op(conn), None
    except Exception as exc:
        return None, _failure(job.what, path, exc)


# --- the store ---------------------------------------------------------------------------------


class Store:
    """Persistent ACP sessions and transcripts. Make one with `await Store.open(path)` and
    `await store.close()` it; every method is a coroutine that never blocks the event loop
    (`hurry` alone runs on it: a few small writes, never waiting for a lock)."""

    def __init__(
        self, path: Path, worker: _Worker, scrub: Callable[[bytes], bytes] | None = None
    ) -> None:
        """Use `Store.open`."""
        self._path = path
        self._worker = worker
        self._scrub = scrub
        self._closed = False

    def __repr__(self) -> str:
        return f"<Store {self._path} {'closed' if self._closed else 'open'}>"

    @property
    def path(self) -> Path:
        return self._path

    @classmethod
    async def open(
        cls,
        path: Path | None = None,
        *,
        scrub: Callable[[bytes], bytes] | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> Store:
        """Open (creating dirs 0700 and the file 0600) and migrate the database at `path`,
        by default `default_path()`. StoreError if it cannot, or if its schema is newer.
        `scrub` filters every encoded body and title before it is written (secrets out);
        `conn`, a connection to that file already open (`sessions_db.create_session`), is
        the one the store goes on with."""
        path = (default_path() if path is None else Path(path)).expanduser().absolute()
        worker = _Worker(path, conn)
        try:
            await worker.run("open", migrate)
        except BaseException:
            worker.stop_soon()
            raise
        return cls(path, worker, scrub)

    async def close(self) -> None:
        """Wait for every queued operation, then close. Idempotent; later calls raise."""
        self._closed = True
        await self._worker.stop()

    async def create_session(self, record: SessionRecord) -> None:
        """Store a new session; StoreError if the id exists. Zero timestamps mean now."""
        with self._refusing("create_session"):
            row = session_row(record, self._scrub)
        await self._call("create_session", lambda conn: insert_session(conn, row))

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._call("get_session", lambda conn: get_session(conn, session_id))

    async def append(self, session_id: str, kind: str, body: dict[str, Any]) -> int:
        """Commit one entry and return its seq (1, 2, ...); bumps the session's updated_at.
        Committed when this returns; also committed if the caller is cancelled meanwhile."""
        with self._refusing("append"):
            data = self._encode(body)
        return await self._call(
            "append", lambda conn: _append(conn, session_id, kind, data), group=True, size=len(data)
        )

    def append_soon(self, session_id: str, kind: str, body: dict[str, Any]) -> asyncio.Future[int]:
        """`append` without waiting: queued now (after everything queued before it), committed
        by the worker shortly after; the future gives its seq or its StoreError. For writes
        that must not delay an answer (the entries of a cancelled turn)."""
        if self._closed:
            raise _closed("append", self._path)
        with self._refusing("append"):
            data = self._encode(body)
        return self._worker.submit(
            "append", lambda conn: _append(conn, session_id, kind, data), group=True, size=len(data)
        )

    def rewrite_soon(self, session_id: str, seq: int, body: dict[str, Any]) -> asyncio.Future[None]:
        """Replace the body of entry `seq`, queued like `append_soon` (the one amendment the
        transcript knows: a cancel marking the turn's last assistant message)."""
        if self._closed:
            raise _closed("rewrite", self._path)
        with self._refusing("rewrite"):
            data = self._encode(body)
        return self._worker.submit(
            "rewrite",
            lambda conn: _rewrite(conn, session_id, seq, data),
            group=True,
            size=len(data),
        )

    async def set_title(self, session_id: str, title: str) -> None:
        """Set the title if the session has none yet (the first title sticks)."""
        if self._scrub is not None:
            title = self._scrub(title.encode()).decode()
        await self._call("set_title", lambda conn: _set_title(conn, session_id, title), group=True)

    async def set_model_title(self, session_id: str, title: str) -> float | None:
        """Replace the title by the one a model made, once a session: the session's
        `updated_at` (a title is no activity: it stays), or None when a model made its title
        before, in this process or another. SessionGone when the session is not stored."""
        if self._scrub is not None:
            title = self._scrub(title.encode()).decode()
        return await self._call(
            "set_model_title", lambda conn: _set_model_title(conn, session_id, title), group=True
        )

    async def set_user_title(self, session_id: str, title: str) -> tuple[str, float] | None:
        """Set the title the user chose (`session/set_title`): it replaces any, and neither
        the first prompt's words nor a model replaces it after. The title as stored
        (secrets scrubbed) and the session's `updated_at`; None when no such session is
        stored."""
        if self._scrub is not None:
            title = self._scrub(title.encode()).decode()
        return await self._call(
            "set_user_title", lambda conn: _set_user_title(conn, session_id, title), group=True
        )

    def _encode(self, body: dict[str, Any]) -> bytes:
        data = _encode_body(body)
        return data if self._scrub is None else self._scrub(data)

    async def claim_turn(self, session_id: str, owner: str) -> Claim:
        """Take the lease to run a turn of `session_id` as `owner`, unless another live process
        holds it (then `Claim.holder` names it). SessionGone when there is no such session."""
        return await self._call(
            "claim_turn", lambda conn: _claim_turn(conn, session_id, owner, time.time())
        )

    async def renew_turn(self, session_id: str, owner: str) -> bool:
        """The heartbeat of a held lease; False when `owner` does not hold it (any more)."""
        return await self._call(
            "renew_turn", lambda conn: _renew_turn(conn, session_id, owner, time.time()), group=True
        )

    def release_turn_soon(self, session_id: str, owner: str) -> asyncio.Future[None]:
        """Queue the release of a held lease (like `append_soon`: a later claim, queued after
        it, sees it released)."""
        if self._closed:
            raise _closed("release_turn", self._path)
        return self._worker.submit(
            "release_turn", lambda conn: _release_turn(conn, session_id, owner), group=True
        )

    async def entries(self, session_id: str) -> list[Entry]:
        """The transcript in seq order; empty for an unknown session."""
        return await self._call("entries", lambda conn: _entries(conn, session_id))

    async def list_sessions(
        self,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        *,
        prompted: bool = False,
    ) -> tuple[list[SessionRecord], str | None]:
        """One page, newest first (updated_at, then id, both descending), only sessions whose
        cwd is exactly `cwd` when given, only sessions holding a prompt (a `user` entry) when
        `prompted`. Returns the page and the cursor of the next one (None
        after the last). Keyset pagination: a session updated during a walk moves to the front,
        so the walk returns it at most once (never twice); every other session exactly once."""
        with self._refusing("list_sessions"):
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise TypeError(f"limit must be an int, not {type(limit).__name__}")
            if not 1 <= limit <= MAX_PAGE_SIZE:
                raise ValueError(f"limit must be between 1 and {MAX_PAGE_SIZE}, not {limit}")
            try:
                after = None if cursor is None else _decode_cursor(cursor)
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"malformed cursor {str(cursor)[:60]!r} ({exc}); pass the next_cursor "
                    "of a previous page, or None for the first page"
                ) from exc
        return await self._call(
            "list_sessions", lambda conn: _list_sessions(conn, cwd, after, limit, prompted)
        )

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session and its entries; False if there was none."""
        return await self._call("delete_session", lambda conn: _delete_session(conn, session_id))

    async def _call(
        self,
        what: str,
        op: Callable[[sqlite3.Connection], T],
        *,
        group: bool = False,
        size: int = 0,
    ) -> T:
        if self._closed:
            raise _closed(what, self._path)
        return await self._worker.run(what, op, group=group, size=size)

    def hurry(self) -> None:
        """Commit the writes queued so far now, on this thread, if that is quicker than the
        worker (a few small writes, nothing else queued or under way); a caller about to wait
        for them calls it first. Never blocks for long: never waits for another process."""
        self._worker.hurry()

    @contextmanager
    def _refusing(self, what: str) -> Iterator[None]:
        """Arguments checked on the caller's side fail with the same StoreError shape."""
        try:
            yield
        except (TypeError, ValueError) as exc:
            raise _failure(what, self._path, exc, named=False) from exc
