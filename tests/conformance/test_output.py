"""What the conformance tool keeps of an agent's output (`conformance.output`), pure: the same
values and counts however stdout arrives, and every buffer within its limit whatever it
holds."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fsm.devkit.conformance.output import (
    KEPT_MESSAGES,
    LINE_HEAD,
    RECENT_LINES,
    STDERR_KEPT,
    STRAYS_SHOWN,
    Flood,
    Line,
    Output,
)
from acp_fsm.protocol.framing import HEAD_BYTES

LIMIT = 100  # the longest line read as a message, in these tests
MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": {}}
BATCH = [{"jsonrpc": "2.0", "id": 2, "result": {}}]
STREAM = b"".join(
    [
        json.dumps(MESSAGE).encode() + b"\n",
        b"a log line\n",
        b"\n",  # blank: not a line
        b'{"not": "json-rpc"}\n',
        b"z" * (LIMIT + 50) + b"\n",  # over the limit: not read
        json.dumps(BATCH).encode() + b"\r\n",
        b"{broken\n",
        b'{"jsonrpc": "2.0", "method": "m"}',  # the last, without a newline
    ]
)
quick = settings(database=None, deadline=None, max_examples=100)


def read(chunks: Iterable[bytes]) -> tuple[Output, list[Any]]:
    output = Output(LIMIT)
    values = [value for chunk in chunks for value in output.read(chunk)]
    return output, [*values, *output.end()]


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@quick
@given(cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_the_same_values_and_counts_at_every_chunking(cuts: list[int]) -> None:
    bytewise = [STREAM[i : i + 1] for i in range(len(STREAM))]
    for chunks in ([STREAM], bytewise, split_at(STREAM, cuts)):
        output, values = read(chunks)
        assert values == [MESSAGE, {"not": "json-rpc"}, BATCH, {"jsonrpc": "2.0", "method": "m"}]
        assert (output.lines, output.bytes, output.kept) == (7, len(STREAM), 4)
        assert (output.strays.count, output.strays.overlong) == (4, 1)
        shown = [(line.head[:12], line.overlong) for line in output.strays.shown]
        assert shown == [
            (b"a log line", False),
            (b'{"not": "jso', False),
            (b"z" * 12, True),
            (b"{broken", False),
        ]


def test_a_stray_is_shown_after_the_line_written_before_it() -> None:
    output = Output(LIMIT)
    output.wrote(b'{"id": 1}\n{"id": 2}\n')
    list(output.read(b"one\ntwo\n"))
    output.wrote(b'{"id": 3}\n')
    list(output.read(b"three\n"))
    assert [(line.arrow, line.head) for line in output.strays.shown] == [
        (">", b'{"id": 2}'),
        ("<", b"one"),
        ("<", b"two"),
        (">", b'{"id": 3}'),
        ("<", b"three"),
    ]
    assert [line.head for line in output.recent] == [
        b'{"id": 1}',
        b'{"id": 2}',
        b"one",
        b"two",
        b'{"id": 3}',
        b"three",
    ]


def test_every_buffer_keeps_to_its_limit_under_a_flood() -> None:
    output = Output(4 * LINE_HEAD)  # lines longer than their head, and shorter than the limit
    lines = b"".join(b"log %d " % n + b"x" * 2000 + b"\n" for n in range(1000))
    for _ in range(5):
        assert list(output.read(lines)) == []
        output.stderr.add(b"e" * 100_000)
    assert list(output.read(b"y" * 50_000)) == []  # a line without its newline, yet
    assert (output.lines, output.strays.count, output.strays.overlong) == (5001, 5001, 1)
    assert len(output.strays.shown) == STRAYS_SHOWN and len(output.recent) == RECENT_LINES
    assert all(len(line.head) <= LINE_HEAD for line in (*output.recent, *output.strays.shown))
    assert output.strays.shown[0] == Line("<", b"log 0 " + b"x" * (LINE_HEAD - 6), 2006)
    assert output.recent[-1] == Line("<", b"y" * HEAD_BYTES, 50_000, overlong=True)
    assert (len(output.stderr.kept), output.stderr.bytes) == (STDERR_KEPT, 500_000)


def test_past_the_messages_kept_the_agent_is_flooding() -> None:
    output = Output(LIMIT)
    line = json.dumps({"jsonrpc": "2.0", "method": "m"}).encode() + b"\n"
    assert len(list(output.read(line * KEPT_MESSAGES))) == KEPT_MESSAGES
    with pytest.raises(Flood, match=r"more than 5,000 messages or 16 MiB of them \(5,001, "):
        list(output.read(line))


def test_stderr_counts_its_lines_and_keeps_its_end() -> None:
    output = Output(LIMIT)
    output.stderr.add(b"first\n" + b"x" * STDERR_KEPT)
    output.stderr.add(b"last\n")
    assert output.stderr.kept.endswith(b"xlast\n") and b"first" not in output.stderr.kept
    assert (output.stderr.lines, len(output.stderr.kept)) == (2, STDERR_KEPT)
