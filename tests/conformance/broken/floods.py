"""Breaks `transport.stdout_only` by volume: before it serves, it writes 64 MiB of log lines to
stdout, then one line longer than the tool reads as a message, while its stderr gets 64 MiB
without a single newline; then it serves as the base agent does. A tool that keeps an agent's
output takes hundreds of MiB for it (four checks run at once)."""

import sys
import threading
from typing import BinaryIO

from tests.conformance.broken.base import Agent

BLOCK_BYTES = 1 << 20  # one write
LINE = b"flood: " + b"x" * 1016 + b"\n"  # 1 KiB, not JSON
LINES_MIB = 64  # of stdout lines before serving
LONG_LINE_MIB = 16  # one stdout line this long, then its newline
STDERR_MIB = 64  # of stderr, no newline anywhere


class Floods(Agent):
    def main(self) -> None:
        stderr = threading.Thread(target=_write, args=(sys.stderr.buffer, b"e" * BLOCK_BYTES))
        stderr.start()
        lines = LINE * (BLOCK_BYTES // len(LINE))
        for _ in range(LINES_MIB):
            self.emit(lines)
        for _ in range(LONG_LINE_MIB):
            self.emit(b"y" * BLOCK_BYTES)
        self.emit(b"\n")
        stderr.join()
        super().main()


def _write(stream: BinaryIO, block: bytes) -> None:
    for _ in range(STDERR_MIB):
        stream.write(block)
        stream.flush()


if __name__ == "__main__":
    Floods().main()
