"""The ACP registry's nightly protocol matrix, as it probes a listed agent: started without
credentials, `initialize` with the registry's client capabilities, `session/new`, then
session/list, fork, resume, set_model and (when advertised, on a real session) close, each
given 5 s. Each check runs that sequence up to its own probe, reports the registry's verdict
(`data.matrixVerdict`: the registry's status, and the error code) and holds it to what the
agent advertises: a method it advertises is served, no probe goes unanswered or errs, and a
session/new refused for want of credentials leaves the editor a way to log in."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from acp_fsm.devkit.conformance.context import Context
from acp_fsm.devkit.conformance.model import Check, Rule
from acp_fsm.devkit.conformance.probe import Probe
from acp_fsm.devkit.conformance.reading import asks_authentication, clip
from acp_fsm.devkit.conformance.verdicts import Blocked, NotApplicable, Violation
from acp_fsm.devkit.editor import Message, NoAnswer

CLIENT: Final = {
    "protocolVersion": 1,
    "clientInfo": {"name": "ACP Registry Protocol Matrix", "version": "0.1.0"},
    "clientCapabilities": {
        "terminal": True,
        "fs": {"readTextFile": True, "writeTextFile": True},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}
# The registry probes with no credentials: the keys the tool gives, and the usual others.
CREDENTIALS: Final = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
)
PROBE_S: Final = 5.0
NO_SESSION: Final = "sess_matrix_probe"  # the id probed when session/new gave none
PROBES: Final = ("session/list", "session/fork", "session/resume", "session/set_model")
SUPPORTED: Final = frozenset({"success", "invalid_params", "resource_not_found"})
COUNTED: Final = SUPPORTED | {"method_not_found", "auth_required"}
_ERRORS: Final = {
    -32601: "method_not_found",
    -32602: "invalid_params",
    -32002: "resource_not_found",
    -32800: "cancelled",
}


@dataclass(frozen=True)
class Reading:
    """The registry's reading of one answer: its status, the error code, the message."""

    status: str
    code: int | None = None
    message: str = ""

    def shown(self) -> str:
        meaning = (
            "supported"
            if self.status in SUPPORTED
            else {"method_not_found": "not served", "auth_required": "auth required"}.get(
                self.status, self.status
            )
        )
        code = f" ({self.code})" if self.code is not None else ""
        return f"{meaning}: {self.status}{code}"


def read(response: Message) -> Reading:
    """A response as the registry classifies it."""
    if "result" in response:
        return Reading("success")
    error = response.get("error")
    if not isinstance(error, dict):
        return Reading("error", message="the error is not an object")
    code = error.get("code") if isinstance(error.get("code"), int) else None
    message = str(error.get("message") or "")
    if code == -32601:
        return Reading("method_not_found", code, message)
    if asks_authentication(error):
        return Reading("auth_required", code, message)
    return Reading(_ERRORS.get(code, "error") if code is not None else "error", code, message)


@dataclass
class Probing:
    """The registry's steps so far on one agent."""

    probe: Probe
    initialized: dict[str, Any]
    new: Reading
    session_id: str | None  # the one session/new gave

    def advertised(self, name: str) -> bool:
        """The registry's reading of `sessionCapabilities.<name>`: present and not null
        (close: an object)."""
        capabilities = self.initialized.get("agentCapabilities")
        session = (
            capabilities.get("sessionCapabilities") if isinstance(capabilities, dict) else None
        )
        value = session.get(name) if isinstance(session, dict) else None
        return isinstance(value, dict) if name == "close" else value is not None

    async def ask(self, method: str, params: Any) -> tuple[Reading, Message | None]:
        try:
            response = await self.probe.answer(method, params)
        except NoAnswer as exc:
            status = "process_error" if self.probe.eof else "no_response"
            return Reading(status, message=str(exc)), None
        return read(response), response


async def started(ctx: Context) -> Probing:
    """The agent without credentials, initialized as the registry does, and session/new."""
    probe = await ctx.start(unset=CREDENTIALS)
    probe.wait_s = min(probe.wait_s, PROBE_S)
    initialized = await probe.initialize(CLIENT)
    sequence = Probing(probe, initialized, Reading("not_probed"), None)
    sequence.new, response = await sequence.ask(
        "session/new", {"cwd": probe.session_cwd, "mcpServers": []}
    )
    session_id = ((response or {}).get("result") or {}).get("sessionId")
    if sequence.new.status == "success" and isinstance(session_id, str) and session_id:
        sequence.session_id = session_id
    return sequence


