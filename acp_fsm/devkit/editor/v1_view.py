"""An ACP v2 connection as a client written for v1 sees it (docs/protocol-v2.md): what lets
the end-to-end suite's scenarios, written in v1's words, run again on v2 (tests/e2e/support.py).

It is the client's side of `acp_fsm.dialects`, the other way: what the client sends in v1's
words is said in v2's (`outgoing`), and what the agent writes in v2's is read back in v1's
(`incoming`). A prompt's v2 answer (its message's id, once stored) is held, and the prompt is
answered as v1 answers it when its session goes idle with a stop reason (or -32800, a prompt
cancelled before it was stored: `cancelled`). The first `tool_call_update` of an id is its
`tool_call`, a `plan_update` the `plan`; v2's own updates (`state_update`, the prompt's echo)
are not shown. Nothing is invented: a v2 message that v1 cannot say is left as it came.
"""

from __future__ import annotations

import collections
from typing import Any, Final

from acp_fsm.devkit.editor.answers import id_key

Message = dict[str, Any]

V2: Final = 2
# v2's updates a v1 client has no words for (the idle ends a prompt: `_idle`).
UNSHOWN: Final = frozenset({"state_update", "user_message"})
CANCELLED: Final = -32800


class V1View:
    """One v2 connection, seen in v1's words (see the module docstring)."""

    def __init__(self) -> None:
        self._methods: dict[Any, str] = {}  # our requests' ids → their v1 methods
        self._prompts: dict[Any, str] = {}  # prompts sent, unanswered: id → session id
        # each session's prompts the agent took, oldest first, whose end its idle tells
        self._taken: dict[str, collections.deque[Any]] = collections.defaultdict(collections.deque)
        self._calls: set[tuple[str, str]] = set()  # the tool calls shown, by session

    # ------------------------------------------------------------------ what we send

    def outgoing(self, message: Any) -> Any:
        """A message the client writes, as v2 says it."""
        if not isinstance(message, dict) or "method" not in message:
            return message
        method, params = message["method"], message.get("params")
        if "id" in message:
            self._methods[id_key(message["id"])] = method
            if method == "session/prompt" and isinstance(params, dict):
                self._prompts[id_key(message["id"])] = params.get("sessionId", "")
        if method == "initialize" and isinstance(params, dict):
            return {**message, "params": initialize_params(params)}
        renamed = RENAMED.get(method)
        if renamed is not None:
            message = {**message, "method": renamed}
        if not isinstance(params, dict):
            return message
        if method in ("session/set_mode", "session/set_model"):  # options in v2
            option, value = (
                ("mode", "modeId") if method == "session/set_mode" else ("model", "modelId")
            )
            said = {"sessionId": params.get("sessionId"), "configId": option, "type": "id"}
            return {**message, "params": {**said, "value": params.get(value)}}
        if method == "session/set_config_option" and "type" not in params:
            return {**message, "params": {**params, "type": "id"}}  # v1's select
        if method in ("session/new", "session/resume", "session/fork", "session/load"):
            params = _mcp_servers(params)
        if method == "session/load":
            params = {**params, "replayFrom": {"type": "start"}}
        return {**message, "params": params}

    # ------------------------------------------------------------ what the agent says

    def wire_method(self, method: str | None) -> str | None:
        """The v2 name of our request `method` (v1's name)."""
        return None if method is None else RENAMED.get(method, method)

    def incoming(self, message: Message) -> list[Message]:
        """A message the agent wrote, as v1 says it: none, it, or a prompt's answer."""
        if "method" not in message:
            return self._answer(message)
        if message["method"] == "session/update":
            return self._update(message)
        if message["method"] == "session/request_permission":
            return [{**message, "params": permission_params(message.get("params") or {})}]
        return [message]

    def _answer(self, message: Message) -> list[Message]:
        key = id_key(message.get("id"))
        method = self._methods.pop(key, None)
        if method == "session/prompt":
            session_id = self._prompts.pop(key, "")
            if "result" in message:  # taken: answered when its session goes idle
                self._taken[session_id].append(message.get("id"))
                return []
            if message.get("error", {}).get("code") == CANCELLED:
                return [_response(message.get("id"), {"stopReason": "cancelled"})]
            return [message]
        if "result" not in message or not isinstance(message["result"], dict):
            return [message]
        result = message["result"]
        if method == "initialize":
            return [{**message, "result": initialize_result(result)}]
        if method in ("session/set_mode", "session/set_model"):
            return [{**message, "result": {}}]
        if "configOptions" in result:
            options = [v1_option(o) for o in result["configOptions"]]
            return [{**message, "result": {**result, "configOptions": options}}]
        return [message]

    def _update(self, message: Message) -> list[Message]:
        params = message.get("params") or {}
        update = params.get("update") or {}
        session_id = str(params.get("sessionId", ""))
        kind = str(update.get("sessionUpdate"))
        if kind == "state_update":
            return self._idle(session_id, update)
        if kind in UNSHOWN:
            return []
        said = self._said(session_id, kind, update)
        return [] if said is None else [{**message, "params": {**params, "update": said}}]

    def _said(self, session_id: str, kind: str, update: Message) -> Message | None:
        if kind == "tool_call_update":
            key = (session_id, update.get("toolCallId", ""))
            first = key not in self._calls
            self._calls.add(key)
            if update.get("status") == "cancelled":  # v1 has no word for it
                update = {**update, "status": "failed"}
            return {**update, "sessionUpdate": "tool_call"} if first else update
        if kind == "plan_update":
            return {"sessionUpdate": "plan", "entries": update["plan"].get("entries", [])}
        if kind == "plan_removed":
            return {"sessionUpdate": "plan", "entries": []}
        if kind == "available_commands_update":
            commands = [_command(c) for c in update.get("availableCommands", [])]
            return {**update, "availableCommands": commands}
        if kind == "config_option_update":
            options = [v1_option(o) for o in update.get("configOptions", [])]
            return {**update, "configOptions": options}
        return update

    def _idle(self, session_id: str, update: Message) -> list[Message]:
        """A prompt's answer, when `update` ends the oldest one its session took."""
        taken = self._taken.get(session_id)
        if update.get("state") != "idle" or "stopReason" not in update or not taken:
            return []
        result: Message = {"stopReason": update["stopReason"]}
        if "_meta" in update:
            result["_meta"] = update["_meta"]
        if update["stopReason"] == "error":  # v1 answers a failed turn with its error
            return [{"jsonrpc": "2.0", "id": taken.popleft(), "error": update.get("error")}]
        return [_response(taken.popleft(), result)]


