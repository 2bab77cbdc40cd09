"""The user's permission rules: allow, ask and deny, by tool and pattern, in Claude Code's
`permissions` syntax (docs/permissions.md), read from the project's and the user's settings.

A rule is `Tool` or `Tool(specifier)`. The tool is Claude Code's name (`Bash`, `Read`, `Edit`,
`Write`, `WebFetch`, `Task`/`Agent`, `Glob`, `Grep`, `LS`) or acp-fsm's own (`run_command`,
`read_file`, ...), or an MCP tool as the model sees it (`mcp__server`, `mcp__server__tool`,
`mcp__server__*`). The specifier is, by tool:

- a command (`Bash`, `run_command`): `npm test` (exactly), `npm test:*` (that prefix, on a word
  boundary), or a pattern where `*` stands for any text (`git * main`); a trailing ` *` also
  takes the bare prefix. A command line is matched part by part (`acp_fsm.shell_parts`): deny
  and ask when any part matches, allow only when every part does;
- a path glob (`Read`, `Edit` and the tools they stand for; a Read deny holds for writes too,
  an Edit allow for reads): gitignore-style, `**` any depth; `//abs` absolute, `~/x` in the
  home directory, `/x` relative to the settings file's project (`~/.claude` for the user's
  Claude Code file), `./x` or `x` relative to the project (without `/`, at any depth);
- a domain (`WebFetch(domain:example.com)`): that host; `*.example.com`, the hosts below it.

Deny beats ask beats allow, whatever the order of the files; a deny holds in every mode, and
one that names a tool whole keeps it from the model.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from acp_fsm.shell_parts import Unreadable, as_allowed, as_denied, commands

Verdict = Literal["deny", "ask", "allow"]
VERDICTS: Final[tuple[Verdict, ...]] = ("deny", "ask", "allow")
MAX_FILE_BYTES: Final = 1024 * 1024  # a settings file larger than this is not read
MAX_RULES: Final = 2000  # per file and verdict: the rest are named as skipped

# The project's shared settings (a checkout anyone may have written): their deny and ask rules
# apply, their allow rules do not (Claude Code applies them only once the user trusts the
# folder, and acp-fsm has no such step).
SHARED: Final = (".claude/settings.json", ".acp-fsm/settings.json")
UNTRUSTED: Final = (
    "its allow rules are not applied: a project's shared settings cannot grant permissions "
    "(put them in settings.local.json or in your own settings)"
)
# Claude Code's tool names, and acp-fsm's tools each stands for.
COMMANDS: Final = frozenset({"run_command"})
READS: Final = frozenset({"read_file", "list_directory", "glob", "search_files"})
EDITS: Final = frozenset({"edit_file", "multi_edit", "write_file", "apply_patch"})
ALIASES: Final[dict[str, frozenset[str]]] = {
    "Bash": COMMANDS,
    "Read": READS,
    "Glob": frozenset({"glob"}),
    "Grep": frozenset({"search_files"}),
    "LS": frozenset({"list_directory"}),
    "Edit": EDITS,
    "MultiEdit": frozenset({"multi_edit"}),
    "Write": frozenset({"write_file"}),
    "WebFetch": frozenset({"fetch_url"}),
    "Task": frozenset({"task"}),
    "Agent": frozenset({"task"}),
}
# Claude Code's tools it matches no path for (a bare rule names the tool).
PATHLESS: Final = frozenset({"Write", "MultiEdit", "Glob", "Grep", "LS"})
# Of acp-fsm's tools, what a specifier is matched against.
Subject = Literal["command", "path", "domain", "none"]
SUBJECTS: Final[dict[str, Subject]] = {
    **dict.fromkeys(COMMANDS, "command"),
    **dict.fromkeys(READS | EDITS, "path"),
    "fetch_url": "domain",
}
# The files a patch (`apply_patch`) adds, changes, deletes or moves to.
_PATCHED = re.compile(
    r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (?P<path>.+)$", re.MULTILINE
)
_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*-]+)(?:\((?P<spec>.*)\))?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: its verdict, the tools it names, what it matches, and where it was read."""

    verdict: Verdict
    text: str  # as written
    tools: frozenset[str]  # acp-fsm's names; MCP tools by pattern (`mcp__server__*`)
    spec: str | None  # None: every call of its tools
    source: Path
    base: Path  # what a `/x` path is relative to: the settings file's project

    def names(self, tool: str) -> bool:
        return any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.tools)


