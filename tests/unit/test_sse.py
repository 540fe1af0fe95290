"""The sans-IO SSE decoder and encoder: raw bytes in, events out, however the bytes are split."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a.protocol.sse import SSEDecoder, SSEEvent, encode_event

Feed = Callable[..., list[SSEEvent]]


def feed_whole(data: bytes, **kwargs: Any) -> list[SSEEvent]:
    return SSEDecoder(**kwargs).feed(data)


def feed_bytewise(data: bytes, **kwargs: Any) -> list[SSEEvent]:
    decoder = SSEDecoder(**kwargs)
    events: list[SSEEvent] = []
    for i in range(len(data)):
        events.extend(decoder.feed(data[i : i + 1]))
    return events


def feed_chunks(data: bytes, cuts: list[int]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    start = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        events.extend(decoder.feed(data[start:cut]))
        start = cut
    return events


FEEDS = [pytest.param(feed_whole, id="whole"), pytest.param(feed_bytewise, id="byte-by-byte")]


def _as_tuples(events: list[SSEEvent]) -> list[tuple[str, str, str | None, int | None]]:
    return [(e.data, e.event, e.id, e.retry) for e in events]


@pytest.mark.parametrize("feed", FEEDS)
@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_line_endings(feed: Feed, eol: bytes) -> None:
    stream = eol.join([b"data: one", b"", b"event: update", b"data: two", b"", b": keep-alive", b""])
    events = feed(stream)
    assert _as_tuples(events) == [("one", "message", None, None), ("two", "update", None, None)]


@pytest.mark.parametrize("feed", FEEDS)
def test_mixed_line_endings_in_one_stream(feed: Feed) -> None:
    stream = b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"
    assert [e.data for e in feed(stream + b":\n")] == ["a\nb\nc", "d"]


@pytest.mark.parametrize("feed", FEEDS)
def test_event_ended_by_cr_is_delivered_without_waiting_for_more_bytes(feed: Feed) -> None:
    # A CR ends a line by itself (WHATWG: "a CR not followed by LF"); the decoder may not hold
    # the event back until some later byte shows that no LF follows.
    assert [e.data for e in feed(b"data: last\r\r")] == ["last"]


def test_crlf_split_between_chunks_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: x\r") == []
    assert decoder.feed(b"\n") == []
    # Had the CR and the LF counted as two line endings, the LF would have been a blank line
    # and dispatched the event already.
    assert [e.data for e in decoder.feed(b"data: y\r\n\r\n")] == ["x\ny"]


@pytest.mark.parametrize("feed", FEEDS)
def test_comments_are_ignored(feed: Feed) -> None:
    stream = b": this is a comment\n:\ndata: payload\n: another\n\n:ping\n\n"
    assert _as_tuples(feed(stream)) == [("payload", "message", None, None)]


@pytest.mark.parametrize("feed", FEEDS)
def test_multi_line_data_is_joined_with_newlines(feed: Feed) -> None:
    stream = b'data: {\ndata:  "a": 1\ndata\ndata: }\n\n'
    # "data:" strips exactly one leading space; a line without a colon is a field with an empty value.
    assert feed(stream)[0].data == '{\n "a": 1\n\n}'


@pytest.mark.parametrize("feed", FEEDS)
def test_field_value_without_space_and_unknown_fields(feed: Feed) -> None:
    stream = b"data:tight\nfoo: bar\nevent:kind\n\n"
    assert _as_tuples(feed(stream)) == [("tight", "kind", None, None)]


@pytest.mark.parametrize("feed", FEEDS)
def test_id_and_retry_fields(feed: Feed) -> None:
    stream = b"id: 41\nretry: 2500\ndata: a\n\nid: 42\ndata: b\n\nretry: soon\ndata: c\n\n"
    events = feed(stream)
    assert _as_tuples(events) == [
        ("a", "message", "41", 2500),
        ("b", "message", "42", None),
        ("c", "message", None, None),
    ]


@pytest.mark.parametrize("feed", FEEDS)
def test_id_with_nul_is_ignored(feed: Feed) -> None:
    events = feed(b"id: 7\0x\ndata: a\n\n")
    assert events[0].id is None


def test_last_event_id_tracks_the_latest_id_seen() -> None:
    decoder = SSEDecoder()
    assert decoder.last_event_id is None
    decoder.feed(b"id: 1\ndata: a\n\n")
    assert decoder.last_event_id == "1"
    decoder.feed(b"data: no id here\n\n")
    assert decoder.last_event_id == "1"  # an event without id keeps the last one
    decoder.feed(b"id: 2\n\n")  # an id-only block updates it without dispatching an event
    assert decoder.last_event_id == "2"
    decoder.feed(b"id: 3\ndata: partial")  # not dispatched yet
    assert decoder.last_event_id == "2"
    decoder.feed(b"\n\n")
    assert decoder.last_event_id == "3"


@pytest.mark.parametrize("feed", FEEDS)
def test_blank_lines_without_data_dispatch_nothing(feed: Feed) -> None:
    assert feed(b"\n\n\nevent: lonely\n\n\r\n") == []
    # ... and the event type of an empty block does not leak into the next event
    assert _as_tuples(feed(b"event: lonely\n\ndata: x\n\n")) == [("x", "message", None, None)]


@pytest.mark.parametrize("feed", FEEDS)
def test_incomplete_event_at_end_is_not_dispatched(feed: Feed) -> None:
    assert _as_tuples(feed(b"data: complete\n\ndata: incomplete\n")) == [("complete", "message", None, None)]


def test_utf8_split_inside_a_character() -> None:
    text = "héllo → wörld 🎉"
    stream = b"data: " + text.encode() + b"\n\n"
    assert feed_bytewise(stream)[0].data == text


@pytest.mark.parametrize("feed", FEEDS)
def test_event_over_the_size_limit_is_refused(feed: Feed) -> None:
    with pytest.raises(ValueError, match="larger than 64"):
        feed(b"data: " + b"x" * 100 + b"\n\n", max_event_bytes=64)


@pytest.mark.parametrize("feed", FEEDS)
def test_many_data_lines_over_the_size_limit_are_refused(feed: Feed) -> None:
    with pytest.raises(ValueError, match="larger than 64"):
        feed(b"data: 0123456789\n" * 10 + b"\n", max_event_bytes=64)


def test_unterminated_line_over_the_size_limit_is_refused() -> None:
    decoder = SSEDecoder(max_event_bytes=64)
    decoder.feed(b"data: " + b"x" * 40)
    with pytest.raises(ValueError, match="larger than 64"):
        decoder.feed(b"x" * 40)


@pytest.mark.parametrize("feed", FEEDS)
def test_size_limit_is_per_event(feed: Feed) -> None:
    stream = b"data: " + b"x" * 50 + b"\n\n"
    assert len(feed(stream * 20, max_event_bytes=64)) == 20


# ---- the encoder ----------------------------------------------------------------------------------


def test_encode_event_layout() -> None:
    assert encode_event(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_event(b"{}", event_id="7", event="error") == b"id: 7\nevent: error\ndata: {}\n\n"


@pytest.mark.parametrize("feed", FEEDS)
def test_encoded_events_parse_back(feed: Feed) -> None:
    frames = [
        (b'{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"}}}', "1", None),
        (b'{"text":"caf\xc3\xa9"}', "2", "update"),
        (b"", None, None),
        (b" leading space", "4", None),
    ]
    stream = b"".join(encode_event(data, event_id=i, event=e) for data, i, e in frames)
    events = feed(stream)
    assert _as_tuples(events) == [(d.decode(), e or "message", i, None) for d, i, e in frames]


single_line = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\0"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(payloads=st.lists(st.tuples(single_line, st.none() | st.integers(0, 10**9).map(str)), max_size=8))
def test_encode_then_decode_is_identity(payloads: list[tuple[str, str | None]]) -> None:
    stream = b"".join(encode_event(json.dumps(p).encode(), event_id=i) for p, i in payloads)
    events = feed_whole(stream)
    assert [(json.loads(e.data), e.id) for e in events] == payloads


# ---- property: any split gives the same events ----------------------------------------------------

field_value = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n\0"), max_size=12)
line_ending = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def sse_streams(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, str, str | None]]]:
    """A stream of random events (with comments, ids, event types, mixed line endings) and the
    events a correct decoder must produce from it."""
    out = b""
    expected: list[tuple[str, str, str | None]] = []
    for _ in range(draw(st.integers(0, 6))):
        lines: list[str] = []
        if draw(st.booleans()):
            lines.append(": " + draw(field_value))
        event_id = draw(st.none() | st.integers(0, 999).map(str))
        if event_id is not None:
            lines.append(f"id: {event_id}")
        event_type = draw(st.none() | st.sampled_from(["update", "error", "x"]))
        if event_type is not None:
            lines.append(f"event: {event_type}")
        data = draw(st.lists(field_value, min_size=1, max_size=3))
        lines.extend(f"data: {d}" for d in data)
        for line in [*lines, ""]:
            ending = draw(line_ending)
            if not line and ending == b"\n" and out.endswith(b"\r"):
                ending = b"\r\n"  # CR then LF would be one CRLF line ending, not two endings
            out += line.encode() + ending
        expected.append(("\n".join(data), event_type or "message", event_id))
    # More bytes follow in a live stream; this comment line lets a final CR-only blank line be seen.
    return out + b":\n", expected


@settings(max_examples=300, deadline=None)
@given(stream=sse_streams(), data=st.data())
def test_random_chunk_splits_give_the_same_events(
    stream: tuple[bytes, list[tuple[str, str, str | None]]], data: st.DataObject
) -> None:
    raw, expected = stream
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=len(raw)))
    whole = [(e.data, e.event, e.id) for e in feed_whole(raw)]
    chunked = [(e.data, e.event, e.id) for e in feed_chunks(raw, cuts)]
    bytewise = [(e.data, e.event, e.id) for e in feed_bytewise(raw)]
    assert whole == expected
    assert chunked == expected
    assert bytewise == expected
