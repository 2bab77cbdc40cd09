"""The user's own slash commands and skills, read from files (docs/commands.md).

Commands are Markdown files in the project's `.claude/commands/` and `.agents/commands/`, then
the user's `$XDG_CONFIG_HOME/acp-fsm/commands/` and `~/.claude/commands/`: the first found of a
name wins, a subfolder gives `folder:name`. Front matter may give a `description` and an
`argument-hint`; the body is the prompt, `$ARGUMENTS` and `$1` … `$9` replaced by the words
typed after the command. Skills are folders holding a `SKILL.md` (front matter: `name`,
`description`) in the same places' `skills/` folders. A file that cannot be used is skipped
and named in `problems`. Scanning reads files: call `scan` off the event loop. Every file name
that is shown (a skill's files and folder, the problems) is valid UTF-8 (`utf8_text`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from acp_fsm.front_matter import FrontMatterError, shortened, split, text_field
from acp_fsm.protocol.codec import utf8_text

MAX_FILE_BYTES = 256 * 1024  # a command or a skill larger than this is not one
MAX_FILES = 500  # command files read per folder (the rest are named as skipped)
MAX_DESCRIPTION_CHARS = 200  # of a command's description (ACP shows it in a menu)
MAX_HINT_CHARS = 120  # of a command's input hint
MAX_NAME = 64
COMMAND_NAME = re.compile(rf"(?=.{{1,{MAX_NAME}}}$)[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)*")
SKILL_FILE = "SKILL.md"
SKILL_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_SKILL_NAME = 64
MAX_SKILL_DESCRIPTION = 1024
MAX_LISTED_FILES = 50  # of a skill's folder, named when it is loaded
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9](?![0-9]))")


@dataclass(frozen=True, slots=True)
class UserCommand:
    """A command from a Markdown file."""

    name: str
    description: str
    hint: str | None  # what to type after it (`argument-hint`)
    body: str
    path: Path

    def expand(self, argument: str) -> str:
        """The prompt the model receives for `/name argument`: `$ARGUMENTS` is the whole
        argument, `$1` … `$9` its words (quotes group words); an argument the body has no
        place for is added at its end, so nothing typed is lost."""
        words = _words(argument)

        def filled(match: re.Match[str]) -> str:
            key = match.group(1)
            return argument if key == "ARGUMENTS" else _nth(words, int(key))

        uses = _PLACEHOLDER.search(self.body) is not None
        text = _PLACEHOLDER.sub(filled, self.body)
        text = text.strip()
        if argument and not uses:
            text = f"{text}\n\nARGUMENTS: {argument}"
        return text


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill: a folder with a SKILL.md."""

    name: str
    description: str
    folder: Path  # resolved
    body: str
    files: tuple[str, ...] = ()  # its other files, relative to the folder (read by the scan)

    @property
    def summary(self) -> str:
        """Its description, short enough for a menu or a list."""
        return shortened(self.description, MAX_DESCRIPTION_CHARS)

    def loaded(self) -> str:
        """What the model reads when it loads the skill: its instructions, and where its
        other files are."""
        files = self.files
        where = f"The skill's folder is {utf8_text(str(self.folder))}"
        if files:
            listed = ", ".join(files[:MAX_LISTED_FILES])
            more = len(files) - MAX_LISTED_FILES
            if more > 0:
                listed += f" and {more} more"
            where += "; its other files (read them with read_file when the instructions "
            where += f"refer to them): {listed}"
        return f'<skill name="{self.name}">\n{self.body}\n</skill>\n\n{where}.'

    def invoked(self, argument: str) -> str:
        """The prompt of `/name argument`: the skill loaded, then what the user asked."""
        ask = argument or "Apply it to the task at hand."
        return f"Use the skill {self.name} for this request.\n\n{self.loaded()}\n\n{ask}"


class Library(NamedTuple):
    """What one scan found."""

    commands: dict[str, UserCommand]
    skills: dict[str, Skill]
    problems: tuple[str, ...]  # files skipped, and why, in words for the user


