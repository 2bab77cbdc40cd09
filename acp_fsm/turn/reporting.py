"""`reporting`: the agent answers `/status`, `/mcp` or `/permissions` itself, from what the
session knows (no model call); the answer is stored like a notice, so a reload shows it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from acp_fsm import commands, config_options, rule_store
from acp_fsm.blocking import run_blocking
from acp_fsm.call_modes import CALL_MODES
from acp_fsm.fsm.turn import TurnTrigger
from acp_fsm.instructions import project_instructions
from acp_fsm.permission_rules import VERDICTS, settings_files
from acp_fsm.providers.config import RESPONSES, ProviderConfig, api_of
from acp_fsm.turn import rewinding
from acp_fsm.turn.model_call import lean_list, settings, window
from acp_fsm.user_settings import UserSettings

if TYPE_CHECKING:
    from acp_fsm.turn.runner import Turn


async def report(turn: Turn) -> TurnTrigger:
    assert turn.command is not None
    if turn.command.name == commands.MCP:
        text = mcp_report(turn)
    elif turn.command.name == commands.PERMISSIONS:
        text = await permissions(turn, turn.command.argument.strip())
    elif turn.command.name == commands.REWIND:
        text = await rewinding.rewind(turn, turn.command.argument)
    else:
        text = await status_report(turn)
    await turn.tell(text)
    return TurnTrigger.REPORTED


def mcp_report(turn: Turn) -> str:
    lines = turn.context.status()
    if not lines:
        return "No MCP servers in this session (the editor configures them)."
    return "MCP servers:\n" + "\n".join(f"- {line}" for line in lines)


async def permissions(turn: Turn, argument: str) -> str:
    """`/permissions`: the rules in force; `/permissions remove <rule>` first takes the rule
    out of every settings file that lists it."""
    cwd = turn.context.roots[0]
    if not argument:
        return permissions_report(await settings(turn), cwd)
    verb, _, text = argument.partition(" ")
    text = text.strip()
    if verb != "remove" or not text:
        return (
            "Usage: `/permissions` lists the rules in force; `/permissions remove <rule>` "
            "removes one."
        )
    try:
        changed = await run_blocking(turn.token, rule_store.remove, text, cwd)
    except OSError as exc:
        return f"The rule `{text}` could not be removed: {exc}"
    turn.rules = None  # read again, without it
    found = await settings(turn)
    if not changed:
        return f"No settings file lists the rule `{text}`.\n\n" + permissions_report(found, cwd)
    files = ", ".join(str(path) for path in changed)
    return f"Removed `{text}` from {files}.\n\n" + permissions_report(found, cwd)


def permissions_report(found: UserSettings, cwd: Path) -> str:
    """The rules in force by verdict, in the order they are tried, each with its file; the
    hooks, each with its file; what could not be used; where rules are read when there are
    none."""
    lines = [
        f"- {rule.verdict} `{rule.text}` ({rule.source})"
        for verdict in VERDICTS
        for rule in found.rules.rules
        if rule.verdict == verdict
    ]
    if lines:
        text = "Permission rules (deny, then ask, then allow; the first that matches decides):\n"
        text += "\n".join(lines)
    else:
        files = "; ".join(str(path) for path, _ in settings_files(cwd))
        text = f"No permission rules: the session's mode decides every call. Read from: {files}."
    hooks = [
        f"- {hook.event}{f' ({hook.matcher})' if hook.matcher else ''}: `{hook.command}` "
        f"({hook.source})"
        for hook in found.hooks.hooks
    ]
    if hooks:
        text += "\n\nHooks:\n" + "\n".join(hooks)
    if found.problems:
        text += "\n\nNot used:\n" + "\n".join(f"- {problem}" for problem in found.problems)
    return text


async def status_report(turn: Turn) -> str:
    ports = turn.context
    config = turn.config()
    chosen = ports.settings()
    mode = config_options.MODES[chosen.mode][0]
    size = window(turn)
    used = turn.budget.used
    context = (
        f"{used:,} of {size:,} tokens ({used * 100 // max(1, size)}%)"
        if used
        else f"nothing yet, of {size:,} tokens"
    )
    spent = turn.ledger.spent
    roots = ports.roots
    found = await run_blocking(turn.token, project_instructions, roots[0], roots[1:])
    library = ports.library
    jobs = ports.background.summary()
    model = config_options.model_of(chosen, config)
    calls = CALL_MODES.mode(config, model)
    lean = lean_list(config, calls, size)
    level = config_options.level_option(chosen, config.provider, model)
    lines = [
        f"Provider: {config.provider}{_api(config, model)} ({_where(config.base_url)})",
        f"Model: {model}",
        f"Tool calls: {calls.describe()}",
        "Tool list: "
        + ("small (a local server's model; ACP_FSM_TOOLS=full for all)" if lean else "full"),
        f"Mode: {mode}",
        # as the session's options show it; a model without the option has no level
        f"Thought level: {level or '— (this model has no thinking option)'}",
        f"Context: {context}",
        f"Tokens so far: {spent.input_tokens:,} in ({spent.cache_read_tokens:,} read from the "
        f"cache, {spent.cache_write_tokens:,} written to it), {spent.output_tokens:,} out"
        + (f" ({spent.thought_tokens:,} of them reasoning)" if spent.thought_tokens else ""),
        "MCP servers: " + _listed(ports.status()),
        "Instruction files: " + _listed([str(path) for path, _ in found.found]),
        "Commands: " + _listed([f"/{name}" for name in library.commands]),
        "Skills: " + _listed(list(library.skills)),
        "Background commands: " + _listed([j.removeprefix("- ") for j in jobs.splitlines()[1:]]),
    ]
    return "Status:\n" + "\n".join(f"- {line}" for line in lines)


def _where(url: str) -> str:
    """The provider's address without any credentials in it."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]  # no user or password
    return f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else netloc


def _listed(items: list[str]) -> str:
    return "; ".join(items) if items else "none"


def _api(config: ProviderConfig, model: str) -> str:
    """Which of OpenAI's APIs the model's calls go to, when it is not Chat Completions."""
    return ", Responses API" if api_of(config, model) == RESPONSES else ""
