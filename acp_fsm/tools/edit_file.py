"""edit_file and multi_edit: replace pieces of text in a file, shown to the editor as one diff.

The text is found exactly when it can be, else as `acp_fsm.tools.replace` allows (whitespace
and typographic quotes ignored, a unique place only); the result says when a match was
inexact, and a failure shows the model what to retry with. multi_edit's replacements apply in
order, each to the result of the one before, all or none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_fsm import redact
from acp_fsm.tools.base import Checkpoint, Drafts, ToolEnv, ToolOutcome
from acp_fsm.tools.common import MutatingTool, ToolError
from acp_fsm.tools.replace import (
    Change,
    Replacement,
    apply_edits,
    replacement_problem,
    summary,
)
from acp_fsm.tools.syntax import syntax_note
from acp_fsm.tools.text_files import (
    check_approved,
    check_as_shown,
    current_text,
    diff_block,
    load_text,
    store_text,
)

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContent


class ReplacingTool(MutatingTool):
    """A tool that replaces pieces of one existing file (`replacements` says which)."""

    kind = "edit"

    def replacements(self, args: dict[str, Any]) -> list[Replacement]:
        raise NotImplementedError

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Edit {self.shown(args, env)}"

    def check(self, args: dict[str, Any]) -> str | None:
        replacements = self.replacements(args)
        for number, replacement in enumerate(replacements, 1):
            problem = replacement_problem(replacement)
            if problem is not None:
                return problem if len(replacements) == 1 else f"edit {number}: {problem}"
        return None

    def _change(self, args: dict[str, Any], text: str | None, shown: str) -> Change:
        """The change applied to the text as the model was shown it (secrets as `[redacted]`:
        its old_text matches there, and a match never tells it what a secret is), the secrets
        then put back where the model kept them."""
        if text is None:
            raise ToolError(f"File not found: {shown} (use write_file to create a file)")
        secrets = redact.configured()
        change = apply_edits(secrets.scrub_text(text), self.replacements(args), shown)
        return Change(text, secrets.restore(change.after, text), change.applied)

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        path, shown = self.target(args, env), self.shown(args, env)
        text = await current_text(env, drafts, path, shown, exact=True)
        change = self._change(args, text, shown)
        drafts[path] = change.after
        return (diff_block(path, change.before, change.after),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        path, shown = self.target(args, env), self.shown(args, env)
        check_approved(env, path, args["path"])
        text = await load_text(env, path, shown, exact=True)  # now, after the approval
        check_as_shown(env, path, shown, text)
        change = self._change(args, text, shown)
        await env.checkpoint([Checkpoint(path, change.before, change.after)])
        await store_text(env, path, shown, change.after)
        note = await syntax_note(env, path, shown, change.before, change.after)
        return ToolOutcome(
            summary(shown, change) + note,
            content=(diff_block(path, change.before, change.after),),
            locations=({"path": str(path), "line": change.line},),
        )


class EditFile(ReplacingTool):
    name = "edit_file"
    description = (
        "Replace text in an existing file. Copy `old_text` from the file as it is (read it "
        "first), with enough surrounding lines to occur exactly once, or set replace_all to "
        "change every occurrence. Whitespace and quote differences are tolerated when the "
        "place is still unique. For several changes to one file use multi_edit; to create a "
        "file, write_file."
    )
    arguments = "EditFileArguments"

    def replacements(self, args: dict[str, Any]) -> list[Replacement]:
        return [_replacement(args)]


class MultiEdit(ReplacingTool):
    name = "multi_edit"
    description = (
        "Make several replacements in one existing file in one step: `edits` is a list of "
        "{old_text, new_text, replace_all?}, applied in order, each to the result of the one "
        "before (so a later old_text must match the text as the earlier edits left it). "
        "Either every edit applies or none does. One diff is shown for approval."
    )
    arguments = "MultiEditArguments"

    def replacements(self, args: dict[str, Any]) -> list[Replacement]:
        return [_replacement(edit) for edit in args["edits"]]


def _replacement(args: dict[str, Any]) -> Replacement:
    return Replacement(args["old_text"], args["new_text"], bool(args.get("replace_all", False)))
