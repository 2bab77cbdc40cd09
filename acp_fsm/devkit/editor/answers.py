"""What a scripted editor answers to the agent's requests, decided without IO on the pipes.

`Editor.answer` takes one request the agent sent (`session/request_permission`, `fs/*`,
`terminal/*`) and returns the response message to write, or None when the request is held: left
unanswered until the caller releases it (`release`) or the agent withdraws it
(`$/cancel_request`, `withdrawn`). Every request is kept in `received`; one it has no answer for
is kept in `unexpected` and answered -32603.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

Message = dict[str, Any]


class _Hold:
    def __repr__(self) -> str:
        return "HOLD"


HOLD: Final = _Hold()
"""An answer the editor does not give: the request stays pending (see `Editor.held`)."""

Choice = str | _Hold
"""A permission answer: an option id, "cancelled", or `HOLD`."""

# How editors answer fs/read_text_file for a file that is neither on disk nor in a buffer.
NOT_FOUND: Final = "not_found"  # an error, -32002 (Zed)
EMPTY: Final = "empty"  # `{"content": ""}` (CodeCompanion, Toad)
# Not found until a permission request showed the file's diff, then "" (avante opens a buffer
# for the file to show the diff in).
EMPTY_ONCE_SHOWN: Final = "empty_once_shown"


KILLED: Final = {"exitCode": None, "signal": "SIGKILL"}  # how a killed terminal exited


class EditorError(Exception):
    """An error the editor answers a request with (`data` as its `error.data`)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


def permission_outcome(choice: str) -> dict[str, Any]:
    """The result of a permission request answered `choice` (an option id or "cancelled")."""
    if choice == "cancelled":
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": choice}}


def response(request: Message, answer: Any) -> Message:
    """The response to `request`: its result, or its error when `answer` is an EditorError."""
    if not isinstance(answer, EditorError):
        return {"jsonrpc": "2.0", "id": request["id"], "result": answer}
    error: dict[str, Any] = {"code": answer.code, "message": str(answer)}
    if answer.data is not None:
        error["data"] = answer.data
    return {"jsonrpc": "2.0", "id": request["id"], "error": error}


