"""The simple commands a POSIX shell command line runs, each as the text a permission rule is
matched against (`acp_fsm.permission_rules`): `a && b`, `a || b`, `a; b`, `a | b`, `a & b`
and lines are split; what runs inside `$(…)`, backticks, `<(…)`, `>(…)`, `( … )` and
`{ …; }` is a command of its own, and so is the command that holds it; leading variable
assignments (`FOO=1 cmd`) are left out of a command's text.

Quotes are honoured (nothing splits inside '…'; inside "…" only `$(…)` and backticks run).
A line whose quoting cannot be read to its end (an open quote or parenthesis, a here-document)
is `Unreadable`: a rule that allows commands must not allow what it cannot see whole.
"""

from __future__ import annotations

import re
from typing import Final

SEPARATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")
# What opens a substitution whose commands run: in double quotes, and outside any quotes.
COMMAND: Final = ("$(",)
PROCESS: Final = ("$(", "<(", ">(")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"[0-9.]+[smhd]?")
# Variables that change nothing of what a command runs: an allow rule sees past them.
SAFE_VARIABLES = frozenset(
    {"NODE_ENV", "LANG", "LC_ALL", "LC_CTYPE", "NO_COLOR", "FORCE_COLOR", "CI", "TERM", "TZ"}
)
# Commands that run the command their arguments name: a deny rule sees past them.
WRAPPERS = frozenset(
    {"env", "sudo", "doas", "watch", "ionice", "setsid", "flock", "exec", "timeout", "time",
     "nice", "nohup", "stdbuf", "command", "builtin", "noglob", "xargs", "chroot", "unbuffer",
     "eval"}
)  # fmt: skip


class Unreadable(ValueError):
    """The line cannot be split into the commands it runs with certainty."""


def commands(line: str) -> list[str]:
    """Every simple command `line` runs, its text normalised (words joined by one space);
    inner commands before the one holding them."""
    found: list[str] = []
    _split(line, found)
    return [c for c in found if c]


def _split(text: str, found: list[str]) -> None:
    """Split `text` at its separators, each part's inner commands first."""
    part: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        separator = next((s for s in SEPARATORS if text.startswith(s, i)), None)
        if separator == "&" and _redirection(text, i):
            separator = None
        if char == "\\" and i + 1 < len(text):
            part.append(text[i : i + 2])
            i += 2
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unreadable("an open single quote")
            part.append(text[i : end + 1])
            i = end + 1
        elif char == '"':
            end = _double_quoted(text, i, found)
            part.append(text[i : end + 1])
            i = end + 1
        elif (past := _substitution(text, i, found, PROCESS)) is not None:
            part.append(text[i:past])
            i = past
        elif char == "(" and not "".join(part).strip():
            end = _closing(text, i)
            _split(text[i + 1 : end], found)
            i = end + 1
        elif char in "()":  # a function's definition, a `case` pattern, an array
            raise Unreadable("a parenthesis that opens no subshell")
        elif char == "#" and (not part or part[-1].isspace()):
            raise Unreadable("a comment")  # what it hides depends on the shell's reading
        elif text.startswith("$'", i):
            raise Unreadable("$'…' quoting")  # bash reads escapes in it, sh does not
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            raise Unreadable("a here-document")
        elif separator is not None:
            _add("".join(part), found)
            part = []
            i += len(separator)
        else:
            part.append(char)
            i += 1
    _add("".join(part), found)


# An output redirection (`>`, `>>`, `2>`, `&>`, `>|`) and what follows it.
_REDIRECTED = re.compile(r">>?\|?\s*(\S*)")
# Where output may go without writing a file.
_NOWHERE = ("/dev/null", "/dev/stdout", "/dev/stderr")


def writes_file(command: str) -> bool:
    """Whether one simple command sends output to a file (`npm test > out.txt`, `a>b`): an
    allow rule for the command does not cover where it writes (`2>&1` and `/dev/null` write
    nowhere). A `>` in quotes counts too: the command is asked about, never let through."""
    return any(
        not (target.startswith("&") or target in _NOWHERE)
        for target in _REDIRECTED.findall(command)
    )


