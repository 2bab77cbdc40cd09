"""The scripted session's cast: the tool calls the model makes and the editor's answer to
each (`CALLS`, `scripted_editor`), the model's replies (`model_replies`), and the agent's
environment (`agent_env`); `scenario` plays them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.editor import HOLD, Choice, Editor

# The tool calls of the script: call id -> (tool, the editor's answer to its permission request;
# None: no request expected).
CALLS: Final[dict[str, tuple[str, Choice | None]]] = {
    "call_read": ("read_file", "allow_once"),  # outside the roots, so the user is asked
    "call_write": ("write_file", "allow_once"),
    "call_edit": ("edit_file", "reject_once"),
    "call_run": ("run_command", "allow_always"),  # stores `Bash(echo hello:*)`
    "call_list": ("list_directory", "reject_always"),  # outside the roots
    "call_search": ("search_files", "cancelled"),  # outside the roots; the client's own cancel
    "call_edit2": ("edit_file", "allow_once"),
    "call_multi": ("multi_edit", "allow_once"),
    "call_patch": ("apply_patch", "allow_once"),
    "call_glob": ("glob", "reject_once"),  # outside the roots
    "call_fetch": ("fetch_url", "reject_once"),  # a page is outside the project
    "call_slow": ("run_command", None),  # allowed by the rule call_run's answer stored
    "call_held": ("write_file", HOLD),  # answered after the agent's $/cancel_request
    "call_plan": ("update_plan", None),  # never asks
    "call_task": ("task", None),  # never asks: its subagent only reads
    "call_ask": ("ask_user", None),  # a question: a form (`elicitation/create`), not a permission
}
# The editor's answer to the question's form.
FORM_ANSWER: Final = {"action": "accept", "content": {"answer": "Report"}}


def scripted_editor() -> Editor:
    """The editor of the session: permissions answered per call as `CALLS` says; files from
    its buffers, else the disk; terminals that print "hello" and exit 0, except `--slowly`, which
    never exits (its `wait_for_exit` answered -32800 when the agent withdraws it)."""
    return Editor(
        permission_for={
            call_id: answer for call_id, (_, answer) in CALLS.items() if answer is not None
        },
        terminal_output="hello\n",
        terminal_exit={"exitCode": 0, "signal": None},
        hang_commands=("--slowly",),
        overrides={"elicitation/create": FORM_ANSWER},
    )


PNG_1X1: Final = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def model_replies(project: Path, outside: Path) -> list[Any]:
    """The model's replies, in the order the turns below consume them."""
    from acp_fsm.devkit.provider import Call, HttpError, Reply

    def call(call_id: str, **arguments: Any) -> Call:
        return Call(call_id, CALLS[call_id][0], json.dumps(arguments))

    slow = tuple(f"word{i} " for i in range(60))
    return [
        Reply(
            thinking=("Let me look ", "at the project first."),
            text=("I will read the notes, ", "write a module ", "and fix main.py."),
            calls=(
                call("call_read", path=str(outside / "notes.txt")),
                call("call_write", path="hello.py", content="print('hello')\n"),
                call("call_edit", path="main.py", old_text="x = 1", new_text="x = 2"),
            ),
        ),
        Reply(text="The edit was rejected; the rest is done."),
        Reply(
            text="Running the tools.",
            calls=(
                call("call_run", command="echo hello"),
                call("call_list", path=str(outside)),
                call("call_search", pattern="note", path=str(outside)),
                call(
                    "call_edit2", path=str(project / "main.py"), old_text="x = 1", new_text="x = 3"
                ),
                call(
                    "call_plan",
                    entries=[
                        {"content": "Run the tools", "priority": "high", "status": "completed"},
                        {"content": "Report", "priority": "low", "status": "pending"},
                    ],
                ),
                call(
                    "call_multi",
                    path="hello.py",
                    edits=[{"old_text": "print(", "new_text": 'print("hi", '}],
                ),
                call(
                    "call_patch",
                    patch="*** Begin Patch\n*** Add File: patched.py\n+x = 1\n*** End Patch\n",
                ),
                call("call_glob", pattern="*.txt", path=str(outside)),
                call("call_fetch", url="https://example.com/"),
                call("call_ask", question="Which step next?", options=["Report", "Stop"]),
                call("call_task", description="Find notes", prompt="Where are the notes?"),
            ),
        ),
        Reply(text="The notes are in notes.txt."),  # the subagent's report
        Reply(text="All done."),
        Reply(calls=(call("call_slow", command="echo hello --slowly", timeout_ms=300),)),
        Reply(text="The command timed out."),
        Reply(text=slow, delay_s=0.05),  # cancelled by session/cancel
        Reply(text="Writing it.", calls=(call("call_held", path="later.py", content="later\n"),)),
        Reply(text=slow, delay_s=0.05),  # cancelled by $/cancel_request
        Reply(text="Still here."),
        Reply(text="SUMMARY: the tools ran; the notes are in notes.txt."),  # /compact
        HttpError(500, "the scripted model is down"),  # the prompt fails (error with data)
    ]


# The title call after the first turn is made with a model of its own, answered on the
# scripted server's lane for it (`ScriptedProvider.lanes`): the session's script stays whole.
TITLE_MODEL = "schema-check-title-model"


def agent_env(home: Path, openai_base_url: str) -> dict[str, str]:
    """The agent's environment: the scripted provider, a private store, strict schemas, JSON
    logs, the `_acp_fsm/*` diagnostics; nothing inherited that would configure it otherwise."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ACP_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(
        ACP_FSM_PROVIDER="openai",
        OPENAI_BASE_URL=openai_base_url,
        OPENAI_API_KEY="sk-schema-check",
        ACP_FSM_HOME=str(home),
        ACP_FSM_MAX_RETRIES="0",
        ACP_FSM_STRICT_SCHEMAS="1",
        ACP_FSM_DEBUG_METHODS="1",
        ACP_FSM_LOG_FORMAT="json",
        ACP_FSM_LOG_LEVEL="info",
        ACP_FSM_TITLE_MODEL=TITLE_MODEL,
    )
    return env