@dataclass
class Editor:
    """The answering policy of a scripted editor.

    Permissions: the answer for the call's id in `permission_for`, else the next of
    `permissions`, else the first offered option of the first of `permission_kinds` offered
    (e.g. `("reject_once", "reject_always")`), else `default_permission`. Files: read from
    the unsaved `buffers`, else the disk (from `line`, `limit` lines); written to `buffers`,
    or to the disk with `save_to_disk`. A file in neither is answered as `missing_files` says
    (`NOT_FOUND`, `EMPTY`, `EMPTY_ONCE_SHOWN`; the files opened so are kept in `opened`).
    Terminals (their ids kept in `terminals`) print `terminal_output` and exit with
    `terminal_exit`, except that `terminal_exit=HOLD`, or a command line holding one of
    `hang_commands`, never exits: its `terminal/wait_for_exit` is held, until a `terminal/kill`
    ends it (killed by `SIGKILL`) — except with `kill_stops` False, where the kill is answered
    and the command runs on, as in Toad. `overrides` replaces the answer to a method (a result,
    `HOLD` or an `EditorError`); `null_results` are served as usual but answered
    `"result": null`, as several real editors do for results with nothing in them. With
    `answer_withdrawn`, a held request the agent withdraws is answered at once as ACP asks (a
    permission "cancelled", anything else -32800)."""

    permissions: deque[Choice] = field(default_factory=deque)
    permission_for: dict[str, Choice] = field(default_factory=dict)  # toolCallId -> answer
    permission_kinds: tuple[str, ...] = ()
    default_permission: Choice | None = None
    buffers: dict[str, str] = field(default_factory=dict)  # path -> unsaved editor text
    save_to_disk: bool = False
    missing_files: str = NOT_FOUND
    opened: set[str] = field(default_factory=set)  # missing files opened to show their diffs
    terminal_output: str = ""
    terminal_exit: dict[str, Any] | _Hold = field(default_factory=lambda: {"exitCode": 0})
    hang_commands: tuple[str, ...] = ()
    kill_stops: bool = True
    overrides: dict[str, Any] = field(default_factory=dict)
    null_results: set[str] = field(default_factory=set)
    answer_withdrawn: bool = True
    received: list[Message] = field(default_factory=list)
    terminals: list[str] = field(default_factory=list)  # the ids of the terminals created
    held: list[Message] = field(default_factory=list)
    unexpected: list[Message] = field(default_factory=list)
    _terminals: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _hanging: set[str] = field(default_factory=set)
    _killed: set[str] = field(default_factory=set)  # hanging terminals a kill ended

    def answer(self, request: Message) -> Message | None:
        """The response to write to `request`; None when it is held."""
        self.received.append(request)
        method, params = request["method"], request.get("params") or {}
        if method in self.overrides:
            answer = self.overrides[method]
        else:
            answer = self._answer(method, params)
        if answer is HOLD:
            self.held.append(request)
            return None
        if answer is None:
            self.unexpected.append(request)
            answer = EditorError(-32603, "the scripted editor has no answer for this")
        elif method in self.null_results and not isinstance(answer, EditorError):
            answer = None
        return response(request, answer)

    def withdrawn(self, params: Any) -> Message | None:
        """The agent's `$/cancel_request`: the response to the held request it names, if it is
        to be answered now."""
        request_id = params.get("requestId") if isinstance(params, dict) else None
        request = next((r for r in self.held if _same_id(r["id"], request_id)), None)
        if request is None or not self.answer_withdrawn:
            return None
        self.held.remove(request)
        if request["method"] == "session/request_permission":
            return response(request, permission_outcome("cancelled"))
        return response(request, EditorError(-32800, "Request cancelled"))

    def release(self, request: Message, answer: Any) -> Message:
        """The response to a held request, which is held no more."""
        self.held.remove(request)
        return response(request, answer)

    def methods(self) -> list[str]:
        return [r["method"] for r in self.received]

    def of_method(self, method: str) -> list[Message]:
        return [r for r in self.received if r["method"] == method]

    def _answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "session/request_permission":
            self._open_shown(params)
            choice = self._permission(params)
            return (
                choice
                if choice is None or isinstance(choice, _Hold)
                else (permission_outcome(choice))
            )
        if method == "fs/read_text_file":
            return self._read(params)
        if method == "fs/write_text_file":
            return self._write(params)
        if method.startswith("terminal/"):
            return self._terminal(method, params)
        return None

    def _permission(self, params: dict[str, Any]) -> Choice | None:
        call_id = (params.get("toolCall") or {}).get("toolCallId")
        if call_id in self.permission_for:
            return self.permission_for[call_id]
        if self.permissions:
            return self.permissions.popleft()
        options = [o for o in params.get("options") or () if isinstance(o, dict)]
        for kind in self.permission_kinds:
            chosen = next((o.get("optionId") for o in options if o.get("kind") == kind), None)
            if isinstance(chosen, str):
                return chosen
        return self.default_permission

    def _open_shown(self, params: dict[str, Any]) -> None:
        """Open a buffer for each missing file whose diff the request shows (as avante does)."""
        if self.missing_files != EMPTY_ONCE_SHOWN:
            return
        for block in (params.get("toolCall") or {}).get("content") or ():
            if isinstance(block, dict) and block.get("type") == "diff":
                self.opened.add(str(block.get("path")))

    def _read(self, params: dict[str, Any]) -> dict[str, Any] | EditorError:
        """The unsaved buffer, else the file on disk, from `line` for `limit` lines; a file in
        neither as `missing_files` says."""
        path = params["path"]
        content = self.buffers.get(path)
        if content is None:
            try:
                content = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeError) as exc:
                missing = isinstance(exc, FileNotFoundError)
                if missing and (self.missing_files == EMPTY or path in self.opened):
                    return {"content": ""}
                reason = getattr(exc, "strerror", None) or str(exc)
                return EditorError(-32002, f"Resource not found: {path} ({reason})")
        lines = content.splitlines(keepends=True)[int(params.get("line") or 1) - 1 :]
        limit = params.get("limit")
        return {"content": "".join(lines if limit is None else lines[:limit])}

    def _write(self, params: dict[str, Any]) -> dict[str, Any] | EditorError:
        path, content = params["path"], params["content"]
        if not self.save_to_disk:
            self.buffers[path] = content
            return {}
        try:
            Path(path).write_text(content, encoding="utf-8")
        except OSError as exc:
            return EditorError(-32603, f"could not save {path} ({exc.strerror})")
        return {}

    def _terminal(self, method: str, params: dict[str, Any]) -> Any:
        terminal = params.get("terminalId")
        hangs = (
            isinstance(self.terminal_exit, _Hold) or terminal in self._hanging
        ) and terminal not in self._killed
        exit_status = KILLED if terminal in self._killed else self.terminal_exit
        if method == "terminal/create":
            terminal = f"term-{next(self._terminals)}"
            self.terminals.append(terminal)
            command = " ".join([params["command"], *params.get("args", [])])
            if any(word in command for word in self.hang_commands):
                self._hanging.add(terminal)
            return {"terminalId": terminal}
        if method == "terminal/wait_for_exit":
            return HOLD if hangs else exit_status
        if method == "terminal/output":
            result: dict[str, Any] = {"output": self.terminal_output, "truncated": False}
            if not hangs:
                result["exitStatus"] = exit_status
            return result
        if method == "terminal/kill":
            if hangs and self.kill_stops and isinstance(terminal, str):
                self._killed.add(terminal)
            return {}
        if method == "terminal/release":
            return {}
        return None


def _same_id(a: Any, b: Any) -> bool:
    """JSON-RPC ids compare by type and value: 1, 1.0, "1" and true are four ids."""
    return type(a) is type(b) and a == b


def id_key(msg_id: Any) -> tuple[str, Any]:
    """A dict key for a JSON-RPC id that keeps 1, 1.0, "1" and true apart."""
    return (type(msg_id).__name__, msg_id)
