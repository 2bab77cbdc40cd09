"""The agent's slash commands: announced with `available_commands_update`, run when a prompt
starts with one. Built in: `/compact` (the turn compacts), `/status` and `/mcp` (the agent
answers itself, no model call), `/init` and `/review` (prompts of the agent's own; `/review`
turns are read-only). The user's (files, and skills invoked by name: `acp_fsm.library`)
become the prompt the model receives; the user's words stay as typed. Any other text starting
with `/` (a path, say) is a prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from acp_fsm.library import Library
    from acp_fsm.providers.types import UserPart
    from acp_fsm.schemas.acp_types import (
        AvailableCommand,
        ContentBlock,
        SessionUpdateAvailableCommandsUpdate,
    )

COMPACT, INIT, REVIEW, STATUS, MCP = "compact", "init", "review", "status", "mcp"
PERMISSIONS, REWIND = "permissions", "rewind"
# name -> (description, hint for its input, None when it takes none)
COMMANDS: dict[str, tuple[str, str | None]] = {
    COMPACT: (
        "Summarise the conversation so far to free the model's context window; the "
        "latest turns stay as they are",
        "what the summary should keep (optional)",
    ),
    INIT: (
        "Study the project and write AGENTS.md (or improve it): how to build, test and "
        "work in it, for coding agents",
        "what to stress (optional)",
    ),
    REVIEW: (
        "Review the uncommitted changes (or a git range) and report findings; nothing is "
        "changed in this turn",
        "a git range such as main..HEAD (optional)",
    ),
    STATUS: (
        "The session: provider, model, mode, context used, tokens, MCP servers, "
        "instruction files, skills and background commands",
        None,
    ),
    MCP: ("The session's MCP servers, their state and their tools", None),
    PERMISSIONS: (
        "The permission rules in force (allow, ask, deny), each with the settings file it "
        "comes from, and the rules that could not be used; `remove <rule>` takes a rule out",
        "remove <rule> (optional)",
    ),
    REWIND: (
        "Go back to before one of your prompts: the conversation and the files the agent "
        "changed since, in one step (without a number: the prompts to go back to)",
        "the prompt's number (optional)",
    ),
}
TURN_COMMANDS = frozenset({COMPACT, STATUS, MCP, PERMISSIONS, REWIND})  # run by the turn machine
REPORTS = frozenset({STATUS, MCP, PERMISSIONS, REWIND})  # answered by the agent, no model call


class Command(NamedTuple):
    name: str
    argument: str  # the text after the name


RESERVED = frozenset(COMMANDS)  # names a command file cannot take


def available(library: Library | None = None) -> list[AvailableCommand]:
    """The commands as ACP `AvailableCommand`s: the built-in ones, then the user's commands
    and skills (by name)."""
    listed: list[AvailableCommand] = []
    for name, (about, hint) in COMMANDS.items():
        built: AvailableCommand = {"name": name, "description": about}
        if hint is not None:
            built["input"] = {"hint": hint}
        listed.append(built)
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
    """The `available_commands_update` of the commands now."""
    return {"sessionUpdate": "available_commands_update", "availableCommands": available(library)}


def _split(prompt: list[ContentBlock]) -> tuple[str, str] | None:
    """`(name, the text after it)` when the prompt's first block is text `/<name> ...`."""
    first = prompt[0] if prompt else None
    if not isinstance(first, dict) or first.get("type") != "text":
        return None
    text = str(first.get("text", "")).strip()
    if not text.startswith("/") or len(text) == 1 or text[1].isspace():
        return None
    name, *argument = text[1:].split(maxsplit=1)
    return name, argument[0].strip() if argument else ""


def parse(prompt: list[ContentBlock]) -> Command | None:
    """The command the turn machine runs for a prompt (`/compact`, `/status`, `/mcp`): its
    first block is text starting with `/<name>`."""
    found = _split(prompt)
    if found is None or found[0] not in TURN_COMMANDS:
        return None
    return Command(*found)


def expanded(
    prompt: list[ContentBlock], parts: tuple[UserPart, ...], library: Library
) -> tuple[UserPart, ...] | None:
    """What the model receives for a prompt that runs one of the user's commands or skills
    (`parts` with its first text replaced), or None when it runs none."""
    found = _split(prompt)
    if found is None:
        return None
    from acp_fsm.providers.types import TextPart

    name, argument = found
    if name == INIT:
        return (TextPart(init_prompt(argument)), *parts[1:])
    command = library.commands.get(name)
    skill = library.skills.get(name)
    if command is not None:
        text = command.expand(argument)
    elif skill is not None:
        text = skill.invoked(argument)
    else:
        return None
    return (TextPart(text), *parts[1:])


def as_typed(line: str | None, library: Library) -> str | None:
    """`line`, a prompt's first line as the user typed it, with what its command does, when
    it runs `/init`, `/review` or one of the user's commands or skills (a title is made of
    this, not of the expansion the model was given); None when it runs none."""
    found = _split([{"type": "text", "text": line or ""}])
    if found is None or found[0] in TURN_COMMANDS:
        return None
    about = next((c["description"] for c in available(library) if c["name"] == found[0]), None)
    return None if about is None else f"{line}\n(the command /{found[0]}: {about})"


def reviewing(prompt: list[ContentBlock]) -> str | None:
    """The argument of a `/review` prompt (its range, "" for the uncommitted changes), or None
    when the prompt is not one."""
    found = _split(prompt)
    return found[1] if found is not None and found[0] == REVIEW else None


def init_prompt(focus: str) -> str:
    """What the model is asked by `/init`."""
    stress = f"\n\nThe user asks you to stress: {focus}" if focus else ""
    return (
        "Study this project, then write AGENTS.md at its root, or improve it if it exists: "
        "the instructions a coding agent needs to work here. Explore first (the top-level "
        "folders, the README, the build, test and lint configuration, a few central source "
        "files). Then write, concisely: what the project is; the exact commands to build, "
        "run, test and lint it; its layout (the main folders and what they hold); the "
        "conventions its code follows (style, naming, errors, tests); and what an agent must "
        "not do. Keep what an existing AGENTS.md says that is still true, and never write a "
        "command you have not found in the project." + stress
    )