@dataclass
class Rules:
    """The rules in force, and what could not be read (each named once to the user)."""

    rules: list[Rule] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def judge(self, tool: str, args: dict[str, Any], cwd: Path) -> Rule | None:
        """The rule that decides a call of `tool` with `args` in project `cwd`: the first
        deny that matches, else the first ask, else the first allow (every part of a command
        allowed); None when none does. A command line that cannot be split into its commands
        under a deny rule for some commands is asked about under that rule: what it runs
        cannot be seen."""
        unsure = None
        for verdict in VERDICTS:
            every = verdict == "allow"
            for rule in self.rules:
                if rule.verdict != verdict or not rule.names(tool):
                    continue
                if _matches(rule, tool, args, cwd, every=every):
                    return rule
                if unsure is None and verdict == "deny" and _unreadable(rule, tool, args):
                    unsure = replace(rule, verdict="ask")
            if unsure is not None:
                return unsure
        return None

    def hides(self, tool: str) -> bool:
        """Whether a deny rule names `tool` whole: the model is not offered it."""
        return any(r.verdict == "deny" and r.spec is None and r.names(tool) for r in self.rules)


def read(cwd: Path) -> Rules:
    """The rules of the project at `cwd` and of the user (reads files: call it off the event
    loop): Claude Code's `~/.claude/settings.json`, `.claude/settings.json` and
    `.claude/settings.local.json`, and acp-fsm's own `$XDG_CONFIG_HOME/acp-fsm/settings.json`,
    `.acp-fsm/settings.json` and `.acp-fsm/settings.local.json`."""
    found = Rules()
    for path, base in settings_files(cwd):
        _read_file(path, base, found)
    return found


def settings_files(cwd: Path) -> list[tuple[Path, Path]]:
    """Each settings file that may hold rules, with the folder its `/x` paths are relative to
    (the project, or the user's own settings folder)."""
    home = Path.home()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return [
        (home / ".claude" / "settings.json", home / ".claude"),
        (config / "acp-fsm" / "settings.json", config / "acp-fsm"),
        *((cwd / name, cwd) for name in SHARED),
        (cwd / ".claude" / "settings.local.json", cwd),
        (cwd / ".acp-fsm" / "settings.local.json", cwd),
    ]


def _read_file(path: Path, base: Path, found: Rules) -> None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            found.problems.append(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, not read")
            return
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, UnicodeError, ValueError) as exc:
        found.problems.append(f"{path}: not read ({exc})")
        return
    permissions = document.get("permissions") if isinstance(document, dict) else None
    if permissions is None:
        return
    if not isinstance(permissions, dict):
        found.problems.append(f"{path}: `permissions` is not an object, its rules are skipped")
        return
    for verdict in VERDICTS:
        listed = permissions.get(verdict, [])
        if not isinstance(listed, list):
            found.problems.append(f"{path}: `permissions.{verdict}` is not a list, skipped")
            continue
        if verdict == "allow" and listed and path.relative_to(base).as_posix() in SHARED:
            found.problems.append(f"{path}: {UNTRUSTED}")
            continue
        for text in listed[:MAX_RULES]:
            rule = parse(text, verdict, path, base)
            if isinstance(rule, str):
                found.problems.append(f"{path}: the {verdict} rule {text!r} is skipped: {rule}")
            else:
                found.rules.append(rule)
        if len(listed) > MAX_RULES:
            found.problems.append(f"{path}: rules past the first {MAX_RULES:,} are skipped")


def parse(text: Any, verdict: Verdict, source: Path, base: Path) -> Rule | str:
    """`text` as a rule; why it is not one otherwise."""
    if not isinstance(text, str):
        return "a rule is a string"
    match = _RULE.fullmatch(text.strip())
    if match is None:
        return "not `Tool` or `Tool(specifier)`"
    name, spec = match["tool"], match["spec"]
    if name.startswith("mcp__"):
        if spec is not None:
            return "an MCP rule names a server or a tool, without a specifier"
        parts = name.split("__")
        pattern = name if len(parts) > 2 else f"{name}__*"
        return Rule(verdict, text, frozenset({pattern}), None, source, base)
    tools = ALIASES.get(name) or (frozenset({name}) if name in _known_tools() else None)
    if tools is None:
        return f"no tool {name!r}"
    if spec is not None and name in PATHLESS:
        return f"Claude Code matches paths in Read(...) and Edit(...) rules only, not in {name}"
    if name == "Read" and verdict == "deny":
        tools |= EDITS  # what may not be read may not be written either
    elif name == "Edit" and verdict == "allow":
        tools |= READS  # what may be edited may be read
    if spec is not None:
        spec = spec.strip()
        subjects = {SUBJECTS.get(tool, "none") for tool in tools}
        if subjects == {"none"}:
            return f"{name} takes no specifier"
        if subjects == {"domain"} and not spec.startswith("domain:"):
            return "a fetch rule is `WebFetch(domain:host)`"
        if not spec or spec == "domain:":
            return "an empty specifier"
    return Rule(verdict, text, tools, spec, source, base)


