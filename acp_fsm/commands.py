"""The agent's slash commands: announced with `available_commands_update`, run when a prompt
starts with one (`/compact`). Any other text starting with `/` (a path, say) is a prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import AvailableCommand

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


def available() -> list[AvailableCommand]:
    """The commands as ACP `AvailableCommand`s."""
    return [
        {"name": name, "description": about, "input": {"hint": hint}}
        for name, (about, hint) in COMMANDS.items()
    ]


def parse(prompt: list[dict[str, Any]]) -> Command | None:
    """The command a prompt runs: its first block is text starting with `/<name>`."""
    first = prompt[0] if prompt else None
    if not isinstance(first, dict) or first.get("type") != "text":
        return None
    text = str(first.get("text", "")).strip()
    if not text.startswith("/") or len(text) == 1 or text[1].isspace():
        return None
    name, *argument = text[1:].split(maxsplit=1)
    if name not in COMMANDS:
        return None
    return Command(name, argument[0].strip() if argument else "")