EMPTY = Library({}, {}, ())


MAX_PROMPT_CHARS = 8000  # of the system prompt's list of skills


def skills_prompt(skills: dict[str, Skill]) -> str:
    """What the system prompt says of the skills ("" when there are none): each one's name
    and description, in name order (the same text while the files do not change), bounded."""
    if not skills:
        return ""
    lines = [
        "Skills: the user's instructions for particular tasks. When a task matches one, "
        "load it with the skill tool and follow it."
    ]
    size = len(lines[0])
    for name in sorted(skills):
        line = f"- {name}: {skills[name].summary}"
        size += len(line) + 1
        if size > MAX_PROMPT_CHARS:
            lines.append(f"- … and {len(skills) - len(lines) + 1} more (the skill tool lists them)")
            break
        lines.append(line)
    return "\n".join(lines)


class Place(NamedTuple):
    folder: Path
    within: Path | None  # a project place: nothing read may lie outside this (resolved)


def places(cwd: Path, kind: str) -> list[Place]:
    """Where `kind` (`commands` or `skills`) are read from, first wins. What the project
    holds (a checkout anyone may have written) is read only where it resolves inside the
    project; the user's own folders may link anywhere."""
    home = Path.home()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    project = _resolved(cwd)
    return [
        Place(cwd / ".claude" / kind, project),
        Place(cwd / ".agents" / kind, project),
        Place(config / "acp-fsm" / kind, None),
        Place(home / ".claude" / kind, None),
    ]


def scan(cwd: Path, reserved: frozenset[str] = frozenset()) -> Library:
    """The commands and skills for a session in `cwd`; `reserved` names (the built-in
    commands) are not taken by a file."""
    problems: list[str] = []
    commands: dict[str, UserCommand] = {}
    for place in places(cwd, "commands"):
        for command in _commands_in(place, problems):
            if command.name in reserved:
                problems.append(
                    f"The command file {command.path} is skipped: /{command.name} is built in."
                )
            else:
                commands.setdefault(command.name, command)
    skills: dict[str, Skill] = {}
    for place in places(cwd, "skills"):
        for skill in _skills_in(place, problems):
            skills.setdefault(skill.name, skill)
    return Library(commands, skills, tuple(utf8_text(problem) for problem in problems))


def _commands_in(place: Place, problems: list[str]) -> list[UserCommand]:
    found: list[UserCommand] = []
    files = _markdown_files(place, problems)
    for path in files[:MAX_FILES]:
        name = ":".join(path.relative_to(place.folder).with_suffix("").parts)
        if COMMAND_NAME.fullmatch(name) is None:
            problems.append(
                f"The command file {path} is skipped: a command's name is made of letters, "
                f"digits, '.', '_' and '-' (at most {MAX_NAME} characters)."
            )
            continue
        try:
            document = split(_read(path, place))
            description = text_field(document, "description", MAX_DESCRIPTION_CHARS)
            hint = text_field(document, "argument-hint", MAX_HINT_CHARS)
        except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
            problems.append(f"The command file {path} is skipped: {_why(exc)}.")
            continue
        body = document.body.strip()
        if not body:
            problems.append(f"The command file {path} is skipped: it has no prompt.")
            continue
        about = description or shortened(_first_line(body), MAX_DESCRIPTION_CHARS)
        found.append(UserCommand(name, about, hint, body, path))
    if len(files) > MAX_FILES:
        problems.append(
            f"Only the first {MAX_FILES} command files of {place.folder} are read "
            f"({len(files) - MAX_FILES} more are skipped)."
        )
    return found


