"""A minimal ACP agent that keeps every rule the conformance suite checks: JSON-RPC over
stdio, the handshake, sessions, a prompt streamed from the model at `$OPENAI_BASE_URL` (Chat
Completions) with two tools (`write_file`, `run_command`) run after the user's permission,
through the client's files and terminals when it serves them, and session/cancel. Each broken
agent overrides one hook."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

Message = dict[str, Any]
TOOLS: list[Message] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": "string"} for key in keys},
                "required": keys,
            },
        },
    }
    for name, description, keys in (
        ("write_file", "Write a file", ["path", "content"]),
        ("run_command", "Run a shell command", ["command"]),
    )
]
OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


class Turn:
    """One prompt turn: its updates are written only until its response is."""

    def __init__(self, agent: Agent, request_id: Any, session_id: str) -> None:
        self.agent = agent
        self.request_id = request_id
        self.session_id = session_id
        self.done = False
        self.lock = threading.Lock()

    def update(self, update: Message) -> None:
        with self.lock:
            if not self.done:
                self.agent.notify_update(self.session_id, update)

    def finish(self, stop_reason: str) -> bool:
        """Answer the prompt, once; False when it was answered already."""
        with self.lock:
            if self.done:
                return False
            self.done = True
            self.agent.write(self.agent.result(self.request_id, {"stopReason": stop_reason}))
            return True


class Agent:
    tools: ClassVar[list[Message]] = TOOLS  # what the model is offered

    def __init__(self) -> None:
        self.out = sys.stdout.buffer
        self.write_lock = threading.Lock()
        self.initialized = False
        self.turns: dict[str, Turn | None] = {}
        self.ids = itertools.count(1)
        self.client: Message = {}  # the client's capabilities
        self.asked: dict[str, tuple[threading.Event, list[Message]]] = {}

    # -------------------------------------------------------------- hooks (one per rule)

    def log(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def before_initialize(self, request: Message) -> Message:
        """The answer to a request that comes before initialize."""
        return self.error(request.get("id"), -32002, "Server not initialized")

    def echo(self, msg_id: Any) -> Any:
        """The id a response carries."""
        return msg_id

    def batch(self, items: list[Any]) -> Any:
        """The answer to a batch: an array of the requests' answers (none: nothing)."""
        answers = [a for a in map(self.handle, items) if a is not None]
        return answers or None

    def cancel(self, turn: Turn) -> None:
        turn.finish("cancelled")

    def after_turn(self, turn: Turn) -> None:
        """Called once a turn was answered end_turn."""

    def allowed(self, outcome: Message) -> bool:
        """Whether the user's answer to a permission request allows the tool call."""
        chosen = outcome.get("optionId")
        return outcome.get("outcome") == "selected" and any(
            o["optionId"] == chosen and o["kind"].startswith("allow") for o in OPTIONS
        )

    def delegates(self, capability: str) -> bool:
        """Whether the client serves `capability` ("fs", "terminal") for the tools."""
        served = self.client.get(capability)
        return bool(served.get("writeTextFile") if isinstance(served, dict) else served)

    def release(self, session_id: str, terminal_id: str) -> None:
        self.ask("terminal/release", {"sessionId": session_id, "terminalId": terminal_id})

    # ---------------------------------------------------------------------------- output

    def emit(self, data: bytes) -> None:
        with self.write_lock:
            self.out.write(data)
            self.out.flush()

    def write(self, message: Any) -> None:
        self.emit(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def result(self, msg_id: Any, result: Any) -> Message:
        return {"jsonrpc": "2.0", "id": self.echo(msg_id), "result": result}

    def error(self, msg_id: Any, code: int, message: str) -> Message:
        return {
            "jsonrpc": "2.0",
            "id": self.echo(msg_id),
            "error": {"code": code, "message": message},
        }

    def notify_update(self, session_id: str, update: Message) -> None:
        params = {"sessionId": session_id, "update": update}
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": params})

    # ----------------------------------------------------------------------------- input

    def main(self) -> None:
        self.log("conformance agent: serving on stdio")
        for line in sys.stdin.buffer:
            if line.strip():
                answer = self.handle_line(line)
                if answer is not None:
                    self.write(answer)

    def handle_line(self, line: bytes) -> Any:
        try:
            value = json.loads(line)
        except ValueError:
            return self.error(None, -32700, "Parse error")
        if isinstance(value, list):
            return self.batch(value) if value else self.error(None, -32600, "empty batch")
        return self.handle(value)

    def handle(self, message: Any) -> Message | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return self.error(None, -32600, "Invalid Request")
        if "method" not in message and str(message.get("id")) in self.asked:
            done, response = self.asked.pop(str(message["id"]))
            response.append(message)
            done.set()
            return None
        method, params = str(message.get("method")), message.get("params") or {}
        if "id" not in message:
            if method == "session/cancel" and self.initialized:
                turn = self.turns.get(str(params.get("sessionId")))
                if turn is not None and not turn.done:
                    self.cancel(turn)
            return None
        self.log(f"conformance agent: {method}")
        msg_id = message["id"]
        serve = self.serve(method)
        if serve is None:
            return self.error(msg_id, -32601, f"Method not found: {method}")
        if not self.initialized and method != "initialize":
            return self.before_initialize(message)
        answer: Message | None = serve(msg_id, params)
        return answer

    # --------------------------------------------------------------------------- methods

    def serve(self, method: str) -> Any:
        """The handler of a method (None: not served)."""
        return {
            "initialize": self.initialize,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
        }.get(method)

    def initialize(self, msg_id: Any, params: Message) -> Message:
        if self.initialized:
            return self.error(msg_id, -32002, "already initialized")
        self.initialized = True
        self.client = params.get("clientCapabilities") or {}
        asked = params.get("protocolVersion")
        return self.result(
            msg_id,
            {
                "protocolVersion": asked if asked == 1 else 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "conformance-base", "version": "1"},
                "authMethods": [],
            },
        )

    def new_session(self, msg_id: Any, params: Message) -> Message:
        session_id = f"sess-{next(self.ids)}"
        self.turns[session_id] = None
        return self.result(msg_id, {"sessionId": session_id})

    def prompt(self, msg_id: Any, params: Message) -> Message | None:
        session_id = params.get("sessionId")
        if session_id not in self.turns:
            return self.error(msg_id, -32002, f"no session {session_id}")
        text = " ".join(
            b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text"
        )
        turn = self.turns[session_id] = Turn(self, msg_id, str(session_id))
        threading.Thread(target=self.run_turn, args=(turn, text), daemon=True).start()
        return None  # the turn answers

    def run_turn(self, turn: Turn, text: str) -> None:
        messages: list[Message] = [{"role": "user", "content": text}]
        try:
            while not turn.done:
                said, calls = [], []
                for piece in self.stream(messages):
                    if isinstance(piece, str):
                        said.append(piece)
                        turn.update(
                            {
                                "sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": piece},
                            }
                        )
                    else:
                        calls.append(piece)
                if not calls:
                    break
                messages.append(
                    {"role": "assistant", "content": "".join(said), "tool_calls": calls}
                )
                for call in calls:
                    result = self.call_tool(turn, call)
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        except OSError as exc:
            self.log(f"conformance agent: the model failed: {exc}")
        if turn.finish("end_turn"):
            self.after_turn(turn)

    # ---------------------------------------------------------------------------- tools

    def ask(self, method: str, params: Message) -> Message:
        """A request to the client, and its response (the turn's thread waits for it)."""
        msg_id = f"agent-{next(self.ids)}"
        done, response = threading.Event(), list[Message]()
        self.asked[msg_id] = (done, response)
        self.write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        done.wait()
        return response[0]

    def call_tool(self, turn: Turn, call: Message) -> str:
        """One tool call, after the user's permission: its result for the model."""
        name, call_id = call["function"]["name"], call["id"]
        try:
            arguments = json.loads(call["function"]["arguments"] or "{}")
        except ValueError:
            arguments = {}
        kind = "edit" if name == "write_file" else "execute"
        tool = {"toolCallId": call_id, "title": name, "kind": kind, "rawInput": arguments}
        turn.update({"sessionUpdate": "tool_call", "status": "pending", **tool})
        asked = self.ask(
            "session/request_permission",
            {"sessionId": turn.session_id, "toolCall": tool, "options": OPTIONS},
        )
        outcome = (asked.get("result") or {}).get("outcome") or {}
        if turn.done or not self.allowed(outcome):
            turn.update(
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"}
            )
            return "The user did not allow this."
        try:
            result = self.run_tool(turn.session_id, name, arguments)
        except (OSError, KeyError, subprocess.SubprocessError) as exc:
            turn.update(
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"}
            )
            return f"Failed: {exc}"
        turn.update(
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"}
        )
        return result

    def run_tool(self, session_id: str, name: str, arguments: Message) -> str:
        if name == "write_file":
            path, content = arguments["path"], arguments["content"]
            if not self.delegates("fs"):
                Path(path).write_text(content, encoding="utf-8")
            elif "error" in (
                answer := self.ask(
                    "fs/write_text_file",
                    {"sessionId": session_id, "path": path, "content": content},
                )
            ):
                raise OSError(answer["error"].get("message"))
            return f"Wrote {path}."
        command = arguments["command"]
        if not self.delegates("terminal"):
            done = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=30, check=False
            )
            return done.stdout + done.stderr
        created = self.ask(
            "terminal/create", {"sessionId": session_id, "command": "sh", "args": ["-c", command]}
        )
        terminal_id = created["result"]["terminalId"]
        ids = {"sessionId": session_id, "terminalId": terminal_id}
        self.ask("terminal/wait_for_exit", ids)
        output = self.ask("terminal/output", ids).get("result") or {}
        self.release(session_id, terminal_id)
        return str(output.get("output", ""))

    def stream(self, messages: list[Message]) -> Iterator[str | Message]:
        """The model's reply, delta by delta (OpenAI Chat Completions, streamed): text as it
        comes, then each whole tool call."""
        body = {
            "model": "conformance-model",
            "stream": True,
            "messages": messages,
            "tools": self.tools,
        }
        request = urllib.request.Request(
            os.environ.get("OPENAI_BASE_URL", "").rstrip("/") + "/chat/completions",
            json.dumps(body).encode(),
            {
                "Content-Type": "application/json",
                "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}",
            },
        )
        calls: dict[int, Message] = {}
        with urllib.request.urlopen(request, timeout=60) as response:
            for raw in response:
                line = raw.decode("utf-8").strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                for choice in json.loads(line[5:]).get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        yield delta["content"]
                    for part in delta.get("tool_calls") or ():
                        call = calls.setdefault(
                            part.get("index", 0),
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "", "arguments": ""},
                            },
                        )
                        call["id"] += part.get("id") or ""
                        function = part.get("function") or {}
                        call["function"]["name"] += function.get("name") or ""
                        call["function"]["arguments"] += function.get("arguments") or ""
        yield from calls.values()


if __name__ == "__main__":
    Agent().main()
