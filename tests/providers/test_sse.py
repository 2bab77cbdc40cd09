"""SseDecoder, sans-IO: every chunking of a stream gives the same events."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_fsm.providers import sse
from acp_fsm.providers.sse import SseDecoder, SseError, SseEvent
from tests.providers.conftest import split

SAMPLE = (
    b"\xef\xbb\xbf: a comment first\n"
    b"retry: 3000\n"
    b"id: 7\n"
    b"event: greeting\n"
    b"data: h\xc3\xa9llo\n"
    b"data:w\xc3\xb6rld \xf0\x9f\x8e\x89\r\n"
    b"\r\n"
    b"data:  two spaces\r"
    b"\r"
    b": keep-alive\n\n"
    b"event: no-data\n\n"
    b"data\n\n"
    b"id: 8\x00x\n"
    b"retry: 1.5\n"
    b"data: last\r\n\r\n"
)
EXPECTED = [
    SseEvent("greeting", "héllo\nwörld 🎉", "7", 3000),
    SseEvent("message", " two spaces", "7", 3000),
    SseEvent("message", "", "7", 3000),
    SseEvent("message", "last", "7", 3000),
]


def decode(chunks: Iterable[bytes]) -> list[SseEvent]:
    decoder = SseDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


def test_whole() -> None:
    assert decode([SAMPLE]) == EXPECTED


def test_byte_by_byte() -> None:
    assert decode(SAMPLE[i : i + 1] for i in range(len(SAMPLE))) == EXPECTED


def test_every_two_way_split() -> None:
    for cut in range(len(SAMPLE) + 1):
        assert decode([SAMPLE[:cut], SAMPLE[cut:]]) == EXPECTED, cut


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(SAMPLE)), max_size=30))
def test_random_splits(cuts: list[int]) -> None:
    assert decode(split(SAMPLE, cuts)) == EXPECTED


def test_empty_chunks_are_harmless() -> None:
    assert decode([b"", SAMPLE[:40], b"", SAMPLE[40:], b""]) == EXPECTED


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"data: a\r\n\r\n", [SseEvent("message", "a")]),
        (b"data: a\r\r", [SseEvent("message", "a")]),
        (b"data: a\n\n", [SseEvent("message", "a")]),
        (b"data: a\n", []),  # no blank line: the event is discarded at the end
        (b"data: a", []),
        (b"event: x\ndata: a\n\n", [SseEvent("x", "a")]),
        (b"event: x\n\ndata: a\n\n", [SseEvent("message", "a")]),  # type reset without data
        (b"event:x\ndata: a\n\n", [SseEvent("x", "a")]),
        (b"event:  x\ndata: a\n\n", [SseEvent(" x", "a")]),  # one space is taken off
        (b"event: x\nevent\ndata: a\n\n", [SseEvent("message", "a")]),  # no colon: empty
        (b"data:a\ndata:\ndata: b\n\n", [SseEvent("message", "a\n\nb")]),
        (b"DATA: a\n\n", []),  # field names are case-sensitive
        (b"data : a\n\n", []),  # "data " is another field
        (b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n", []),  # only one BOM is stripped
        (b"data: \xff\xfe\n\n", [SseEvent("message", "\ufffd\ufffd")]),
        (
            b"id: 1\ndata: a\n\nid\ndata: b\n\n",
            [SseEvent("message", "a", "1"), SseEvent("message", "b", "")],
        ),
        (b"retry: 10\ndata: a\n\n", [SseEvent("message", "a", None, 10)]),
    ],
)
def test_field_rules(stream: bytes, expected: list[SseEvent]) -> None:
    assert decode([stream]) == expected
    assert decode(stream[i : i + 1] for i in range(len(stream))) == expected


def test_lone_cr_at_a_chunk_end_ends_the_line_and_absorbs_a_following_lf() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r") == []
    # The \n completes the \r\n: it is not a second, blank line dispatching "a" alone.
    assert decoder.feed(b"\ndata: b\r\n\r\n") == [SseEvent("message", "a\nb")]


def test_cr_cr_at_a_chunk_end_dispatches_at_once() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r\r") == [SseEvent("message", "a")]
    assert decoder.feed(b"\ndata: b\n\n") == [SseEvent("message", "b")]
    assert decoder.close() == []


def test_bom_split_across_chunks() -> None:
    assert decode([b"\xef", b"\xbb", b"\xbfdata: a\n\n"]) == [SseEvent("message", "a")]


def test_oversized_event_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_CHARS", 16)
    with pytest.raises(SseError, match="event larger than 16 characters"):
        SseDecoder().feed(b"data: 12345678\ndata: 12345678\n")
    with pytest.raises(SseError, match="event larger than 16 characters"):
        SseDecoder().feed(b"data: " + b"x" * 40)  # a line still waiting for its end
    assert (
        SseDecoder().feed(b"data: 1234567\n\ndata: 1234567\n\n")
        == [SseEvent("message", "1234567")] * 2
    )  # the limit is per event


SSE_TOKENS = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event: x",
        b"id: 1",
        b"id",
        b"retry: 5",
        b":c",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"\xc3\xa9",
        b"\xf0\x9f",
        b"\x8e\x89",
        b"\xef\xbb\xbf",
        b"x",
        b" ",
        b"\x00",
        b"\xff",
    ]
)
STREAMS = st.one_of(st.binary(max_size=200), st.lists(SSE_TOKENS, max_size=60).map(b"".join))


@settings(max_examples=400, deadline=None)
@given(STREAMS, st.lists(st.integers(0, 600), max_size=12))
def test_any_bytes_give_the_same_events_at_any_chunking(data: bytes, cuts: list[int]) -> None:
    whole = decode([data])
    assert all(isinstance(event, SseEvent) for event in whole)
    assert decode(split(data, cuts)) == whole


@settings(max_examples=300, deadline=None)
@given(STREAMS, st.lists(st.integers(0, 600), max_size=12))
def test_any_bytes_give_events_or_sse_error(data: bytes, cuts: list[int]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sse, "MAX_EVENT_CHARS", 24)
        try:
            events = decode(split(data, cuts))
        except SseError:
            return
    assert all(isinstance(event, SseEvent) for event in events)


@pytest.mark.parametrize(
    "data",
    [
        '{"choices":[{"delta":{"content":"tok "}}]}',
        '{"a":1,"a":2}',  # the last of duplicate members wins in both readers
        '[1e-400, -0, 1.5, "\\u00e9\\ud83c\\udf89"]',
        '{"x": NaN, "y": -Infinity, "z": 1e400}',  # orjson refuses these; Python's json reads them
        '"\\ud800"',  # a lone surrogate: the same
    ],
)
def test_event_data_reads_as_pythons_json_reads_it(data: str) -> None:
    parsed = sse.json_data(SseEvent("message", data))
    assert repr(parsed) == repr(json.loads(data))


def test_event_data_that_is_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        sse.json_data(SseEvent("message", "{not json"))
