"""Chrome-trace events read in chunks: the same entries as parsing the whole file, whatever the chunk size."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.readers.exported import trace_events as trace_events_module
from pipeline.readers.exported.trace_events import TraceError, trace_events


def read_all(path, chunk, compact):
    """All events, with consumed text dropped after ``compact`` characters (the module's
    threshold is 1 MiB, which small test files never reach)."""
    keep = trace_events_module.COMPACT_CHARS
    trace_events_module.COMPACT_CHARS = compact
    try:
        return list(trace_events(path, chunk_bytes=chunk))
    finally:
        trace_events_module.COMPACT_CHARS = keep


text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)  # incl. multi-byte UTF-8
scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
value = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8
)
events = st.lists(st.dictionaries(text, value, max_size=5) | scalar, max_size=12)


def whole(data: bytes) -> list:
    doc = json.loads(data.decode("utf-8-sig"), parse_float=str)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def dump(evs, form, ascii_only, indent):
    doc = evs if form == "list" else {"before": {"x": [1, "]"]}, "traceEvents": evs, "after": "}"}
    return json.dumps(doc, ensure_ascii=ascii_only, indent=indent).encode("utf-8")


@settings(max_examples=150)
@given(
    events,
    st.sampled_from(["list", "object"]),
    st.booleans(),
    st.sampled_from([None, 1]),
    st.integers(1, 40),
    st.booleans(),
    st.sampled_from([0, 7, 1 << 20]),
)
def test_chunked_equals_whole(tmp_path_factory, evs, form, ascii_only, indent, chunk, bom, compact):
    data = (b"\xef\xbb\xbf" if bom else b"") + dump(evs, form, ascii_only, indent)
    p = tmp_path_factory.mktemp("t") / "trace.json"
    p.write_bytes(data)
    assert read_all(p, chunk, compact) == whole(data)


@settings(max_examples=60)
@given(
    st.lists(st.dictionaries(text, value, min_size=1, max_size=4), min_size=1, max_size=6),
    st.integers(1, 30),
    st.sampled_from([0, 1 << 20]),
    st.data(),
)
def test_a_cut_file_is_an_error_at_an_offset_inside_it(tmp_path_factory, evs, chunk, compact, data):
    full = dump(evs, "list", False, None)
    cut = data.draw(st.integers(1, len(full) - 1))
    p = tmp_path_factory.mktemp("t") / "trace.json"
    p.write_bytes(full[:cut])
    with pytest.raises(TraceError) as e:
        read_all(p, chunk, compact)
    assert 0 <= e.value.offset <= cut


@pytest.mark.parametrize(
    "doc, offset",
    [
        (b'[{"a": 1} {"b": 2}]', 10),  # missing comma: at the second event
        (b'[{"a": "\xc3\xa9"} {"b": 2}]', 13),  # the same after a two-byte character
        (b'[{"a": 1}] x', 11),  # extra data after the document
        (b'{"traceEvents": 5}', 0),  # no event list
        (b'"text"', 0),
        (b'[{"a": "\xc3"}]', 8),  # a cut UTF-8 character
    ],
)
def test_errors_name_the_byte(tmp_path, doc, offset):
    p = tmp_path / "trace.json"
    p.write_bytes(doc)
    for chunk in (1, 3, 1 << 20):
        for compact in (0, 1 << 20):
            with pytest.raises(TraceError) as e:
                read_all(p, chunk, compact)
            assert e.value.offset == offset, (chunk, compact)
