"""What an "Always allow" stores: the allow rules that say exactly which calls it covers
(`proposed`), written to the project's local settings (`store`); and a rule taken out of the
files it is in (`remove`, for `/permissions remove`). The files are the user's: every other
key in them is kept, and one that cannot be read is never overwritten."""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from acp_fsm.permission_rules import (
    EDITS,
    VERDICTS,
    Call,
    Rule,
    Rules,
    parse,
    settings_files,
)
from acp_fsm.sessions_db import default_path
from acp_fsm.shell_parts import WRAPPERS, Unreadable, as_allowed, commands
from acp_fsm.user_settings import load

_LOCK = threading.Lock()
MAX_STORED: Final = 5  # rules one answer stores; a longer list is not offered
# A word that names a subcommand (`npm test`, `git commit`), not an option, path or value.
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
# A program as a rule can name it: nothing a shell would expand or a rule would read.
_PROGRAM = re.compile(r"[A-Za-z0-9_./+-]+")


def proposed(rules: Rules, tool: str, args: dict[str, Any], roots: tuple[Path, ...]) -> list[str]:
    """The allow rules that an "Always allow" of this call stores: a command prefix for each
    part of a command line not yet allowed (`Bash(npm test:*)`), the domain of a fetch, the
    root an edit lies in (`Edit(./**)`), an MCP tool or another tool by name. Empty when no
    such rules would allow the call (the option is then not offered)."""
    cwd = roots[0]
    call = Call(tool, args, cwd)
    texts: list[str] | None
    if call.subject == "command":
        texts = _prefixes(rules, str(args.get("command", "")), cwd)
    elif call.subject == "domain":
        texts = [f"WebFetch(domain:{call.host})"] if call.host else None
    elif call.subject == "path":
        texts = _roots_of(call.paths, roots, "Edit" if tool in EDITS else "Read")
    else:
        texts = [tool]
    if not texts or len(texts) > MAX_STORED:
        return []
    trial = Rules([*rules.rules, *_parsed(texts, cwd)])
    ruling = trial.judge(tool, args, cwd)
    return texts if ruling is not None and ruling.verdict == "allow" else []


def _parsed(texts: list[str], cwd: Path) -> list[Rule]:
    found = [parse(text, "allow", local_file(cwd), cwd) for text in texts]
    return [rule for rule in found if not isinstance(rule, str)]


def _prefixes(rules: Rules, line: str, cwd: Path) -> list[str] | None:
    """`Bash(<prefix>:*)` for each command of `line` the rules do not allow yet: its program,
    and its subcommand when it has one. None when some command has no prefix a rule can say
    (a variable set before it, a wrapper, a program named by an expansion)."""
    try:
        parts = commands(line)
    except Unreadable:
        return None
    texts: list[str] = []
    for part in parts:
        ruling = rules.judge("run_command", {"command": part}, cwd)
        if ruling is not None and ruling.verdict == "allow":
            continue
        words = as_allowed(part).split()
        if not words or not _PROGRAM.fullmatch(words[0]) or words[0] in WRAPPERS:
            return None
        prefix = words[:2] if len(words) > 1 and _SUBCOMMAND.fullmatch(words[1]) else words[:1]
        text = f"Bash({' '.join(prefix)}:*)"
        if text not in texts:
            texts.append(text)
    return texts


def _roots_of(paths: list[Path], roots: tuple[Path, ...], tool: str) -> list[str] | None:
    """A rule for each session root the paths lie in (`./**` the working directory, `//…/**`
    another); None when one lies outside them all."""
    texts: list[str] = []
    for path in paths:
        root = next((r for r in roots if path == r or r in path.parents), None)
        if root is None:
            return None
        text = f"{tool}(./**)" if root == roots[0] else f"{tool}(/{root.as_posix()}/**)"
        if text not in texts:
            texts.append(text)
    return texts


def local_file(cwd: Path) -> Path:
    """Where an answer's rules are stored: Claude Code's `.claude/settings.local.json` in a
    project that has a `.claude` folder (the rules mean the same there), else acp-fsm's own
    `.acp-fsm/settings.local.json`."""
    if (cwd / ".claude").is_dir():
        return cwd / ".claude" / "settings.local.json"
    return cwd / ".acp-fsm" / "settings.local.json"


@contextmanager
def _locked() -> Iterator[None]:
    """One change to the settings files at a time: of this process's sessions (a thread
    lock) and of every acp-fsm process of the user (a file lock beside the store)."""
    with _LOCK:
        folder = default_path().parent
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "settings.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def store(texts: list[str], cwd: Path) -> list[Rule]:
    """Add `texts` to the allow rules of the project's local settings (reads and writes
    files: off the event loop); the rules stored, that file their source. `ValueError`
    for a file that is not a settings object (left as it is), `OSError` for one that cannot
    be written."""
    with _locked():
        return _store(texts, cwd)


def _store(texts: list[str], cwd: Path) -> list[Rule]:
    path = local_file(cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    ignore = path.parent / ".gitignore"
    if path.parent.name == ".acp-fsm" and not ignore.exists():  # the user's answers
        ignore.write_text("settings.local.json\n", encoding="utf-8")
    document = load(path)
    permissions = document.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ValueError(f"{path}: `permissions` is not an object")
    allowed = permissions.setdefault("allow", [])
    if not isinstance(allowed, list):
        raise ValueError(f"{path}: `permissions.allow` is not a list")
    allowed.extend(text for text in texts if text not in allowed)
    _write(path, document)
    return _parsed(texts, cwd)


def remove(text: str, cwd: Path) -> list[Path]:
    """Take the rule `text` out of every settings file of the project and the user that
    lists it (reads and writes files: off the event loop); the files changed. The rule is
    matched as written, its spaces aside (and the backticks `/permissions` shows it in)."""
    with _locked():
        return _remove(_plain(text), cwd)


def _plain(text: str) -> str:
    return " ".join(text.strip().strip("`").split())


def _remove(text: str, cwd: Path) -> list[Path]:
    changed = []
    for path, _ in settings_files(cwd):
        try:
            document = load(path)
        except (OSError, ValueError):
            continue  # not there, or not the user's to have rewritten
        permissions = document.get("permissions")
        if not isinstance(permissions, dict):
            continue
        found = False
        for verdict in VERDICTS:
            listed = permissions.get(verdict)
            if not isinstance(listed, list):
                continue
            kept = [r for r in listed if not (isinstance(r, str) and _plain(r) == text)]
            if kept != listed:
                permissions[verdict] = kept
                found = True
        if found:
            _write(path, document)
            changed.append(path)
    return changed


def _write(link: Path, document: dict[str, Any]) -> None:
    """Replace the file `link` is (a symbolic link's target: a dotfiles folder's) with
    `document` in one step: a crash leaves the old file or the new."""
    path = Path(os.path.realpath(link))
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if path.exists():
            os.chmod(temporary, path.stat().st_mode)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
