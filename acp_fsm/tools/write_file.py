"""write_file: create or overwrite a text file, shown to the editor as a diff."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_fsm import redact
from acp_fsm.tools.base import Checkpoint, Drafts, ToolEnv, ToolOutcome
from acp_fsm.tools.common import MutatingTool, plural
from acp_fsm.tools.matching import eol_of, with_eol
from acp_fsm.tools.syntax import syntax_note
from acp_fsm.tools.text_files import (
    check_approved,
    check_as_shown,
    count_lines,
    current_text,
    diff_block,
    load_text,
    original,
    store_text,
)

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContent


def new_content(content: str, old: str | None) -> str:
    """What replaces `old`: `content` with the secrets the model kept as `[redacted]` put
    back, in the old file's line endings (a CRLF file stays CRLF)."""
    content = redact.configured().restore(content, old)
    return content if old is None or "\n" not in old else with_eol(content, eol_of(old))


class WriteFile(MutatingTool):
    name = "write_file"
    description = (
        "Create a text file or replace its whole content. Prefer edit_file to change part of an "
        "existing file. Missing parent directories are created."
    )
    arguments = "WriteFileArguments"
    kind = "edit"

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        return f"Write {self.shown(args, env)}"

    async def preview(
        self, args: dict[str, Any], env: ToolEnv, drafts: Drafts
    ) -> tuple[ToolCallContent, ...]:
        path, shown = self.target(args, env), self.shown(args, env)
        old = await current_text(env, drafts, path, shown, exact=False)
        content = new_content(args["content"], old)
        drafts[path] = content
        return (diff_block(path, old, content),)

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        path, shown = self.target(args, env), self.shown(args, env)
        check_approved(env, path, args["path"])
        old = await load_text(env, path, shown, exact=False)
        check_as_shown(env, path, shown, old)
        content = new_content(args["content"], old)
        await env.checkpoint([Checkpoint(path, await original(env, path, old), content)])
        await store_text(env, path, shown, content)
        lines = plural(count_lines(content), "line")
        if old is None:
            summary = f"Created {shown} ({lines})."
        elif old == content:
            summary = f"Wrote {shown} ({lines}); the content was already the same."
        else:
            summary = f"Wrote {shown} ({lines}, was {plural(count_lines(old), 'line')})."
        summary += await syntax_note(env, path, shown, old, content)
        return ToolOutcome(
            summary,
            content=(diff_block(path, old, content),),
            locations=({"path": str(path)},),
        )
