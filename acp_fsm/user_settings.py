"""The user's settings files, each read once a turn: the permission rules
(`acp_fsm.permission_rules`) and the hooks (`acp_fsm.hooks`) they hold, from Claude Code's
`~/.claude/settings.json`, `.claude/settings.json` and `.claude/settings.local.json`, and
acp-fsm's own `$XDG_CONFIG_HOME/acp-fsm/settings.json`, `.acp-fsm/settings.json` and
`.acp-fsm/settings.local.json` (`permission_rules.settings_files`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from acp_fsm import hooks, permission_rules
from acp_fsm.hooks import Hooks
from acp_fsm.permission_rules import Rules

MAX_FILE_BYTES: Final = 1024 * 1024  # a settings file larger than this is not read


@dataclass
class UserSettings:
    """What the files say: the rules in force, the hooks, and what could not be used."""

    rules: Rules = field(default_factory=Rules)
    hooks: Hooks = field(default_factory=Hooks)

    @property
    def problems(self) -> list[str]:
        return [*self.rules.problems, *self.hooks.problems]


RULES_VARIABLE: Final = "ACP_FSM_RULES"  # `{"allow": [...], "ask": [...], "deny": [...]}`
# Where the rules of `ACP_FSM_RULES` are said to come from (`acp-fsm run --allow/--deny`).
GIVEN: Final = Path("the command line (--allow, --deny)")


def read(cwd: Path) -> UserSettings:
    """The settings of the project at `cwd` and of the user (reads files: call it off the
    event loop), and the rules `ACP_FSM_RULES` gives. A file that cannot be read is named in
    the rules' problems and skipped."""
    found = UserSettings()
    for path, base in permission_rules.settings_files(cwd):
        try:
            document = load(path)
        except (OSError, ValueError) as exc:
            found.rules.problems.append(f"{path}: not read ({exc})")
            continue
        permission_rules.take(document, path, base, found.rules)
        hooks.take(document, path, permission_rules.shared(path, base), found.hooks)
    given = os.environ.get(RULES_VARIABLE)
    if given:
        try:
            permission_rules.take({"permissions": json.loads(given)}, GIVEN, cwd, found.rules)
        except ValueError as exc:
            found.rules.problems.append(f"{RULES_VARIABLE} is not JSON ({exc})")
    return found


def load(path: Path) -> dict[str, Any]:
    """The settings object in `path`; an empty one when there is no file. `ValueError` for
    one that is too large or not a JSON object, `OSError` for one that cannot be read."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES:,} bytes")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeError as exc:
        raise ValueError(str(exc)) from None
    document = json.loads(text) if text.strip() else {}
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    return document
