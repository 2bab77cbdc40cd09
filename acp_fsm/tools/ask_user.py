"""ask_user: a question from the model to the user, answered before the turn goes on.

With an editor that shows forms it is an `elicitation/create` form (a choice when options are
given, several with `multi_select`, free text otherwise); with one that does not, the options
become those of a `session/request_permission` (one choice; free text cannot be asked then,
and the model is told so). The answer, a decline or a dismissal is the call's result.
"""

from __future__ import annotations

from typing import Any

from acp_fsm.client import ClientCallError
from acp_fsm.questions import ACCEPT, DECLINE, FIELD, ask_user_question
from acp_fsm.tools.base import ToolCallView, ToolEnv, ToolOutcome
from acp_fsm.tools.common import BaseTool
from acp_fsm.updates import text_block

ASK_USER_TOOL = "ask_user"
TITLE_CHARS = 200
NO_ANSWER = (
    "The user did not answer in time; the question was withdrawn. Go on without the answer "
    "if you can, or ask again in your reply and end the turn."
)
NO_FREE_TEXT = (
    "This editor cannot show a question with a typed answer (it does not support forms), so "
    "the user was not asked. Give options to choose from, or ask in your reply and end the turn."
)


class AskUser(BaseTool):
    name = ASK_USER_TOOL
    description = (
        "Ask the user a question and wait for the answer, when you cannot go on without their "
        "decision (which of two designs, whether to delete something, a value only they "
        "know). Give options when the answer is a choice (multi_select to allow several); "
        "leave them out for a typed answer. Do not ask what you can find out yourself."
    )
    arguments = "AskUserArguments"
    kind = "think"  # changes nothing: offered in Plan mode and to reviews

    def view(self, args: dict[str, Any], env: ToolEnv) -> ToolCallView:
        """The question as the call's title and content, of kind `other` in the editor (as
        its permission request is, `Client.ask`): clients draw `think` as reasoning."""
        return ToolCallView(
            title=self.title(args, env),
            kind="other",
            raw_input=dict(args),
            content=(text_block(str(args.get("question", "")).strip()),),
        )

    def title(self, args: dict[str, Any], env: ToolEnv) -> str:
        question = " ".join(str(args.get("question", "")).split())
        cut = question if len(question) <= TITLE_CHARS else question[: TITLE_CHARS - 1] + "…"
        return f"Question: {cut}"

    def check(self, args: dict[str, Any]) -> str | None:
        if not args["question"].strip():
            return "question is blank: say what the user is to answer"
        if args.get("multi_select") and not args.get("options"):
            return "multi_select needs options to choose from"
        return None

    def confined(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return True  # it touches nothing

    def needs_permission(self, args: dict[str, Any], env: ToolEnv) -> bool:
        return False  # the question is itself the asking

    async def execute(self, args: dict[str, Any], env: ToolEnv) -> ToolOutcome:
        options = tuple(args.get("options") or ())
        multi = bool(args.get("multi_select"))
        question = ask_user_question(args["question"].strip(), options, multi)
        forms = env.client.shows_forms
        if not options and not forms:
            return ToolOutcome(NO_FREE_TEXT, is_error=True)
        try:
            answer = await env.token.race(
                env.client.ask(question, env.call_id, self.title(args, env))
            )
        except ClientCallError as exc:
            env.token.raise_if_cancelled()
            if exc.timed_out:  # withdrawn: the user may be away
                return ToolOutcome(NO_ANSWER)
            return ToolOutcome(f"The editor could not ask the question: {exc}", is_error=True)
        single_only = multi and not forms
        if answer.action == DECLINE:
            return ToolOutcome("The user declined to answer.")
        if answer.action != ACCEPT:
            return ToolOutcome("The user dismissed the question without answering.")
        value = (answer.content or {}).get(FIELD)
        if isinstance(value, list):
            chosen = ", ".join(str(v) for v in value)
            note = " (the editor lets the user pick only one)" if single_only else ""
            return ToolOutcome(f"The user chose: {chosen}{note}")
        if value is None or value == "":
            return ToolOutcome("The user answered nothing.")
        said = "chose" if options else "answered"
        return ToolOutcome(f"The user {said}: {value}")
