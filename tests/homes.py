"""The test run's own homes: no test writes to the user's acp-fsm folders.

`isolate` (tests/conftest.py, before anything is collected) points ACP_FSM_HOME,
XDG_DATA_HOME and XDG_STATE_HOME, where acp-fsm writes what it keeps (sessions, credentials,
the model list), at a temporary folder for the whole run: in this process and in every process
a test starts, whether or not the test thought of it. HOME, XDG_CONFIG_HOME and XDG_CACHE_HOME
stay as they are: the tools the tests run read their user's settings and caches there (pip's
index, git's configuration), and acp-fsm only reads its own there (the user's commands; the
official schema `acp-fsm schema-check` cached, which tests/official_schema.py finds).

`Guard` remembers the user's acp-fsm folders (data, configuration, cache) as they were before
the run; `touched` lists what changed in them since. The run fails on any change
(tests/conftest.py): a test wrote where a user keeps their own sessions.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from acp_fsm.devkit.schema_check import cache_path
from acp_fsm.sessions_db import APP_DIR, default_path

# How the folder of a run's own homes is named (in the system's temporary folder).
PREFIX = "acp-fsm-test-homes-"
# Each entry below a folder, the folder included, by its path: a file's size and modification
# time, None for a folder (its time changes with its entries, which are listed themselves).
Listing = dict[str, tuple[int, int] | None]


def user_folders() -> list[Path]:
    """The acp-fsm folders of the user running the tests: where it keeps its data (sessions,
    credentials), its configuration (commands) and its cache (the official schema)."""
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [default_path().parent, config / APP_DIR, cache_path().parents[1]]


def listing(folder: Path) -> Listing:
    """`folder` and everything below it (nothing when it does not exist): reading a file
    changes nothing here; writing, adding or removing one does."""
    found: Listing = {str(folder): None} if folder.is_dir() else {}
    for top, dirs, files in os.walk(folder):
        found.update((os.path.join(top, name), None) for name in dirs)
        for name in files:
            path = os.path.join(top, name)
            try:
                info = os.lstat(path)
            except FileNotFoundError:  # removed while listed
                continue
            found[path] = (info.st_size, info.st_mtime_ns)
    return found


class Guard:
    """The user's acp-fsm folders as they were when it was made."""

    def __init__(self) -> None:
        self.folders = user_folders()
        self.before = self.now()

    def now(self) -> Listing:
        return {path: entry for folder in self.folders for path, entry in listing(folder).items()}

    def touched(self) -> list[str]:
        """What was added, changed or removed in those folders since, a line each."""
        after = self.now()
        lines = []
        for path in sorted(self.before.keys() | after.keys()):
            if path not in self.before:
                lines.append(f"added: {path}")
            elif path not in after:
                lines.append(f"removed: {path}")
            elif self.before[path] != after[path]:
                lines.append(f"changed: {path}")
        return lines


def isolate(parent: Path | None = None) -> Path:
    """Point the folders acp-fsm writes to at a new temporary folder (returned) for the rest
    of this process and its children: in `parent` when given (a worker's, in the run's
    folder: tests/workers.py), else in the system's temporary folder."""
    root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
    os.environ.update(
        ACP_FSM_HOME=str(root / "data" / APP_DIR),
        XDG_DATA_HOME=str(root / "data"),
        XDG_STATE_HOME=str(root / "state"),
    )
    return root
