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
import os
import re
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Final, Literal

from acp_fsm.shell_parts import Unreadable, as_allowed, as_denied, commands, writes_file
from acp_fsm.tools.globs import compile_glob

Verdict = Literal["deny", "ask", "allow"]
VERDICTS: Final[tuple[Verdict, ...]] = ("deny", "ask", "allow")
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
        deny that matches any part of it, else the first ask, else an allow when allow rules
        cover every part (each command of a line, each path of a patch; one rule or several);
        None when none does. A command line that cannot be split into its commands under a
        deny rule for some commands is asked about under that rule: what it runs cannot be
        seen."""
        call = Call(tool, args, cwd)
        unsure = None
        for verdict in ("deny", "ask"):
            for rule in self.rules:
                if rule.verdict != verdict or not rule.names(tool):
                    continue
                if call.matches(rule):
                    return rule
                if unsure is None and verdict == "deny" and call.unreadable(rule):
                    unsure = replace(rule, verdict="ask")
            if unsure is not None:
                return unsure
        return call.allowed_by([r for r in self.rules if r.verdict == "allow" and r.names(tool)])

    def grants(self, tool: str) -> bool:
        """Whether some allow rule names `tool` (for some calls of it, or all)."""
        return any(r.verdict == "allow" and r.names(tool) for r in self.rules)

    def hides(self, tool: str) -> bool:
        """Whether a deny rule names `tool` whole: the model is not offered it."""
        return any(r.verdict == "deny" and r.spec is None and r.names(tool) for r in self.rules)


# Folders no edit goes into unasked, in any mode, whatever a rule allows: the agent's and
# Claude Code's settings (an edit there could grant itself anything), the repository's
# internals and the editors' settings.
PROTECTED: Final = frozenset({".claude", ".acp-fsm", ".git", ".vscode", ".idea"})


def protected(tool: str, args: dict[str, Any], cwd: Path) -> str | None:
    """What a call of an edit tool would change that is protected (`PROTECTED`, and acp-fsm's
    own settings folder), said for the user; None for any other call."""
    if tool not in EDITS:
        return None
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "acp-fsm"
    for path in Call(tool, args, cwd).paths:
        if PROTECTED.intersection(path.parts) or path.is_relative_to(config):
            return f"{path} (settings or a repository's internals, asked every time)"
    return None


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


def shared(path: Path, base: Path) -> bool:
    """Whether `path` is one of the project's shared settings files (`SHARED`)."""
    return path.is_relative_to(base) and path.relative_to(base).as_posix() in SHARED


def take(document: dict[str, Any], path: Path, base: Path, found: Rules) -> None:
    """Add the rules of one settings file's `document` to `found`."""
    permissions = document.get("permissions")
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
        if verdict == "allow" and listed and shared(path, base):
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
        if "path" in subjects and not _globs(spec):
            return "its glob has an unbalanced `{`"
    return Rule(verdict, text, tools, spec, source, base)


def _known_tools() -> frozenset[str]:
    from acp_fsm.tools import TOOLS

    return frozenset(TOOLS)


