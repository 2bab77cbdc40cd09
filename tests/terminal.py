"""A command in a pseudo-terminal, driven as a person would: what it prints, what is typed.

ACP's terminal login has the editor run `acp-fsm login` in an interactive terminal; the tests
do the same, so the hidden key input, the prompts and the exit status are the real ones.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence

from tests.harness import agent_command

TIMEOUT_S = 15.0


class Terminal:
    """`acp-fsm <args>` with a pseudo-terminal as its stdin, stdout and stderr."""

    def __init__(self, args: Sequence[str], env: Mapping[str, str]) -> None:
        master, slave = os.openpty()
        # its own session and process group, as a terminal's foreground job
        self.proc = subprocess.Popen(
            [*agent_command(), *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=dict(env),
            start_new_session=True,
        )
        os.close(slave)
        self._master = master
        self.screen = ""  # everything shown so far, echoed input included
        self._seen = 0  # where the last text expected ends

    def expect(self, text: str, timeout: float = TIMEOUT_S) -> None:
        """Read until `text` is shown after what was last expected."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, self._seen)) < 0:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{text!r} never shown; the screen:\n{self.screen}")
        self._seen = found + len(text)

    def type(self, line: str) -> None:
        """Type `line` and press Enter."""
        os.write(self._master, line.encode() + b"\r")

    def interrupt(self) -> None:
        """Ctrl+C: the terminal sends SIGINT to its foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self, timeout: float = TIMEOUT_S) -> int:
        """Wait for the command to exit; its exit status (the rest of the screen read)."""
        deadline = time.monotonic() + timeout
        while self._read(max(0.0, deadline - time.monotonic())):
            pass
        code = self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        os.close(self._master)
        return code

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self._master, 4096)
        except OSError:  # the command exited and the terminal closed
            return False
        self.screen += data.decode(errors="replace").replace("\r\n", "\n")
        return bool(data)