def as_allowed(command: str) -> str:
    """What an allow rule is matched against for one simple command: its text past the
    variable assignments known to change nothing of what runs (`NODE_ENV=test`) and the
    wrappers that only time, detach or re-nice it (`timeout 10`, `nice -n 5`, `nohup`). Any
    other assignment (`LD_PRELOAD=…`) or wrapper stays: no allow rule matches it unless it
    says so."""
    words = command.split(" ")
    while words and _ASSIGNMENT.match(words[0]) and words[0].split("=", 1)[0] in SAFE_VARIABLES:
        words = words[1:]
    while len(words) > 1:
        first, rest = words[0], words[1:]
        if first in ("time", "nohup", "builtin", "noglob") or (
            first == "command" and rest[0] not in ("-v", "-V")
        ):
            words = rest
        elif first in ("nice", "stdbuf", "timeout"):
            words = _past_options(rest, numbers=first == "nice")
            if first == "timeout" and words and _DURATION.fullmatch(words[0]):
                words = words[1:]
        elif first == "xargs" and not rest[0].startswith("-"):
            words = rest
        else:
            break
    return " ".join(words)


def as_denied(command: str) -> list[str]:
    """What a deny or ask rule is matched against for one simple command: its text past any
    variable assignments, and after a wrapper that runs what follows it (`sudo`, `env`,
    `watch`, `timeout`, `xargs`, ...), every rest of its words, so no option of the wrapper
    hides the command."""
    words = command.split(" ")
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    found = [" ".join(words)]
    if words and words[0] in WRAPPERS:
        found += [" ".join(words[i:]) for i in range(1, len(words))]
    return found


def _past_options(words: list[str], *, numbers: bool) -> list[str]:
    """`words` past their leading options (`-n 5` too, when `numbers`)."""
    while words and words[0].startswith("-"):
        takes = numbers and words[0] in ("-n", "--adjustment") and len(words) > 1
        words = words[2:] if takes else words[1:]
    return words


def _redirection(text: str, at: int) -> bool:
    """Whether the `&` at `at` belongs to a redirection (`2>&1`, `<&3`, `&>file`)."""
    return (at > 0 and text[at - 1] in "<>") or text.startswith("&>", at)


def _add(part: str, found: list[str]) -> None:
    """One simple command's text: its words, without the braces of a group."""
    words = part.split()
    while words and words[0] in ("{", "}", "!", "then", "do", "else", "fi", "done"):
        words = words[1:]
    while words and words[-1] == "}":
        words = words[:-1]
    if words and words[0] in ("if", "while", "until", "elif"):
        words = words[1:]
    found.append(" ".join(words))


def _double_quoted(text: str, start: int, found: list[str]) -> int:
    """The index of the quote closing the one at `start`; the commands that run inside it
    are added to `found`."""
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == '"':
            return i
        past = _substitution(text, i, found, COMMAND)
        i = i + 1 if past is None else past
    raise Unreadable("an open double quote")


def _substitution(text: str, at: int, found: list[str], opening: tuple[str, ...]) -> int | None:
    """At a backtick or one of `opening` (`$(`, and outside quotes `<(`, `>(`; not `$((`):
    the commands it runs added to `found`, and the index just past it. None elsewhere."""
    if text[at] == "`":
        end = _closing_backtick(text, at)
        _split(text[at + 1 : end], found)
        return end + 1
    if text.startswith(opening, at) and not text.startswith("$((", at):
        end = _closing(text, at + 1)
        _split(text[at + 2 : end], found)
        return end + 1
    return None


def _closing_backtick(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == "`":
            return i
        else:
            i += 1
    raise Unreadable("an open backtick")


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis closing the one at `start` (quotes honoured)."""
    depth = 0
    i = start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise Unreadable("an open single quote")
            i = end + 1
            continue
        if char == '"':
            i = _double_quoted(text, i, []) + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise Unreadable("an open parenthesis")
