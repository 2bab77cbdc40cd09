"""A local command's output followed live in a display-only terminal of the agent's own (ACP
v2: `terminal_update`, `terminal_output_chunk`; docs/protocol-v2.md), for a client that has
no terminal of its own to run it in.

The terminal is announced (its command and folder) before the call's content names it; its
output goes as base64 chunks of at most `CHUNK_BYTES`, gathered for `GATHER_S` so a chatty
command sends a few a second, and at most `SHOWN_BYTES` of it, then a note that the rest is not
shown (what the model reads is the command's result, cut as always); its exit status ends it.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acp_fsm.schemas.acp_types import ToolCallContentTerminal

# How long output is gathered before it is sent, and how much of it is shown in all.
GATHER_S = 0.05
CHUNK_BYTES = 64 * 1024
SHOWN_BYTES = 1024 * 1024
CUT_NOTE = b"\r\n[acp-fsm: the rest of the output is not shown here; the model reads its end]\r\n"

Send = Callable[[dict[str, Any]], None]


class ShownTerminal:
    """One command's terminal, shown through `send` (the turn's session updates)."""

    def __init__(self, send: Send, command: str, cwd: str) -> None:
        self.id = f"term_{secrets.token_hex(6)}"
        self._send = send
        self._pending = bytearray()
        self._shown = 0  # bytes of output sent or gathered
        self._cut = False  # output came past `SHOWN_BYTES`: the note said so
        self._flush: asyncio.TimerHandle | None = None
        send(
            {
                "sessionUpdate": "terminal_update",
                "terminalId": self.id,
                "command": command,
                "cwd": cwd,
            }
        )

    @property
    def block(self) -> ToolCallContentTerminal:
        """The call's content that shows the terminal."""
        return {"type": "terminal", "terminalId": self.id}

    def feed(self, data: bytes) -> None:
        """Output read from the command (on the event loop)."""
        if self._cut:
            return
        room = SHOWN_BYTES - self._shown
        kept = data[:room]
        self._shown += len(kept)
        self._pending += kept
        if len(data) > len(kept):
            self._cut = True
            self._pending += CUT_NOTE
        while len(self._pending) >= CHUNK_BYTES:
            self._send_chunk(bytes(self._pending[:CHUNK_BYTES]))
            del self._pending[:CHUNK_BYTES]
        if self._pending and self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(GATHER_S, self.flush)

    def flush(self) -> None:
        """Send the output gathered so far."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if self._pending:
            self._send_chunk(bytes(self._pending))
            self._pending.clear()

    def _send_chunk(self, data: bytes) -> None:
        encoded = base64.b64encode(data).decode("ascii")
        self._send(
            {"sessionUpdate": "terminal_output_chunk", "terminalId": self.id, "data": encoded}
        )

    def exited(self, code: int | None, signal: str | None) -> None:
        """The command ended: its exit code, or the signal that ended it (neither known: both
        None)."""
        self.flush()
        status: dict[str, Any] = {}
        if code is not None:
            status["exitCode"] = code
        if signal is not None:
            status["signal"] = signal
        self._send(
            {"sessionUpdate": "terminal_update", "terminalId": self.id, "exitStatus": status}
        )
