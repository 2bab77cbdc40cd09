"""The agent's slash commands: announced with `available_commands_update`, run when a prompt
starts with one. The built-in ones (`/compact`) are the agent's own; the user's (files, and
skills invoked by name: `acp_fsm.library`) become the prompt the model receives, the user's
words stay as typed. Any other text starting with `/` (a path, say) is a prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from acp_fsm.library import Library
    from acp_fsm.providers.types import UserPart
    from acp_fsm.schemas.acp_types import AvailableCommand, SessionUpdateAvailableCommandsUpdate

COMPACT = "compact"
# name -> (description, hint for its input)
COMMANDS = {
    COMPACT: (
        "Summarise the conversation so far to free the model's context window; the "
        "latest turns stay as they are",
        "what the summary should keep (optional)",
    ),
}


class Command(NamedTuple):
    name: str
    argument: str  # the text after the name


RESERVED = frozenset(COMMANDS)  # names a command file cannot take


def available(library: Library | None = None) -> list[AvailableCommand]:
    """The commands as ACP `AvailableCommand`s: the built-in ones, then the user's commands
    and skills (by name)."""
    listed: list[AvailableCommand] = [
        {"name": name, "description": about, "input": {"hint": hint}}
        for name, (about, hint) in COMMANDS.items()
    ]
    if library is None:
        return listed
    for command in library.commands.values():
        entry: AvailableCommand = {"name": command.name, "description": command.description}
        if command.hint:
            entry["input"] = {"hint": command.hint}
        listed.append(entry)
    for skill in library.skills.values():
        if skill.name not in library.commands and skill.name not in COMMANDS:
            listed.append(
                {
                    "name": skill.name,
                    "description": f"Skill: {skill.summary}",
                    "input": {"hint": "what to use it for (optional)"},
                }
            )
    return listed


def announcement(library: Library | None = None) -> SessionUpdateAvailableCommandsUpdate:
    return {"sessionUpdate": "available_commands_update", "availableCommands": available(library)}


def _split(prompt: list[dict[str, Any]]) -> tuple[str, str] | None:
    """`(name, the text after it)` when the prompt's first block is text `/<name> ...`."""
    first = prompt[0] if prompt else None
    if not isinstance(first, dict) or first.get("type") != "text":
        return None
    text = str(first.get("text", "")).strip()
    if not text.startswith("/") or len(text) == 1 or text[1].isspace():
        return None
    name, *argument = text[1:].split(maxsplit=1)
    return name, argument[0].strip() if argument else ""


def parse(prompt: list[dict[str, Any]]) -> Command | None:
    """The built-in command a prompt runs: its first block is text starting with `/<name>`."""
    found = _split(prompt)
    if found is None or found[0] not in COMMANDS:
        return None
    return Command(*found)


def expanded(
    prompt: list[dict[str, Any]], parts: tuple[UserPart, ...], library: Library
) -> tuple[UserPart, ...] | None:
    """What the model receives for a prompt that runs one of the user's commands or skills
    (`parts` with its first text replaced), or None when it runs none."""
    found = _split(prompt)
    if found is None:
        return None
    from acp_fsm.providers.types import TextPart

    name, argument = found
    command = library.commands.get(name)
    skill = library.skills.get(name)
    if command is not None:
        text = command.expand(argument)
    elif skill is not None:
        text = skill.invoked(argument)
    else:
        return None
    return (TextPart(text), *parts[1:])