def _params(method: str, session_id: str, cwd: str) -> dict[str, Any]:
    if method == "session/list":
        return {}
    if method == "session/set_model":
        return {"sessionId": session_id, "modelId": "matrix-model"}
    if method == "session/close":
        return {"sessionId": session_id}
    return {"sessionId": session_id, "cwd": cwd, "mcpServers": []}


def _judged(ctx: Context, verdict: Reading, what: str, evidence: Message | None) -> str:
    """The verdict kept for the report; a Violation when the registry cannot count it."""
    ctx.data["matrixVerdict"] = {"status": verdict.status, "code": verdict.code}
    if verdict.status not in COUNTED:
        answered = f": {clip(json.dumps(evidence))}" if evidence else f" ({verdict.message})"
        raise Violation(f"{what}: the registry reads {verdict.status}{answered}")
    return verdict.shown()


async def session_new(ctx: Context) -> str:
    sequence = await started(ctx)
    shown = _judged(ctx, sequence.new, "session/new without credentials", None)
    if sequence.new.status == "auth_required":
        methods = sequence.initialized.get("authMethods")
        if not (isinstance(methods, list) and methods):
            raise Violation(
                "session/new without credentials asks for authentication "
                f"({sequence.new.code}: {clip(sequence.new.message, 80)}), and initialize "
                "advertised no authMethods to log in with"
            )
        return f"{shown}, with {len(methods)} auth method(s) advertised"
    if sequence.session_id is None:
        raise Violation("session/new without credentials gave no sessionId")
    return shown


def _probe_check(method: str) -> Callable[[Context], Awaitable[str]]:
    async def run(ctx: Context) -> str:
        sequence = await started(ctx)
        cwd = sequence.probe.session_cwd
        for earlier in PROBES[: PROBES.index(method)] if method in PROBES else PROBES:
            await sequence.ask(earlier, _params(earlier, sequence.session_id or NO_SESSION, cwd))
        name = method.removeprefix("session/")
        if method == "session/close":
            if not sequence.advertised("close"):
                raise NotApplicable("sessionCapabilities.close not advertised (as an object)")
            if sequence.session_id is None:
                raise Blocked("session/new gave no session to close (matrix.session_new)")
        session_id = sequence.session_id or NO_SESSION
        verdict, response = await sequence.ask(method, _params(method, session_id, cwd))
        shown = _judged(ctx, verdict, method, response)
        advertised = method != "session/set_model" and sequence.advertised(name)
        if advertised and verdict.status == "method_not_found":
            raise Violation(f"sessionCapabilities.{name} is advertised, and {method} is -32601")
        if method == "session/close" and not isinstance((response or {}).get("result"), dict):
            raise Violation(f"session/close of a real session gave no object result: {shown}")
        return f"{shown}{', advertised' if advertised else ''}"

    return run


SOURCE: Final = "ACP registry, protocol matrix (no credentials, the registry's client)"
PROBE_RULE: Final = (
    "answered within 5 s with a result, or -32601 when not served (never for a method "
    "advertised in sessionCapabilities), -32602 / -32002 for the probe's params, or "
    "auth required (-32000)"
)
CHECKS: Final = (
    Check(
        "matrix.session_new",
        Rule(
            SOURCE,
            "session/new without credentials gives a session, or asks for authentication "
            "(-32000) with authMethods advertised by initialize to log in with",
        ),
        session_new,
    ),
    *(
        Check(
            f"matrix.{m.removeprefix('session/')}",
            Rule(SOURCE, f"{m}: {PROBE_RULE}"),
            _probe_check(m),
        )
        for m in PROBES
    ),
    Check(
        "matrix.close",
        Rule(
            SOURCE,
            "when sessionCapabilities.close is an object, session/close of the session "
            "session/new gave answers an object result within 5 s",
        ),
        _probe_check("session/close"),
    ),
)
