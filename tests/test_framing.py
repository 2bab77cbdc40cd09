"""LineFramer: newline framing at every chunking, blank lines, the line limit, end of input.

Pure tier: bytes in, lines out. The same input must give the same lines whether it arrives
whole, byte by byte or in arbitrary pieces (STYLE §8). An `Overlong` marker's `size` is how
much of the line was seen before the framer gave up, so it legitimately depends on chunking;
chunking comparisons therefore compare markers by kind, and exact sizes are pinned separately.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fsm.protocol.framing import HEAD_BYTES, MAX_LINE_BYTES, LineFramer, Overlong

LIMIT = 64

Out = list[bytes | Overlong]

quick = settings(database=None, deadline=None, max_examples=150)


def feed_all(chunks: Iterable[bytes], limit: int = LIMIT) -> tuple[Out, bytes | None]:
    """Feed every chunk to a fresh framer; return everything it emitted and close()."""
    framer = LineFramer(limit)
    out: Out = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    return out, framer.close()


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = []
    previous = 0
    for point in [*points, len(data)]:
        pieces.append(data[previous:point])
        previous = point
    return pieces


def kinds(out: Out) -> list[bytes | str]:
    """Lines as they are; every Overlong as the same marker (its size depends on chunking)."""
    return ["<overlong>" if isinstance(item, Overlong) else item for item in out]


# ------------------------------------------------------------------ basic lines


def test_default_limit_is_64_mib() -> None:
    assert MAX_LINE_BYTES == 64 * 1024 * 1024


def test_complete_lines_in_one_chunk() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert framer.buffered == 0
    assert framer.close() is None


def test_partial_line_is_held_until_its_newline() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b'{"a":') == []
    assert framer.buffered == 5
    assert framer.feed(b"1}") == []
    assert framer.buffered == 7
    assert framer.feed(b"\n{") == [b'{"a":1}']
    assert framer.buffered == 1
    assert framer.feed(b"}\n") == [b"{}"]
    assert framer.buffered == 0


def test_blank_and_whitespace_lines_are_dropped() -> None:
    data = b"\n\n  \n\t\r\n\r\nx\n \t \n\ny\n"
    assert feed_all([data]) == ([b"x", b"y"], None)
    assert feed_all(bytewise(data)) == ([b"x", b"y"], None)


def test_trailing_carriage_return_is_kept() -> None:
    assert feed_all([b"a\r\nb\r\n"]) == ([b"a\r", b"b\r"], None)
    assert feed_all(bytewise(b"a\r\nb\r\n")) == ([b"a\r", b"b\r"], None)


def test_inner_whitespace_is_kept_verbatim() -> None:
    assert feed_all([b'  {"a": 1}  \n']) == ([b'  {"a": 1}  '], None)


SAMPLE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize"}\n'
    b"\n"
    b"   \r\n"
    b'{"jsonrpc":"2.0","method":"n","params":{"text":"\xc3\xa9\\n"}}\r\n'
    b"[1,2,3]\n"
    b'{"tail":true}'
)
SAMPLE_LINES: list[bytes | str] = [
    b'{"jsonrpc":"2.0","id":1,"method":"initialize"}',
    b'{"jsonrpc":"2.0","method":"n","params":{"text":"\xc3\xa9\\n"}}\r',
    b"[1,2,3]",
]


@pytest.mark.parametrize(
    "chunking",
    ["whole", "bytewise", "pairs", "odd-sevens"],
)
def test_sample_same_lines_at_every_fixed_chunking(chunking: str) -> None:
    if chunking == "whole":
        chunks = [SAMPLE]
    elif chunking == "bytewise":
        chunks = bytewise(SAMPLE)
    elif chunking == "pairs":
        chunks = [SAMPLE[i : i + 2] for i in range(0, len(SAMPLE), 2)]
    else:
        chunks = [SAMPLE[i : i + 7] for i in range(0, len(SAMPLE), 7)]
    out, rest = feed_all(chunks, limit=1024)
    assert out == SAMPLE_LINES
    assert rest == b'{"tail":true}'


def test_empty_feed_is_a_no_op() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"") == []
    assert framer.feed(b"ab") == []
    assert framer.feed(b"") == []
    assert framer.feed(b"\n") == [b"ab"]


# ------------------------------------------------------------------ line limit


def test_line_exactly_at_limit_is_accepted() -> None:
    line = b"x" * LIMIT
    assert feed_all([line + b"\n"]) == ([line], None)
    assert feed_all(bytewise(line + b"\n")) == ([line], None)


def test_unterminated_line_exactly_at_limit_is_still_buffered() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"x" * LIMIT) == []
    assert framer.buffered == LIMIT
    assert framer.feed(b"\n") == [b"x" * LIMIT]


def test_limit_counts_the_carriage_return() -> None:
    # The \r is part of the line: LIMIT bytes + \r is one byte too many.
    assert feed_all([b"x" * LIMIT + b"\r\n"]) == ([Overlong(LIMIT + 1)], None)


def test_overlong_line_with_newline_in_same_chunk() -> None:
    data = b"a\n" + b"x" * (LIMIT + 1) + b"\nb\n"
    assert feed_all([data]) == ([b"a", Overlong(LIMIT + 1), b"b"], None)


def test_overlong_line_reported_once_when_newline_arrives_much_later() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"a\n" + b"x" * 40) == [b"a"]
    # Crossing the limit reports the line once, with what was seen so far ...
    assert framer.feed(b"x" * 40) == [Overlong(80)]
    assert framer.buffered == 0
    # ... and nothing of it is buffered or reported again while it goes on.
    for _ in range(50):
        assert framer.feed(b"y" * 1000) == []
        assert framer.buffered == 0
    # The newline ends the skip; the next line is delivered.
    assert framer.feed(b"yyy\nnext\n") == [b"next"]
    assert framer.close() is None


def test_overlong_line_fed_byte_by_byte() -> None:
    data = b"x" * 200 + b"\n" + b'{"ok":1}\n'
    assert feed_all(bytewise(data)) == ([Overlong(LIMIT + 1), b'{"ok":1}'], None)


def test_overlong_then_newline_in_a_chunk_with_more_lines() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"x" * 100) == [Overlong(100)]
    assert framer.feed(b"x" * 10 + b"\nfirst\n\nsecond\nthi") == [b"first", b"second"]
    assert framer.feed(b"rd\n") == [b"third"]


def test_two_overlong_lines_are_two_reports() -> None:
    data = b"x" * 70 + b"\n" + b"y" * 90 + b"\nz\n"
    assert feed_all([data]) == ([Overlong(70), Overlong(90), b"z"], None)
    assert kinds(feed_all(bytewise(data))[0]) == ["<overlong>", "<overlong>", b"z"]


@quick
@given(cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_an_overlong_lines_head_is_its_start_at_every_chunking(cuts: list[int]) -> None:
    """What an overlong line was, for a report: its first `HEAD_BYTES`, however it arrives."""
    long_line = bytes(range(256)).replace(b"\n", b"-") * 3
    data = b"a\n" + long_line + b"\nb\n"
    for chunks in ([data], bytewise(data), split_at(data, cuts)):
        out, _ = feed_all(chunks, limit=300)
        assert [(item.head if isinstance(item, Overlong) else item) for item in out] == [
            b"a",
            long_line[:HEAD_BYTES],
            b"b",
        ]


def test_overlong_whitespace_line_is_still_overlong() -> None:
    assert feed_all([b" " * 100 + b"\nz\n"]) == ([Overlong(100), b"z"], None)


# ------------------------------------------------------------------ close()


def test_close_returns_unterminated_last_line() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b'a\n{"last":1}') == [b"a"]
    assert framer.close() == b'{"last":1}'
    assert framer.buffered == 0


def test_close_ignores_a_whitespace_tail() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"a\n  \r") == [b"a"]
    assert framer.close() is None


def test_close_on_empty_input() -> None:
    assert LineFramer(LIMIT).close() is None


def test_close_after_overlong_unterminated_line_returns_nothing() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"x" * 100) == [Overlong(100)]
    assert framer.feed(b"more of the same line") == []
    assert framer.close() is None


def test_close_after_overlong_line_ended_returns_following_tail() -> None:
    framer = LineFramer(LIMIT)
    assert framer.feed(b"x" * 100) == [Overlong(100)]
    assert framer.feed(b"\ntail") == []
    assert framer.close() == b"tail"


def test_overlong_marker_value_semantics() -> None:
    assert Overlong(3) == Overlong(3)
    assert Overlong(3) != Overlong(4)
    assert Overlong(3) != 3
    assert hash(Overlong(3)) == hash(Overlong(3))
    assert repr(Overlong(70)) == "Overlong(70)"


# ------------------------------------------------------------------ properties

line_bytes = st.binary(max_size=90).map(lambda b: b.replace(b"\n", b""))
line_list = st.lists(
    st.one_of(
        line_bytes,
        st.sampled_from([b"", b" ", b"\r", b"\t \r", b'{"id":1}', b"x" * LIMIT, b"y" * 80]),
    ),
    max_size=12,
)


@quick
@given(lines=line_list, terminated=st.booleans(), cuts=st.lists(st.integers(0, 2000), max_size=8))
def test_chunking_never_changes_the_lines(
    lines: list[bytes], terminated: bool, cuts: list[int]
) -> None:
    data = b"\n".join(lines) + (b"\n" if terminated else b"")
    whole, whole_rest = feed_all([data])
    single, single_rest = feed_all(bytewise(data))
    random, random_rest = feed_all(split_at(data, cuts))
    assert kinds(single) == kinds(whole)
    assert kinds(random) == kinds(whole)
    assert single_rest == whole_rest == random_rest


@quick
@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 400), max_size=10))
def test_arbitrary_bytes_give_only_lines_or_overlong(data: bytes, cuts: list[int]) -> None:
    framer = LineFramer(16)
    out: Out = []
    for chunk in split_at(data, cuts):
        out.extend(framer.feed(chunk))
    rest = framer.close()
    for item in out:
        if isinstance(item, Overlong):
            assert item.size > 16
        else:
            assert type(item) is bytes
            assert b"\n" not in item
            assert 0 < len(item) <= 16
            assert item.strip()
    if rest is not None:
        assert type(rest) is bytes
        assert b"\n" not in rest
        assert rest.strip()
    # One report per overlong physical line, never more.
    physical = data.split(b"\n")
    assert sum(isinstance(i, Overlong) for i in out) == sum(len(p) > 16 for p in physical)


@quick
@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=10))
def test_lines_reconstruct_the_non_blank_input_lines(data: bytes, cuts: list[int]) -> None:
    framer = LineFramer(1024)  # nothing here can be overlong
    out: Out = []
    for chunk in split_at(data, cuts):
        out.extend(framer.feed(chunk))
    rest = framer.close()
    assert not any(isinstance(i, Overlong) for i in out)
    expected = [line for line in data.split(b"\n") if line.strip()]
    got = [line for line in out if isinstance(line, bytes)]
    terminated = data.endswith(b"\n") or not data.split(b"\n")[-1].strip()
    if terminated:
        assert rest is None
        assert b"".join(line + b"\n" for line in got) == b"".join(e + b"\n" for e in expected)
    else:
        assert rest == expected[-1]
        assert got == expected[:-1]
