"""SSE parser and chunked decoder: re-chunking changes nothing; junk is only ever an error."""

from __future__ import annotations

import os
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.harness.errors import HarnessError
from benchmarks.harness.http11 import ChunkedDecoder, parse_head
from benchmarks.harness.sse import SSEEvent, SSEParser

EXAMPLES = 30 if os.environ.get("CI") else 150
MAX_EVENT_BYTES = 4096

SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
line_text = st.text(
    alphabet=st.characters(exclude_characters="\r\n", exclude_categories=SURROGATES), max_size=40
)
events = st.lists(
    st.tuples(st.sampled_from(["", "error", "ping"]), st.lists(line_text, min_size=1, max_size=3)),
    max_size=6,
)


def _stream(items: list[tuple[str, list[str]]], newline: str, comments: bool) -> bytes:
    parts = []
    for name, lines in items:
        if comments:
            parts.append(f": keep-alive{newline}")
        if name:
            parts.append(f"event: {name}{newline}")
        parts.extend(f"data: {line}{newline}" for line in lines)
        parts.append(newline)
    return "".join(parts).encode()


def _expected(items: list[tuple[str, list[str]]]) -> list[SSEEvent]:
    return [SSEEvent(name or "message", "\n".join(lines)) for name, lines in items]


def _parse(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser(MAX_EVENT_BYTES)
    return [event for chunk in chunks for event in parser.feed(chunk)]


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    events,
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.booleans(),
    st.lists(st.integers(0, 10_000), max_size=12),
)
def test_any_rechunking_of_a_valid_stream_yields_the_same_events(
    items: list[tuple[str, list[str]]], newline: str, comments: bool, cuts: list[int]
) -> None:
    data = _stream(items, newline, comments)
    assert _parse([data]) == _expected(items)
    assert _parse(_split(data, cuts)) == _expected(items)
    assert _parse([data[i : i + 1] for i in range(len(data))]) == _expected(items)
    blank = (newline * 2).encode()
    per_event = [piece + blank for piece in data.split(blank) if piece]  # the usual reads
    assert _parse(per_event) == _parse([b"".join(per_event)])


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.binary(max_size=3 * MAX_EVENT_BYTES), max_size=8))
def test_arbitrary_bytes_only_ever_raise_a_protocol_error(chunks: list[bytes]) -> None:
    parser = SSEParser(MAX_EVENT_BYTES)
    codes = []
    for chunk in chunks:
        try:
            parser.feed(chunk)
        except HarnessError as exc:
            codes.append(exc.code)
            break
        held = len(parser._partial) + sum(len(part) for part in parser._data)
        assert held <= 2 * MAX_EVENT_BYTES + 8
    assert set(codes) <= {"protocol", "too_large"}


def test_an_oversized_line_is_refused_before_it_ends() -> None:
    parser = SSEParser(MAX_EVENT_BYTES)
    with pytest.raises(HarnessError) as caught:
        parser.feed(b"data: " + b"x" * (MAX_EVENT_BYTES + 10))
    assert caught.value.code == "too_large"


def test_an_oversized_event_of_many_lines_is_refused() -> None:
    parser = SSEParser(MAX_EVENT_BYTES)
    lines = b"data: " + b"x" * 100 + b"\n"
    for _ in range(MAX_EVENT_BYTES // 101 - 1):
        parser.feed(lines)
    with pytest.raises(HarnessError) as caught:
        parser.feed(lines * 2)
    assert caught.value.code == "too_large"


def test_invalid_utf8_is_a_protocol_error() -> None:
    with pytest.raises(HarnessError) as caught:
        SSEParser(MAX_EVENT_BYTES).feed(b"data: \xff\xfe\n\n")
    assert caught.value.code == "protocol"


def test_comments_fields_and_a_bom_carry_no_event() -> None:
    data = b"\xef\xbb\xbf: hello\nid: 1\nretry: 5\n\nevent: error\ndata: {}\n\n"
    assert _parse([data[:1], data[1:2], data[2:]]) == [SSEEvent("error", "{}")]


def _chunked(payload: bytes, sizes: list[int]) -> bytes:
    out, position = [], 0
    for size in [*sizes, len(payload)]:
        piece = payload[position : position + max(1, size)]
        if not piece:
            break
        out.append(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
        position += len(piece)
    return b"".join(out) + b"0\r\nTrailer: x\r\n\r\n"


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.binary(max_size=500),
    st.lists(st.integers(1, 60), max_size=10),
    st.lists(st.integers(0, 5000), max_size=10),
)
def test_chunked_decoding_is_the_same_for_any_split(
    payload: bytes, sizes: list[int], cuts: list[int]
) -> None:
    encoded = _chunked(payload, sizes)
    decoder = ChunkedDecoder()
    decoded = b"".join(decoder.feed(part) for part in _split(encoded, cuts))
    assert decoded == payload
    assert decoder.done


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.binary(max_size=2000), max_size=6))
def test_chunked_decoding_of_junk_only_raises_protocol_errors(chunks: list[bytes]) -> None:
    decoder = ChunkedDecoder()
    codes = []
    for chunk in chunks:
        try:
            decoder.feed(chunk)
        except HarnessError as exc:
            codes.append(exc.code)
            break
        assert len(decoder._buffer) <= 2100
    assert set(codes) <= {"protocol"}


@pytest.mark.parametrize(
    "raw", [b"garbage\r\n\r\n", b"HTTP/1.1 abc OK\r\n\r\n", b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n"]
)
def test_malformed_heads_are_protocol_errors(raw: bytes) -> None:
    with pytest.raises(HarnessError) as caught:
        parse_head(raw)
    assert caught.value.code == "protocol"


def test_heads_are_parsed_case_insensitively() -> None:
    head = parse_head(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        b"Connection: close\r\n\r\n"
    )
    assert head.status == 200
    assert head.content_type == "text/event-stream"
    assert not head.keep_alive