class Call:
    """One call as the rules see it; the command line split, and the paths named, once."""

    def __init__(self, tool: str, args: dict[str, Any], cwd: Path) -> None:
        self.tool = tool
        self.args = args
        self.cwd = cwd
        self.subject = SUBJECTS.get(tool, "none")

    def matches(self, rule: Rule) -> bool:
        """Whether a deny or ask `rule` holds for the call: for any of its parts (a command
        of the line, in any form a wrapper may hide it in; a path)."""
        spec = rule.spec
        if spec is None:
            return True
        if self.subject == "command":
            parts = self.parts
            # What cannot be split is allowed by nothing; a deny or an ask still sees it whole.
            if parts is None:
                seen = as_denied(self.line)
            else:
                seen = [form for part in parts for form in as_denied(part)]
            return any(_one_command(spec, form) for form in seen)
        if self.subject == "path":
            return any(_path_matches(rule, path, self.cwd) for path in self.paths)
        if self.subject == "domain":
            return _domain_matches(spec.removeprefix("domain:"), self.host)
        return False

    def allowed_by(self, rules: list[Rule]) -> Rule | None:
        """The allow rule that lets the call run: one that names its tool whole, else the
        first of the rules that cover every part of it between them (each command of the line
        past its safe wrappers, each path, the host); None when some part is not covered, or
        the line cannot be split."""
        whole = next((rule for rule in rules if rule.spec is None), None)
        if whole is not None or not rules:
            return whole
        found = []
        for piece in self.pieces or ():
            rule = next((r for r in rules if self._covers(r, piece)), None)
            if rule is None:
                return None
            found.append(rule)
        return found[0] if found else None

    @cached_property
    def pieces(self) -> list[str] | list[Path] | None:
        """What allow rules must cover, each: the commands of the line (None when it cannot
        be split), the paths, the host."""
        if self.subject == "command":
            if self.parts is None or any(writes_file(part) for part in self.parts):
                return None  # what cannot be read, or writes a file, no command rule covers
            return [as_allowed(part) for part in self.parts]
        if self.subject == "path":
            return self.paths
        if self.subject == "domain" and self.host is not None:
            return [self.host]
        return []

    def _covers(self, rule: Rule, piece: str | Path) -> bool:
        assert rule.spec is not None
        if isinstance(piece, Path):
            return _path_matches(rule, piece, self.cwd)
        if self.subject == "command":
            return _one_command(rule.spec, piece)
        return _domain_matches(rule.spec.removeprefix("domain:"), piece)

    def unreadable(self, rule: Rule) -> bool:
        """Whether `rule` is about some commands and the call's line cannot be split."""
        return rule.spec is not None and self.subject == "command" and self.parts is None

    @cached_property
    def line(self) -> str:
        return " ".join(str(self.args.get("command", "")).split())

    @cached_property
    def parts(self) -> list[str] | None:
        """The commands the line runs; None when it cannot be split (`shell_parts`)."""
        try:
            return commands(str(self.args.get("command", "")))
        except Unreadable:
            return None

    @cached_property
    def paths(self) -> list[Path]:
        """The paths the call reads or changes, absolute."""
        if self.tool == "apply_patch":
            found = _PATCHED.finditer(str(self.args.get("patch", "")))
            named = [match["path"].strip() for match in found]
        else:
            path = self.args.get("path")
            named = [str(path)] if path else ["."]
        return [Path(os.path.normpath(self.cwd / os.path.expanduser(p))) for p in named]

    @cached_property
    def host(self) -> str | None:
        """The host of the URL fetched (lower case, no trailing dot); None when it has none."""
        from yarl import URL

        try:
            return (URL(str(self.args.get("url", ""))).host or "").lower().rstrip(".")
        except ValueError:
            return None


def _one_command(spec: str, command: str) -> bool:
    """Whether one simple command matches a command specifier."""
    return _command_pattern(spec).fullmatch(command) is not None


@lru_cache(maxsize=512)
def _command_pattern(spec: str) -> re.Pattern[str]:
    """A command specifier as a regular expression: `npm test` exactly; `npm test:*` and
    `npm test *` that prefix on a word boundary, or alone; `*` elsewhere any text."""
    spec = " ".join(spec.split())
    if spec.endswith(":*") or (spec.endswith(" *") and spec.count("*") == 1):
        return re.compile(re.escape(spec[:-2].rstrip()) + "(?: .*)?", re.DOTALL)
    return re.compile(".*".join(re.escape(piece) for piece in spec.split("*")), re.DOTALL)


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
    return any(glob.match(relative) for glob in _globs(pattern.rstrip("/")))


@lru_cache(maxsize=512)
def _globs(pattern: str) -> tuple[re.Pattern[str], ...]:
    """What a path rule's glob matches (`tools.globs`, as the glob tool reads it): the path
    itself, and what lies below it; nothing when the glob cannot be read."""
    try:
        return compile_glob(pattern), compile_glob(f"{pattern}/**")
    except ValueError:
        return ()


def _domain_matches(domain: str, host: str | None) -> bool:
    """Whether `host` is `domain` (case and a trailing dot aside), or for `*.example.com` a
    host below it (not `example.com` itself); `*` is every host."""
    if host is None:
        return False
    domain = domain.lower().rstrip(".")
    if domain == "*":
        return True
    if domain.startswith("*."):
        return host.endswith(domain[1:])
    return host == domain
