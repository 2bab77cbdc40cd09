"""Delegation: the permission an agent asks before a tool call, and the files and terminals it
asks of the client. The scripted model makes one tool call (`script.write_prompt`,
`script.run_prompt`) with whichever tool of the agent writes a file or runs a command.

A check is not applicable when the agent does not call the model it was pointed at, offers
the model no such tool, or does not ask what the check is about: ACP lets an agent act
without asking, and on the files and processes of its own machine. What it asks is held to
the rules: of its session, during the turn, valid for the official schema, and its answer
obeyed."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import INITIALIZE, Probe
from acp_fsm.devkit.conformance.reading import Turn, clip
from acp_fsm.devkit.conformance.script import (
    DONE_TEXT,
    NO_TOOL,
    WRITTEN,
    run_prompt,
    write_prompt,
)
from acp_fsm.devkit.conformance.verdicts import Blocked, NotApplicable, Violation
from acp_fsm.devkit.editor import HOLD, Editor, Message
from acp_fsm.devkit.schema_check.official import AGENT

ALLOW: Final = ("allow_once", "allow_always")
REJECT: Final = ("reject_once", "reject_always")
PERMISSION: Final = "session/request_permission"
FILE_NAME: Final = "conformance.txt"


@dataclass
class ToolTurn:
    """A turn in which the model made one tool call, and what the agent asked of the
    client in it."""

    ctx: Context
    probe: Probe
    editor: Editor
    session_id: str
    turn: Turn
    path: Path  # the file the model asked written (a command turn writes none)

    def asked(self, prefix: str) -> list[Message]:
        """The agent's requests of methods starting with `prefix`, each held to the rules
        (a Violation otherwise); NotApplicable when the agent did not call the model, or
        the model found no tool to call, or its call was not made."""
        self.turn.needs_model()
        if NO_TOOL in self.turn.text():
            raise NotApplicable(clip(self.turn.text(), 160))
        requests = [r for r in self.editor.received if str(r["method"]).startswith(prefix)]
        if not (requests or self.editor.received or self.called()):
            raise NotApplicable(
                f"the model's tool call was not made (the agent answered "
                f"{clip(self.turn.text(), 80)!r})"
            )
        for request in requests:
            self._well_formed(request)
        return requests

    def permission(self) -> Message:
        """The agent's first permission request (NotApplicable when it asked none)."""
        asked = self.asked(PERMISSION)
        if not asked:
            raise NotApplicable(
                f"the agent made its tool call without asking permission ({self.calls()})"
            )
        return asked[0]

    def written(self) -> bool:
        """The file the model asked for holds its content: on disk, or sent to the client."""
        sent = any(
            (r.get("params") or {}).get("path") == str(self.path)
            and (r.get("params") or {}).get("content") == WRITTEN
            for r in self.editor.of_method("fs/write_text_file")
        )
        return sent or (self.path.is_file() and self.path.read_text(encoding="utf-8") == WRITTEN)

    def called(self) -> bool:
        """Whether the tool call shows: reported, its file written, or the model's reply to
        its result streamed."""
        return bool(self._updates("tool_call") or self.written() or DONE_TEXT in self.turn.text())

    def _updates(self, kind: str) -> list[Message]:
        return [m for m in self.turn.updates if m["params"]["update"].get("sessionUpdate") == kind]

    def statuses(self, call_id: Any) -> list[str]:
        """The statuses reported for tool call `call_id` before the response, in order."""
        return [
            str(update["status"])
            for m in self.turn.updates
            if (update := m["params"]["update"]).get("toolCallId") == call_id
            and update.get("status")
        ]

    def calls(self) -> str:
        """What the turn shows of the tool call, for a reason."""
        calls = len(self._updates("tool_call"))
        return f"{calls} tool_call update(s), file {'written' if self.written() else 'unwritten'}"

    def _well_formed(self, request: Message) -> None:
        """Of this session, sent before the prompt's response, valid for the schema."""
        method, params = request["method"], request.get("params") or {}
        if params.get("sessionId") != self.session_id:
            raise Violation(
                f"{method} names session {params.get('sessionId')!r}, not {self.session_id!r}"
            )
        if method == PERMISSION and not (
            isinstance(call := params.get("toolCall"), dict)
            and isinstance(call.get("toolCallId"), str)
            and isinstance(params.get("options"), list)
            and params["options"]
        ):
            raise Violation(f"{method} names no toolCall.toolCallId, or offers no options")
        if self._after_response(request):
            raise Violation(f"{method} was sent after the prompt's response")
        official = self.ctx.target.official
        problems = official.message_problems(AGENT, "request", method, request) if official else []
        if problems:
            raise Violation(f"{method} is invalid: {clip(problems[0])}")
        path = params.get("path")
        if method.startswith("fs/") and not (isinstance(path, str) and Path(path).is_absolute()):
            raise Violation(f"{method} of {path!r}: ACP paths are absolute")

    def _after_response(self, request: Message) -> bool:
        messages = self.probe.messages
        return next(i for i, m in enumerate(messages) if m is request) > next(
            i for i, m in enumerate(messages) if m is self.turn.response
        )