# v1's methods that v2 renamed.
RENAMED: Final = {
    "authenticate": "auth/login",
    "logout": "auth/logout",
    "session/load": "session/resume",
    "session/set_mode": "session/set_config_option",
    "session/set_model": "session/set_config_option",
}


def initialize_params(params: Message) -> Message:
    """v1's `initialize` params as v2's: version 2, `info` and `capabilities`."""
    said: Message = {"protocolVersion": V2}
    said["info"] = params.get("clientInfo") or {"name": "acp-fsm-client", "version": "0"}
    capabilities = {
        k: v
        for k, v in (params.get("clientCapabilities") or {}).items()
        if k not in ("fs", "terminal")
    }
    said["capabilities"] = capabilities
    return said


def initialize_result(result: Message) -> Message:
    """v2's `initialize` result as v1's (the capabilities left in v2's shape)."""
    said = {k: v for k, v in result.items() if k not in ("info", "capabilities")}
    said["agentInfo"] = result.get("info")
    said["agentCapabilities"] = result.get("capabilities")
    said["authMethods"] = [
        {("id" if k == "methodId" else k): v for k, v in m.items()}
        for m in result.get("authMethods", [])
    ]
    return said


def permission_params(params: Message) -> Message:
    """v2's permission request as v1's: the tool call its subject is about."""
    subject = params.get("subject") or {}
    said = {k: v for k, v in params.items() if k != "subject"}
    if subject.get("type") == "tool_call":
        said["toolCall"] = subject.get("toolCall")
    return said


def v1_option(option: Message) -> Message:
    return {("id" if k == "configId" else k): v for k, v in option.items()}


def _command(command: Message) -> Message:
    said = {k: v for k, v in command.items() if k != "type"}
    given = command.get("input")
    if isinstance(given, dict) and given.get("type") == "text":
        said["input"] = {k: v for k, v in given.items() if k != "type"}
    return said


def _mcp_servers(params: Message) -> Message:
    """Session setup params with each MCP server's `type` said (v2 requires it)."""
    servers = params.get("mcpServers")
    if not isinstance(servers, list):
        return params
    typed = [
        {"type": "stdio", **s} if isinstance(s, dict) and "type" not in s else s for s in servers
    ]
    return {**params, "mcpServers": typed}


def _response(msg_id: Any, result: Message) -> Message:
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}