def _known_tools() -> frozenset[str]:
    from acp_fsm.tools import TOOLS

    return frozenset(TOOLS)


def _matches(rule: Rule, tool: str, args: dict[str, Any], cwd: Path, *, every: bool) -> bool:
    """Whether `rule` covers a call of `tool` with `args`: every part of a command with
    `every` (an allow), any part otherwise."""
    if rule.spec is None:
        return True
    subject = SUBJECTS.get(tool, "none")
    if subject == "command":
        return _command_matches(rule.spec, str(args.get("command", "")), every=every)
    if subject == "path":
        paths = _paths(tool, args, cwd)
        if not paths:
            return False
        hits = (_path_matches(rule, path, cwd) for path in paths)
        return all(hits) if every else any(hits)
    if subject == "domain":
        return _domain_matches(rule.spec.removeprefix("domain:"), str(args.get("url", "")))
    return False


def _unreadable(rule: Rule, tool: str, args: dict[str, Any]) -> bool:
    """Whether `rule` is about some commands and the call's command line cannot be split."""
    if rule.spec is None or SUBJECTS.get(tool) != "command":
        return False
    try:
        commands(str(args.get("command", "")))
    except Unreadable:
        return True
    return False


def _command_matches(spec: str, line: str, *, every: bool) -> bool:
    try:
        parts = commands(line)
    except Unreadable:
        # What cannot be split is allowed by nothing; a deny or an ask still sees it whole.
        whole = as_denied(" ".join(line.split()))
        return False if every else any(_one_command(spec, seen) for seen in whole)
    if not parts:
        return False
    if every:
        return all(_one_command(spec, as_allowed(part)) for part in parts)
    return any(_one_command(spec, seen) for part in parts for seen in as_denied(part))


def _one_command(spec: str, command: str) -> bool:
    """Whether one simple command matches a command specifier."""
    spec = " ".join(spec.split())
    if spec.endswith(":*"):
        prefix = spec[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" not in spec:
        return command == spec
    pattern = ".*".join(re.escape(piece) for piece in spec.split("*"))
    if spec.endswith(" *") and spec.count("*") == 1:
        pattern = re.escape(spec[:-2]) + "(?: .*)?"
    return re.fullmatch(pattern, command, re.DOTALL) is not None


def _paths(tool: str, args: dict[str, Any], cwd: Path) -> list[Path]:
    """The paths a call of `tool` reads or changes, absolute."""
    if tool == "apply_patch":
        found = _PATCHED.finditer(str(args.get("patch", "")))
        named = [match["path"].strip() for match in found]
    else:
        path = args.get("path")
        named = [str(path)] if path else ["."]
    return [Path(os.path.normpath(cwd / os.path.expanduser(p))) for p in named]


def _path_matches(rule: Rule, path: Path, cwd: Path) -> bool:
    """Whether `path` matches the rule's path glob."""
    assert rule.spec is not None
    spec = rule.spec
    if spec.startswith("//"):
        anchor, pattern = Path("/"), spec[2:]
    elif spec.startswith("~/"):
        anchor, pattern = Path.home(), spec[2:]
    elif spec.startswith("/"):
        anchor, pattern = rule.base, spec[1:]
    else:
        anchor, pattern = cwd, spec.removeprefix("./")
        if "/" not in pattern.rstrip("/"):
            pattern = f"**/{pattern}"
    try:
        relative = path.relative_to(anchor).as_posix()
    except ValueError:
        return False
    return _glob(pattern.rstrip("/")).fullmatch(relative) is not None or (
        _glob(pattern.rstrip("/") + "/**").fullmatch(relative) is not None
    )


def _glob(pattern: str) -> re.Pattern[str]:
    """A gitignore-style glob as a regular expression: `**` any number of folders, `*` and
    `?` within one name."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _domain_matches(domain: str, url: str) -> bool:
    """Whether the URL's host is `domain` (case and a trailing dot aside), or for
    `*.example.com` a host below it (not `example.com` itself); `*` is every host."""
    from yarl import URL

    try:
        host = (URL(url).host or "").lower().rstrip(".")
    except ValueError:
        return False
    domain = domain.lower().rstrip(".")
    if domain == "*":
        return True
    if domain.startswith("*."):
        return host.endswith(domain[1:])
    return host == domain