def client(*, fs: bool = False, terminal: bool = False) -> dict[str, Any]:
    """initialize params of a client that serves files and terminals, or does not."""
    capabilities = {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": terminal}
    return {**INITIALIZE, "clientCapabilities": capabilities}


async def tool_turn(
    ctx: Context,
    *,
    command: bool = False,
    fs: bool = False,
    terminal: bool = False,
    kinds: tuple[str, ...] = ALLOW,
    cancel: bool = False,
) -> ToolTurn:
    """A turn whose model writes a file (`command`: runs one). Permission requests are
    answered with the first option of `kinds` (an error when none is offered); with
    `cancel`, held until session/cancel."""
    editor = Editor(
        permission_kinds=() if cancel else kinds, default_permission=HOLD if cancel else None
    )
    probe = await ctx.start(editor)
    await probe.initialize(client(fs=fs, terminal=terminal))
    session_id = await probe.new_session()
    path = Path(probe.session_cwd) / FILE_NAME
    start = len(probe.messages)

    def moment() -> bool:  # asked, or the turn is over without asking
        return bool(editor.held) or any("method" not in m for m in probe.messages[start:])

    turn = await probe.prompt(
        session_id,
        run_prompt() if command else write_prompt(str(path)),
        cancel=("a permission request", moment) if cancel else False,
    )
    if "error" in turn.response:
        turn.needs_model()
        raise Violation(f"the tool turn failed: {clip(json.dumps(turn.response))}")
    return ToolTurn(ctx, probe, editor, session_id, turn, path)


def _option_kind(request: Message, kinds: tuple[str, ...]) -> str:
    """The first of `kinds` the request offers (NotApplicable when none)."""
    offered = {o.get("kind") for o in request["params"]["options"] if isinstance(o, dict)}
    kind = next((k for k in kinds if k in offered), None)
    if kind is None:
        raise NotApplicable(f"the permission request offers no option of kind {'/'.join(kinds)}")
    return kind


async def permission_reject(ctx: Context) -> str:
    done = await tool_turn(ctx, kinds=REJECT)
    kind = _option_kind(done.permission(), REJECT)
    if done.written():
        raise Violation(f"the user answered {kind}, and the file was written anyway")
    return f"answered {kind}: nothing written, the turn ended {done.turn.stop_reason}"


async def permission_allow(ctx: Context) -> str:
    done = await tool_turn(ctx)
    request = done.permission()
    kind = _option_kind(request, ALLOW)
    if not done.written():
        raise Violation(f"the user answered {kind}, and the file was not written")
    call_id = request["params"]["toolCall"]["toolCallId"]
    statuses = done.statuses(call_id)
    if "completed" not in statuses:
        raise Violation(
            f"tool call {call_id!r} ran, but no update before the response reports it "
            f"completed (statuses: {', '.join(statuses) or 'none'})"
        )
    return f"answered {kind}: written, tool call {clip(str(call_id), 40)} reported completed"


async def permission_cancel(ctx: Context) -> str:
    done = await tool_turn(ctx, cancel=True)
    done.permission()
    if done.turn.stop_reason != "cancelled":
        raise Blocked(
            "the turn cancelled while asking permission was answered "
            f"{clip(json.dumps(done.turn.response))}, not stopReason cancelled "
            "(cancel.mid_stream holds that rule)"
        )
    if done.written():
        raise Violation(
            "the turn was cancelled while it asked permission, and the file was written"
        )
    if done.turn.late:
        raise Violation(f"the turn was answered cancelled, then {done.turn.late_kinds()}")
    return "cancelled while asking: stopReason cancelled, nothing written, nothing after it"


async def fs_delegated(ctx: Context) -> str:
    done = await tool_turn(ctx, fs=True)
    requests = done.asked("fs/")
    if not requests:
        raise NotApplicable("the agent asked no fs/* request of a client serving files")
    writes = done.editor.of_method("fs/write_text_file")
    if writes and not done.written():
        raise Violation(f"fs/write_text_file sent, but not of {done.path} with the content asked")
    methods = ", ".join(sorted({str(r["method"]) for r in requests}))
    return f"{len(requests)} request(s) ({methods}), each of the session and an absolute path"


async def terminal_delegated(ctx: Context) -> str:
    done = await tool_turn(ctx, command=True, terminal=True)
    requests = done.asked("terminal/")
    if not requests:
        raise NotApplicable("the agent asked no terminal/* request of a client serving them")
    released = {r["params"].get("terminalId") for r in done.editor.of_method("terminal/release")}
    kept = [t for t in done.editor.terminals if t not in released]
    if kept:
        raise Violation(f"terminal(s) {', '.join(kept)} not released by the end of the turn")
    return f"{len(done.editor.terminals)} terminal(s), each released; {len(requests)} request(s)"


def _unasked(prefix: str, *, command: bool = False) -> Callable[[Context], Awaitable[str]]:
    async def run(ctx: Context) -> str:
        done = await tool_turn(ctx, command=command)
        requests = done.editor.received
        sent = [str(r["method"]) for r in requests if str(r["method"]).startswith(prefix)]
        if sent:
            raise Violation(f"the client did not advertise it, and the agent sent {sent[0]}")
        done.asked(prefix)  # not applicable when no tool was called
        return f"no {prefix}* request; the tool call was made ({done.calls()})"

    return run


PERMISSION_RULE: Final = "ACP tool calls, requesting permission"
CHECKS: Final = (
    Check(
        "delegation.permission_reject",
        Rule(
            PERMISSION_RULE,
            "when the agent asks permission for a tool call (of its session, during the turn) "
            "and the user rejects it, the tool does not run; the turn goes on",
        ),
        permission_reject,
    ),
    Check(
        "delegation.permission_allow",
        Rule(
            PERMISSION_RULE,
            "a tool call the user allows runs, and a tool_call_update reports it completed "
            "before the turn's response",
        ),
        permission_allow,
    ),
    Check(
        "delegation.permission_cancel",
        Rule(
            "ACP prompt turn, cancellation",
            "a turn cancelled while the agent waits for a permission (which the client then "
            "answers cancelled) does not run the tool, and nothing of it follows its response",
        ),
        permission_cancel,
    ),
    Check(
        "delegation.fs",
        Rule(
            "ACP file system",
            "the fs/* requests the agent sends a client that serves them are of its session, "
            "during the turn, with absolute paths; a write holds what was asked",
        ),
        fs_delegated,
    ),
    Check(
        "delegation.fs_unadvertised",
        Rule(
            "ACP file system, client capabilities",
            "the agent sends no fs/* request to a client that did not advertise fs",
        ),
        _unasked("fs/"),
    ),
    Check(
        "delegation.terminal",
        Rule(
            "ACP terminals",
            "the terminal/* requests the agent sends a client that serves them are of its "
            "session, during the turn; every terminal created is released",
        ),
        terminal_delegated,
    ),
    Check(
        "delegation.terminal_unadvertised",
        Rule(
            "ACP terminals, client capabilities",
            "the agent sends no terminal/* request to a client that did not advertise terminal",
        ),
        _unasked("terminal/", command=True),
    ),
)
