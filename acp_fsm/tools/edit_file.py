"""edit_file: replace an exact piece of text in a file, shown to the editor as a diff."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp_fsm import redact
from acp_fsm.tools.base import Drafts, ToolEnv, ToolOutcome
from acp_fsm.tools.common import MutatingTool, ToolError, plural
from acp_fsm.tools.files import (
    check_as_shown,
    current_text,
    diff_block,
    load_text,
    store_text,
)

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContent


def first_changed_line(text: str, old_text: str, new_text: str) -> int:
    """The 1-based line of `text` where replacing the first `old_text` by `new_text` changes
    something (they may share leading context lines)."""
    shared = 0
    for old_char, new_char in zip(old_text, new_text, strict=False):
        if old_char != new_char:
            break
        shared += 1
    return text.count("\n", 0, text.index(old_text) + shared) + 1


class EditFile(MutatingTool):
    name = "edit_file"
    description = (
        "Replace text in an existing file. `old_text` must match the file exactly (read the "
        "file first) and occur exactly once; include a few surrounding lines to make it unique, "
        "or set replace_all to change every occurrence. Use write_file to create a file."
    )
    arguments = "EditFileArguments"
    kind = "edit"

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Edit {self.shown(args, env)}"

    def check(self, args: dict[str, Any]) -> str | None:
        if args["old_text"] == "":
            return (
                "old_text is empty; give the exact text to replace (use write_file to "
                "create or overwrite a whole file)"
            )
        if args["old_text"] == args["new_text"]:
            return "old_text and new_text are the same; there is nothing to change"
        return None

    def _edit(self, args: dict[str, Any], text: str | None, shown: str) -> Edit:
        """The edit applied to the text as the model was shown it (secrets as `[redacted]`:
        its old_text matches there, and a match never tells it what a secret is), the secrets
        then put back where the model kept them."""
        if text is None:
            raise ToolError(f"File not found: {shown} (use write_file to create a file)")
        secrets = redact.configured()
        edit = apply_edit(
            secrets.scrub_text(text),
            args["old_text"],
            args["new_text"],
            bool(args.get("replace_all", False)),
            shown,
        )
        return Edit(text, secrets.restore(edit.after, text), edit.count, edit.line)

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        path, shown = self.target(args, env), self.shown(args, env)
        edit = self._edit(args, await current_text(env, drafts, path, shown, exact=True), shown)
        drafts[path] = edit.after
        return (diff_block(path, edit.before, edit.after),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        path, shown = self.target(args, env), self.shown(args, env)
        text = await load_text(env, path, shown, exact=True)  # now, after the approval
        check_as_shown(env, path, shown, text)
        edit = self._edit(args, text, shown)
        await store_text(env, path, shown, edit.after)
        return ToolOutcome(
            f"Edited {shown}: replaced {plural(edit.count, 'occurrence')}, first change at line "
            f"{edit.line}.",
            content=(diff_block(path, edit.before, edit.after),),
            locations=({"path": str(path), "line": edit.line},),
        )


@dataclass(frozen=True, slots=True)
class Edit:
    before: str
    after: str
    count: int  # occurrences replaced
    line: int  # first changed line


def apply_edit(text: str, old_text: str, new_text: str, replace_all: bool, shown: str) -> Edit:
    """Replace `old_text` in `text` (once, or every time with `replace_all`); `ToolError` when
    it does not occur, or occurs more than once without `replace_all`."""
    count = text.count(old_text)
    if count == 0 and "\r\n" in text and "\r\n" not in old_text:
        # The model writes `\n`; match a CRLF file by its own line endings.
        old_text = old_text.replace("\n", "\r\n")
        new_text = new_text.replace("\n", "\r\n")
        count = text.count(old_text)
    if count == 0:
        raise ToolError(
            f"old_text was not found in {shown}. It must match the file exactly, including "
            "whitespace and indentation; read the file again and copy the text to replace."
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_text occurs {count} times in {shown}. Include more surrounding lines so it "
            "occurs once, or set replace_all to true to replace every occurrence."
        )
    after = text.replace(old_text, new_text, -1 if replace_all else 1)
    return Edit(text, after, count, first_changed_line(text, old_text, new_text))
