"""The session store's SQLite file: where it is, its schema and migrations, how a connection
to it is configured, and the rows of its sessions, as plain functions on a connection.

Nothing here imports more than the standard library: the startup path (`acp_fsm.startup`)
creates the first session's row with these functions before the event loop and the store's
worker (`acp_fsm.store`) exist, and the worker then goes on with the same connection.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

APP_DIR = "acp-fsm"
DB_FILE = "sessions.db"
DIR_MODE = 0o700  # the XDG spec's mode for a data directory we create
FILE_MODE = 0o600  # transcripts hold code and prompts; SQLite gives -wal/-shm the same mode
# A writer waits this long for another process's transaction before failing. The longest
# transaction is one maximal append (tens of ms per 10 MB), so this is generous.
BUSY_TIMEOUT_MS = 10_000
# After a checkpoint the WAL is cut back to this size instead of keeping its peak (large appends).
WAL_SIZE_LIMIT_BYTES = 32 * 1024 * 1024
# Largest encoded entry body: the same bound as the largest inbound ACP message
# (protocol.framing.MAX_LINE_BYTES).
MAX_BODY_BYTES = 64 * 1024 * 1024
# Deepest nesting accepted on the stdlib path; below Python's recursion limit, which bounds both
# `json.dumps` and `json.loads` (orjson itself stops at 255 levels).
MAX_JSON_DEPTH = 500

# Schema migrations in order: MIGRATIONS[n] takes a database from `user_version` n to n + 1.
# A released migration is never edited; a schema change appends one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY NOT NULL,
            cwd TEXT NOT NULL,
            additional_directories TEXT NOT NULL,  -- JSON array of strings
            mcp_servers TEXT NOT NULL,             -- JSON array, as given
            title TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        # list_sessions: newest first, optionally for one cwd, keyset pagination.
        "CREATE INDEX sessions_by_recency ON sessions (updated_at DESC, id DESC)",
        "CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC)",
        """CREATE TABLE entries (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL,                    -- JSON object
            created_at REAL NOT NULL
        )""",
        # A rowid table (bodies can be megabytes) with the (session, seq) key as an index.
        "CREATE UNIQUE INDEX entries_by_session ON entries (session_id, seq)",
    ),
    (
        # The process running a session's turn (acp_fsm.leases): one row while it runs.
        """CREATE TABLE turn_leases (
            session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            owner TEXT NOT NULL,                   -- host:pid:start of the process
            heartbeat_at REAL NOT NULL
        )""",
    ),
    (
        # 1 once the title is the one a model made of the session (acp_fsm.session.naming):
        # made once, whichever process has the session open; 2 once it is the one the user
        # set (session/set_title), which nothing made replaces.
        "ALTER TABLE sessions ADD COLUMN model_title INTEGER NOT NULL DEFAULT 0",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

SESSION_COLUMNS = (
    "id, cwd, additional_directories, mcp_servers, title, created_at, updated_at, model_title"
)


class StoreError(Exception):
    """Anything that went wrong in the store. The message names the operation, file and
    cause, for the log; `public` says the same without the file, for what the editor is told
    (no local path of the agent's data leaves the process)."""

    def __init__(self, message: str, public: str | None = None) -> None:
        super().__init__(message)
        self.public = message if public is None else public


class SessionRecord(NamedTuple):
    """One ACP session. Zero timestamps on `create_session` mean "now"."""

    id: str
    cwd: str
    additional_directories: tuple[str, ...] = ()
    mcp_servers: tuple[dict[str, Any], ...] = ()  # as given, less secrets (JSON)
    title: str | None = None
    created_at: float = 0.0  # unix seconds
    updated_at: float = 0.0
    model_title: bool = False  # the title is a model's or the user's: none is made for it


def default_path() -> Path:
    """`$ACP_FSM_HOME/sessions.db`; ACP_FSM_HOME defaults to `$XDG_DATA_HOME/acp-fsm`, else
    `~/.local/share/acp-fsm`. Empty variables count as unset, and so does a relative
    XDG_DATA_HOME (the XDG spec says to ignore it)."""
    get = os.environ.get
    return _data_path(get("ACP_FSM_HOME", ""), get("XDG_DATA_HOME", ""), get("HOME"))


def changes_path() -> Path:
    """`$ACP_FSM_HOME/changes`: where the sets of file changes in flight are journaled
    (`acp_fsm.system.changes`), beside the store."""
    return default_path().with_name("changes")


@lru_cache(maxsize=8)
def _data_path(home: str, xdg: str, _user_home: str | None) -> Path:
    """`default_path` for these variables (HOME: what `~` is), made once (the credentials'
    path is asked at each prompt)."""
    if home:
        return Path(home).expanduser() / DB_FILE
    data = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return data / APP_DIR / DB_FILE


def check_json(value: Any) -> None:
    """Raise TypeError/ValueError naming the first part of `value` that is not plain JSON (the
    stdlib encoder would turn a non-string key into a string instead of refusing it)."""
    stack: list[tuple[Any, str, int]] = [(value, "$", 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"nested deeper than {MAX_JSON_DEPTH} levels (or circular) at {where}")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise TypeError(f"key {key!r} at {where} is not a string")
                stack.append((child, f"{where}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"{item!r} at {where} is not a JSON number")
        elif item is not None and not isinstance(item, str | int | float):
            raise TypeError(f"{type(item).__name__} at {where} is not JSON")


def plain_json(value: Any) -> str:
    """`value` as compact ASCII JSON, exactly, or TypeError/ValueError naming the first part of
    it that is not plain JSON (`check_json`)."""
    check_json(value)
    return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` takes the write lock up front, so a writer in another process makes us
    wait (busy_timeout) here instead of failing half-way with SQLITE_BUSY. Inside a group commit
    the group's transaction (a failure undoes the whole group, which is then run one by one)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def make_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents with DIR_MODE, whatever the umask."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=DIR_MODE)
        except FileExistsError:  # another process was quicker; leave its mode alone
            continue
        path.chmod(DIR_MODE)


def connect(path: Path) -> sqlite3.Connection:
    """Create the file with FILE_MODE (and tighten an existing one), then connect and configure.
    A database from a newer schema is refused before anything is written to it."""
    make_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    # We issue BEGIN/COMMIT ourselves. The worker's thread and, in `_Worker.hurry`, the loop's
    # use it, one at a time (`_Worker._busy`).
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        check_version(conn)
        (mode,) = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode != "wal":
            raise StoreError(f"SQLite refused WAL mode (journal_mode is {mode!r})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the worker's own (_Worker._checkpoint)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES}")
    except BaseException:
        conn.close()
        raise
    return conn


def check_version(conn: sqlite3.Connection) -> int:
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > len(MIGRATIONS):
        raise StoreError(
            f"the database has schema version {version}, newer than this acp-fsm knows "
            f"({len(MIGRATIONS)}); it was written by a newer acp-fsm: upgrade, or use another file"
        )
    return int(version)


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the missing migrations in one transaction. The version is read again under the
    write lock: another process may have migrated the file meanwhile."""
    if check_version(conn) == len(MIGRATIONS):
        return
    with transaction(conn):
        version = check_version(conn)
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")


def session_from_row(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        cwd=row[1],
        additional_directories=tuple(json.loads(row[2])),
        mcp_servers=tuple(json.loads(row[3])),
        title=row[4],
        created_at=row[5],
        updated_at=row[6],
        model_title=bool(row[7]),
    )


def session_row(
    record: SessionRecord, scrub: Callable[[bytes], bytes] | None = None
) -> tuple[Any, ...]:
    """The columns of a new session, checked and JSON-encoded on the caller's side; `scrub`
    filters the texts (its cwd, directories and MCP servers: a server's env may hold a
    configured key)."""
    if not isinstance(record.id, str) or not record.id:
        raise ValueError(f"a session id must be a non-empty string, not {record.id!r}")
    if not isinstance(record.cwd, str):
        raise TypeError(f"cwd must be a string, not {type(record.cwd).__name__}")
    texts: tuple[str, ...] = (
        record.cwd,
        plain_json(list(record.additional_directories)),
        plain_json(list(record.mcp_servers)),
    )
    if scrub is not None:
        texts = tuple(scrub(text.encode()).decode() for text in texts)
    return (
        record.id,
        *texts,
        record.title,
        record.created_at,
        record.updated_at,
        int(record.model_title),
    )


def insert_session(conn: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    session_id, cwd, directories, servers, title, created_at, updated_at, model_title = row
    created_at = created_at or time.time()
    with transaction(conn):
        if get_session(conn, session_id) is not None:
            raise StoreError(f"session {session_id!r} already exists")
        conn.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) "
            "VALUES (?, ?, CAST(? AS TEXT), CAST(? AS TEXT), ?, ?, ?, ?)",
            (
                session_id,
                cwd,
                directories,
                servers,
                title,
                created_at,
                updated_at or created_at,
                model_title,
            ),
        )


def create_session(
    path: Path, record: SessionRecord, scrub: Callable[[bytes], bytes] | None
) -> sqlite3.Connection:
    """Connect to the file at `path` (made and migrated as needed) and store `record` there, on
    the caller's thread (the startup path's); the connection, for the store to go on with.
    StoreError or sqlite3.Error if it cannot (nothing stored)."""
    conn = connect(path)
    try:
        migrate(conn)
        insert_session(conn, session_row(record, scrub))
    except BaseException:
        conn.close()
        raise
    return conn


def get_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return None if row is None else session_from_row(row)