def _skills_in(place: Place, problems: list[str]) -> list[Skill]:
    found: list[Skill] = []
    if not _usable_folder(place, problems):
        return found
    try:
        children = sorted(place.folder.iterdir())
    except OSError as exc:
        problems.append(f"The skills of {place.folder} are not read: {_why(exc)}.")
        return found
    for child in children[:MAX_FILES]:
        path = child / SKILL_FILE
        try:
            if not path.is_file():
                continue
            document = split(_read(path, place))
            name = text_field(document, "name", MAX_SKILL_NAME + 1)
            description = text_field(document, "description", MAX_SKILL_DESCRIPTION + 1)
            files = _skill_files(child)
        except (OSError, UnicodeDecodeError, FrontMatterError) as exc:
            problems.append(f"The skill {path} is skipped: {_why(exc)}.")
            continue
        problem = _skill_problem(name, description)
        if problem is not None:
            problems.append(f"The skill {path} is skipped: {problem}.")
            continue
        assert name is not None and description is not None
        folder = _resolved(child)
        found.append(Skill(name, description, folder, document.body.strip(), files))
    return found


def _skill_problem(name: str | None, description: str | None) -> str | None:
    if name is None:
        return "its front matter gives no name"
    if len(name) > MAX_SKILL_NAME or SKILL_NAME.fullmatch(name) is None:
        return (
            f"its name {name!r} is not made of lowercase letters, digits and single hyphens "
            f"(at most {MAX_SKILL_NAME} characters)"
        )
    if description is None:
        return "its front matter gives no description"
    if len(description) > MAX_SKILL_DESCRIPTION:
        return f"its description is longer than {MAX_SKILL_DESCRIPTION} characters"
    return None


def _usable_folder(place: Place, problems: list[str]) -> bool:
    """Whether `place` is a folder to read (a project's one that links out of the project
    is not, and is named)."""
    if not place.folder.is_dir():
        return False
    if place.within is not None and not _inside(place.folder, place.within):
        problems.append(f"{place.folder} is skipped: it links out of the project.")
        return False
    return True


def _markdown_files(place: Place, problems: list[str]) -> list[Path]:
    """The `.md` files under the place's folder, sorted; linked folders are not followed."""
    if not _usable_folder(place, problems):
        return []

    def failed(exc: OSError) -> None:
        problems.append(f"{exc.filename} is not read: {_why(exc)}.")

    found: list[Path] = []
    for root, dirs, files in os.walk(place.folder, onerror=failed):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += (Path(root) / f for f in sorted(files) if f.endswith(".md"))
        if len(found) > MAX_FILES:
            break
    return found


def _skill_files(folder: Path) -> tuple[str, ...]:
    """The files of a skill's folder but its SKILL.md, relative to it, sorted (at most
    `MAX_FILES`), as the model is shown them."""
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            relative = (Path(root) / name).relative_to(folder).as_posix()
            if relative != SKILL_FILE and not name.startswith("."):
                found.append(utf8_text(relative))
        if len(found) >= MAX_FILES:
            break
    return tuple(found[:MAX_FILES])


def _read(path: Path, place: Place) -> str:
    """A command's or skill's text: a regular file (never a FIFO, a device or a link to the
    agent's own input), inside the project for a project place, at most MAX_FILE_BYTES."""
    if place.within is not None and not _inside(path, place.within):
        raise FrontMatterError("it links out of the project")
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise FrontMatterError("it is not a regular file")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise FrontMatterError(f"it is larger than {MAX_FILE_BYTES // 1024} KB")
    return data.decode("utf-8")


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        return path.absolute()


def _inside(path: Path, root: Path) -> bool:
    return _resolved(path).is_relative_to(root)


def _why(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(exc, OSError):
        return f"it cannot be read ({exc.strerror or exc})"
    return str(exc)


def _first_line(body: str) -> str:
    line = next((s.strip() for s in body.splitlines() if s.strip()), "")
    return line.lstrip("#").strip()


def _words(argument: str) -> list[str]:
    import shlex  # with the first command run

    try:
        return shlex.split(argument)
    except ValueError:  # an unclosed quote: words as typed
        return argument.split()


def _nth(words: list[str], n: int) -> str:
    return words[n - 1] if n <= len(words) else ""
