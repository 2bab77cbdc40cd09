"""`acp-fsm run`'s command line, checked before anything starts: a bad argument, rule or MCP
configuration is a usage error (exit status 2), named."""

from __future__ import annotations

import argparse
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from acp_fsm.permission_rules import parse as parse_rule

# The session modes by the names the command takes (ACP's mode ids, or with dashes).
MODES: Final = {
    "ask": "ask",
    "accept_edits": "accept_edits",
    "accept-edits": "accept_edits",
    "plan": "plan",
    "full_access": "full_access",
    "full-access": "full_access",
}
MAX_PROMPT_BYTES: Final = 16 * 1024 * 1024  # read from stdin, at most

EPILOG = """\
The prompt is PROMPT, or standard input when PROMPT is - or absent; with both, what comes on
standard input follows the prompt (`git diff | acp-fsm run "review this"`). The provider and
model are the environment's and `acp-fsm login`'s, as for the server.

exit status: 0 the turn ended, 1 an error (the provider's, the agent's), 2 bad arguments,
3 the model refused, 4 it ran out of output tokens, 5 ACP_FSM_MAX_TURN_REQUESTS model calls,
130 cancelled (the first Ctrl-C cancels the turn, a second exits at once).
"""


class UsageError(Exception):
    """What is wrong with the command line."""


@dataclass
class Options:
    prompt: str
    cwd: Path
    json: bool = False
    mode: str | None = None
    model: str | None = None
    rules: dict[str, list[str]] = field(default_factory=dict)
    mcp_servers: list[Any] = field(default_factory=list)
    session: str | None = None
    resume_last: bool = False
    no_store: bool = False
    verbose: bool = False


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="acp-fsm run",
        description="Run one prompt without an editor: the answer on stdout, progress on stderr.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    found.add_argument("prompt", nargs="?", help="the prompt (- or absent: standard input)")
    found.add_argument("--cwd", help="the project folder (default: the current one)")
    found.add_argument("--mode", help="ask, accept_edits, plan or full_access (default: ask)")
    found.add_argument("--model", help="the model, one of the provider's")
    found.add_argument("--allow", action="append", default=[], metavar="RULE",
                       help="a permission rule to allow, as in the settings files "
                       "(`Bash(npm test:*)`, `Edit(./**)`); repeatable")  # fmt: skip
    found.add_argument("--deny", action="append", default=[], metavar="RULE",
                       help="a permission rule to deny; repeatable")  # fmt: skip
    found.add_argument("--mcp-config", metavar="FILE",
                       help="MCP servers as editors send them: a JSON list (ACP's "
                       "`mcpServers`), or an object with one")  # fmt: skip
    found.add_argument("--json", action="store_true",
                       help="one JSON object a line on stdout: the session's updates, then "
                       "the result")  # fmt: skip
    found.add_argument("--continue", dest="resume_last", action="store_true",
                       help="go on from this folder's last session")  # fmt: skip
    found.add_argument("--session", metavar="ID", help="go on from this session")
    found.add_argument("--no-store", action="store_true", help="leave no session behind")
    found.add_argument("--verbose", action="store_true", help="the agent's log on stderr")
    return found


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(message)


def parse(argv: list[str], stdin: TextIO) -> Options:
    """The run's options; `UsageError` for a bad command line."""
    found = parser()
    found.__class__ = _Parser  # errors raised, not printed and exited on
    args = found.parse_args(argv)
    cwd = Path(args.cwd or os.getcwd()).expanduser().resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {cwd} is not a folder")
    if args.session is not None and args.resume_last:
        raise UsageError("--session and --continue cannot both be given")
    if args.no_store and (args.session is not None or args.resume_last):
        raise UsageError("--no-store starts a session of its own: not with --session or --continue")
    mode = None
    if args.mode is not None:
        mode = MODES.get(args.mode)
        if mode is None:
            raise UsageError(f"--mode {args.mode!r}: one of ask, accept_edits, plan, full_access")
    return Options(
        prompt=_prompt(args.prompt, stdin),
        cwd=cwd,
        json=args.json,
        mode=mode,
        model=args.model,
        rules=_rules(cwd, allow=args.allow, deny=args.deny),
        mcp_servers=_mcp_servers(args.mcp_config),
        session=args.session,
        resume_last=args.resume_last,
        no_store=args.no_store,
        verbose=args.verbose,
    )


def _prompt(given: str | None, stdin: TextIO) -> str:
    """The prompt: `given`, what stdin holds when it is not a terminal (after `given`), or
    both."""
    piped = ""
    if not stdin.isatty() and _readable(stdin):
        data = stdin.buffer.read(MAX_PROMPT_BYTES + 1)
        if len(data) > MAX_PROMPT_BYTES:
            raise UsageError(f"standard input holds more than {MAX_PROMPT_BYTES:,} bytes")
        piped = _text(data.decode("utf-8", "replace"))
    if given is not None:  # an argument the terminal gave in another encoding: its bytes
        given = given.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if given in (None, "-"):
        if not piped.strip():
            raise UsageError("no prompt: give one, or pipe it on standard input")
        return piped
    assert given is not None
    if not given.strip():
        raise UsageError("the prompt is empty")
    return f"{given}\n\n{piped}" if piped.strip() else given


def _text(text: str) -> str:
    """`text` as a prompt carries it: control characters other than tab and line ends (a
    binary file piped by mistake) shown as U+FFFD, so the prompt's JSON stays near its size."""
    return "".join(c if c >= " " or c in "\t\n\r" else "\ufffd" for c in text)


def _readable(stdin: TextIO) -> bool:
    """Standard input is a pipe or a file (not a terminal, not closed)."""
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


def _rules(cwd: Path, **lists: list[str]) -> dict[str, list[str]]:
    """`--allow` and `--deny`, each checked as the settings files' rules are."""
    for verdict, texts in lists.items():
        for text in texts:
            problem = parse_rule(text, verdict, Path("--" + verdict), cwd)  # type: ignore[arg-type]
            if isinstance(problem, str):
                raise UsageError(f"--{verdict} {text!r}: {problem}")
    return {verdict: texts for verdict, texts in lists.items() if texts}


def _mcp_servers(path: str | None) -> list[Any]:
    """The MCP servers of `--mcp-config` (their shape is the agent's to check)."""
    if path is None:
        return []
    try:
        document = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--mcp-config {path}: {exc}") from None
    if isinstance(document, dict):
        document = document.get("mcpServers")
    if not isinstance(document, list):
        raise UsageError(f"--mcp-config {path}: not a list of MCP servers (ACP's `mcpServers`)")
    return document
