"""ripgrep as search_files' fast reader: which of the files the search walks may match.

search_files walks the tree itself (its skip rules, `.gitignore` as `acp_fsm.tools.ignore`
reads it) and decides every answer itself, on the files as the model is shown them (secrets
scrubbed), with Python's regular expressions. ripgrep only narrows the files that search
reads: it is given the walked files' paths and returns those where the pattern, or any of the
secrets, occurs. A file holding a secret is read anyway (scrubbing may change what matches),
so the answers are the same with ripgrep and without; where ripgrep cannot tell (it rejects
the pattern, a file cannot be read, it is missing or fails), every file is read.

The `rg` found is the one beside the interpreter (the `ripgrep` wheel's) or on `PATH`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Paths handed to one ripgrep run (command lines stay well below the system's limit).
BATCH = 500
# A ripgrep run that takes longer than this is abandoned (the full scan follows).
RUN_S = 20.0
# Python-only syntax ripgrep reads differently or not at all: the full scan instead.
_PYTHON_ONLY = ("[[", "(?P=", "(?=", "(?!", "(?<=", "(?<!", "\\Z", "(?#", "(?(")


def binary() -> str | None:
    """The path of an `rg` executable, or None."""
    beside = Path(sys.executable).with_name("rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def candidates(
    rg: str, pattern: str, case_sensitive: bool, files: list[Path], secrets: tuple[str, ...]
) -> set[Path] | None:
    """The files among `files` in which `pattern` or a secret may occur; None when ripgrep
    cannot say (then every file is read)."""
    if any(piece in pattern for piece in _PYTHON_ONLY):
        return None
    found: set[Path] = set()
    for start in range(0, len(files), BATCH):
        batch = [str(path) for path in files[start : start + BATCH]]
        matched = _run(rg, ["-e", pattern, *([] if case_sensitive else ["-i"])], batch)
        if matched is None:
            return None
        found |= matched
        if secrets:  # on stdin: a secret never shows in a command line
            holding = _run(rg, ["-F", "-f", "-"], batch, "\n".join(secrets).encode())
            if holding is None:
                return None
            found |= holding
    return found


def _run(rg: str, query: list[str], paths: list[str], given: bytes = b"") -> set[Path] | None:
    command = [rg, "--no-config", "--files-with-matches", "--null", "--no-messages", *query]
    try:
        done = subprocess.run(
            [*command, "--", *paths], input=given, capture_output=True, timeout=RUN_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode not in (0, 1):  # 2: a bad pattern or an unreadable file
        return None
    return {Path(os.fsdecode(name)) for name in done.stdout.split(b"\0") if name}
