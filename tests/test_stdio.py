"""The serving process's stderr (`protocol.stdio.StderrWriter`): a log line can neither raise
nor block, whatever the editor does with the other end."""

from __future__ import annotations

import json
import os

from acp_fsm.protocol.stdio import StderrWriter, read_line_blocking


def drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    try:
        while chunk := os.read(fd, 1 << 20):
            data += chunk
    except BlockingIOError:
        pass
    os.set_blocking(fd, True)
    return data


def line(event: str, pad: int = 0) -> str:
    return json.dumps({"event": event, "pad": "a" * pad}) + "\n"


def test_a_closed_reader_turns_logging_off_without_raising() -> None:
    read_end, write_end = os.pipe()
    writer = StderrWriter(write_end)
    os.close(read_end)  # the editor is gone
    assert writer.write(line("A")) == len(line("A"))  # EPIPE, swallowed
    assert writer.broken
    writer.write(line("B"))  # and nothing is tried again
    os.close(write_end)


def test_a_full_pipe_drops_lines_and_never_glues_them() -> None:
    """A line cut short by a full pipe is ended before the next one that fits, also when a
    line in between was dropped whole; the pipe stays blocking for whoever shares it."""
    read_end, write_end = os.pipe()
    try:
        writer = StderrWriter(write_end)
        writer.write(line("A", pad=200_000))  # more than the pipe holds: cut
        writer.write(line("B"))  # no room at all: dropped whole
        first = drain(read_end)
        writer.write(line("C"))
        lines = (first + drain(read_end)).split(b"\n")
        assert lines[-2:] == [line("C").encode().rstrip(), b""]
        assert not lines[-3].endswith(b"}")  # A's fragment, on a line of its own
        assert b'"B"' not in first
        assert writer.dropped == 2 and not writer.broken
        assert os.get_blocking(write_end)
    finally:
        os.close(read_end)
        os.close(write_end)


def test_lines_written_in_pieces_are_not_split() -> None:
    """`print` writes the text and its newline separately; nothing is added between."""
    read_end, write_end = os.pipe()
    try:
        writer = StderrWriter(write_end)
        print("hello", file=writer)
        writer.write("")
        print("world", file=writer)
        assert drain(read_end) == b"hello\nworld\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_startup_read_goes_on_from_what_it_read_and_waits_no_longer_than_told() -> None:
    reader, writer = os.pipe()
    try:
        # a line already read is returned without reading, the bytes after it kept
        assert read_line_blocking(reader, 100, b"one\ntwo", 0.0) == (b"one", b"two", False)
        # no newline within the time: nothing is lost, input has not ended
        assert read_line_blocking(reader, 100, b"tw", 0.01) == (None, b"tw", False)
        os.write(writer, b"o\nthree")
        assert read_line_blocking(reader, 100, b"tw", 5.0) == (b"two", b"three", False)
        os.close(writer)
        writer = -1
        assert read_line_blocking(reader, 100, b"three", 5.0) == (None, b"three", True)
    finally:
        os.close(reader)
        if writer >= 0:
            os.close(writer)
