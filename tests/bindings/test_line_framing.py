"""The sans-IO line framer of the stdio binding: bytes in (any split), lines out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a.protocol.lines import LineDecoder, LineTooLongError, encode_line

STREAM = b'{"a":1}\n{"b":"two"}\r\n\n   \n{"c":[3]}\n'
LINES = [b'{"a":1}', b'{"b":"two"}', b'{"c":[3]}']


def test_whole_and_byte_by_byte_give_the_same_lines() -> None:
    assert LineDecoder().feed(STREAM) == LINES
    decoder = LineDecoder()
    assert [line for i in range(len(STREAM)) for line in decoder.feed(STREAM[i : i + 1])] == LINES
    assert decoder.pending == 0


@given(
    st.lists(st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b and b.strip(b"\r \t")), max_size=8),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_gives_the_same_lines(lines: list[bytes], cuts: list[int]) -> None:
    lines = [line.rstrip(b"\r") for line in lines if line.rstrip(b"\r").strip()]
    data = b"".join(encode_line(line) for line in lines)
    decoder = LineDecoder()
    got: list[bytes] = []
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        got += decoder.feed(data[start:cut])
        start = cut
    got += decoder.feed(data[start:])
    assert got == lines


def test_a_last_line_without_newline_comes_out_at_the_end() -> None:
    decoder = LineDecoder()
    assert decoder.feed(b'{"a":1}\n{"b":') == [b'{"a":1}']
    assert decoder.feed(b"2}") == []
    assert decoder.flush() == b'{"b":2}'
    assert decoder.flush() is None


def test_the_limit_is_exact_and_enforced_before_the_newline() -> None:
    assert LineDecoder(max_line_bytes=4).feed(b"abcd\n") == [b"abcd"]
    assert LineDecoder(max_line_bytes=4).feed(b"abcd\r\n") == [b"abcd"]
    with pytest.raises(LineTooLongError):
        LineDecoder(max_line_bytes=4).feed(b"abcde\n")
    decoder = LineDecoder(max_line_bytes=4)
    decoder.feed(b"abc")
    with pytest.raises(LineTooLongError) as raised:
        decoder.feed(b"de")  # no newline yet: refused without waiting for the rest
    assert raised.value.limit == 4
