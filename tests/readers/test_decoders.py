"""Property tests for the record decoders (``pipeline.readers.decode``).

A byte stream is written as slice files cut at arbitrary positions and read back
through a ``SliceStream`` with a tiny chunk size, so records straddle both slice
and chunk boundaries. The decoders are checked against small ``struct``-based
reference decoders written here, independently of the numpy layouts:

* every byte is accounted for: bytes of decoded records plus bytes reported in
  issues of ``BYTE_KINDS`` equal the stream size, and the byte ranges tile the
  stream without gaps or overlaps;
* every decoded field equals the reference's value;
* offsets and issues map back to the right slice file and a byte offset inside it.
"""

from __future__ import annotations

import itertools
import random
import struct
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.readers.decode import Batch, decode_fixed, decode_tlv
from pipeline.readers.issues import BYTE_KINDS, IssueLog
from pipeline.readers.slices import SliceFile, SliceStream

SETTINGS = settings(max_examples=75, suppress_health_check=[HealthCheck.too_slow])
CHUNKS = st.sampled_from([1, 3, 7, 33, 4096, 1 << 20])
MAGIC = 0x5A5A


# --- slice files ----------------------------------------------------------------------


@dataclass
class Slices:
    """A byte string written as slice files; knows which file holds which stream offset."""

    stream: SliceStream
    rels: list[str]
    starts: list[int]
    sizes: list[int]

    def where(self, offset: int) -> tuple[str, int]:
        """(file, offset in file) of a stream offset, found by a plain scan (the reference)."""
        for rel, start, size in zip(self.rels, self.starts, self.sizes):
            if start <= offset < start + size:
                return rel, offset - start
        raise AssertionError(f"offset {offset} is in no slice")

    def stream_offset(self, rel: str, offset: int) -> int:
        return self.starts[self.rels.index(rel)] + offset

    def size_of(self, rel: str) -> int:
        return self.sizes[self.rels.index(rel)]


@contextmanager
def sliced(data: bytes, cuts: list[int], chunk_bytes: int):
    """``data`` cut at ``cuts`` (any positions, repeats give empty slices) into files."""
    bounds = [0] + sorted(min(max(c, 0), len(data)) for c in cuts) + [len(data)]
    with tempfile.TemporaryDirectory() as tmp:
        files, rels, starts, sizes = [], [], [], []
        for n, (a, b) in enumerate(zip(bounds, bounds[1:])):
            rel = f"data/stream.0.slice_{n}"
            path = Path(tmp) / f"stream.0.slice_{n}"
            path.write_bytes(data[a:b])
            files.append(SliceFile(path, rel, b - a))
            rels.append(rel)
            starts.append(a)
            sizes.append(b - a)
        yield Slices(SliceStream(files, chunk_bytes=chunk_bytes), rels, starts, sizes)


def check_issue_locations(sl: Slices, log: IssueLog) -> list[tuple[int, int, str]]:
    """Every located issue names a slice file and a byte range inside it.

    Returns the issues' (stream offset, length, kind) for the byte kinds that have an offset.
    """
    ranges = []
    for i in log.issues:
        if i.kind == "counted_tag":  # an aggregate over the stream: bytes and count, no offset
            assert i.source_file in sl.rels
            continue
        assert i.source_file in sl.rels, i
        assert i.byte_offset is not None and i.byte_length is not None, i
        assert i.byte_length > 0, i
        assert 0 <= i.byte_offset and i.byte_offset + i.byte_length <= sl.size_of(i.source_file), i
        if i.kind in BYTE_KINDS:
            ranges.append((sl.stream_offset(i.source_file, i.byte_offset), i.byte_length, i.kind))
    return ranges


def assert_tiles(total: int, ranges: list[tuple[int, int]]) -> None:
    """The (offset, length) ranges cover [0, total) exactly once."""
    pos = 0
    for off, n in sorted(ranges):
        assert off == pos, f"gap or overlap at stream byte {pos} (next range starts at {off})"
        pos += n
    assert pos == total


# --- fixed-size records ---------------------------------------------------------------

# Reference formats written from docs/formats.md#acl-record and after, independent of the numpy dtypes.
FIXED_REF = {
    "runtime_task_track": (
        hiprof_layouts.RUNTIME_TASK_TRACK,
        "<HHIQ32sHHH",
        ["magic", "data_tag", "tid", "timestamp", "task_type", "task_id", "batch_id", "stream_id"],
    ),
    "acl_api": (
        hiprof_layouts.ACL_API,
        "<HHIQQII64s",
        ["magic", "data_tag", "api_type", "begin", "end", "pid", "tid", "api_name"],
    ),
}


def fixed_reference(data: bytes, fmt: str, names: list[str], size: int, check_magic: bool):
    """(offset, record index, fields) of every whole record with the magic, by struct.unpack."""
    out = []
    for k in range(len(data) // size):
        values = struct.unpack_from(fmt, data, k * size)
        rec = dict(zip(names, values))
        if check_magic and rec["magic"] != MAGIC:
            continue
        out.append((k * size, k, rec))
    return out


def plain(v):
    """A numpy field value as a plain Python value comparable with struct's."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, np.ndarray):
        return tuple(int(x) for x in v.reshape(-1))
    return int(v)


def ref_plain(v):
    # numpy "S<n>" fields drop trailing NULs when read; struct keeps them.
    return v.rstrip(b"\0") if isinstance(v, bytes) else v


@st.composite
def fixed_streams(draw):
    name = draw(st.sampled_from(sorted(FIXED_REF)))
    layout = FIXED_REF[name][0]
    size = layout.size
    good = draw(st.lists(st.booleans(), max_size=16))
    rng = random.Random(draw(st.integers(0, 2**32)))
    parts = []
    for ok in good:
        body = bytearray(rng.randbytes(size))
        if ok:
            body[0:2] = MAGIC.to_bytes(2, "little")
        elif body[0:2] == MAGIC.to_bytes(2, "little"):
            body[0] ^= 1
        parts.append(bytes(body))
    tail = rng.randbytes(draw(st.integers(0, size - 1)))
    data = b"".join(parts) + tail
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=6))
    return name, data, cuts


@SETTINGS
@given(fixed_streams(), CHUNKS, st.booleans())
@example(("runtime_task_track", b"", []), 7, True)  # an empty stream
def test_decode_fixed_matches_reference_and_accounts_for_every_byte(case, chunk_bytes, check_magic):
    name, data, cuts = case
    check_fixed(name, data, cuts, chunk_bytes, check_magic)
    check_fixed(name, data, [], 1 << 20, check_magic)  # the whole stream in one chunk


def check_fixed(name: str, data: bytes, cuts: list[int], chunk_bytes: int, check_magic: bool) -> None:
    layout, fmt, names = FIXED_REF[name]
    size = layout.size
    with sliced(data, cuts, chunk_bytes) as sl:
        log = IssueLog()
        batches = list(decode_fixed(sl.stream, layout, log, device_id=0, check_magic=check_magic))

        records = [(int(o), int(s), r) for b in batches for o, s, r in zip(b.offsets, b.seq, b.records)]
        decoded_bytes = len(records) * size
        issue_bytes = sum(i.byte_length for i in log.issues if i.kind in BYTE_KINDS)
        assert decoded_bytes + issue_bytes == len(data)

        expected = fixed_reference(data, fmt, names, size, check_magic)
        assert [(o, s) for o, s, _ in records] == [(o, k) for o, k, _ in expected]
        for (off, _, rec), (_, _, ref) in zip(records, expected):
            for f in names:
                assert plain(rec[f]) == ref_plain(ref[f]), (f, off)

        # Offsets map back to the slice holding the record's first byte.
        offsets = np.array([o for o, _, _ in records], dtype=np.int64)
        assert sl.stream.source_files(offsets).to_pylist() == [sl.where(o)[0] for o in offsets.tolist()]
        for o in offsets.tolist():
            assert sl.stream.locate(o) == sl.where(o)

        ranges = check_issue_locations(sl, log)
        assert {k for _, _, k in ranges} <= {"bad_magic", "truncated_record"}
        if not check_magic:
            assert all(k != "bad_magic" for _, _, k in ranges)
        assert_tiles(len(data), [(o, size) for o in offsets.tolist()] + [(o, n) for o, n, _ in ranges])
        tail = len(data) % size
        truncated = [(o, n) for o, n, k in ranges if k == "truncated_record"]
        assert sum(n for _, n in truncated) == tail


@pytest.mark.parametrize("chunk_bytes", [7, 33, 64, 1 << 20])
def test_decode_fixed_record_straddling_slices_and_chunks(chunk_bytes):
    """A record cut across three slice files is decoded whole and located in the first."""
    layout, fmt, names = FIXED_REF["runtime_task_track"]
    recs = [
        struct.pack(fmt, MAGIC, 41, 100 + k, 10**12 + k, f"task{k}".encode(), k, 0, 5).ljust(64, b"\0")
        for k in range(3)
    ]
    data = b"".join(recs)
    # record 1 spans bytes 64..127: cut at 70 and 100, so it lies in slices 0, 1 and 2
    with sliced(data, [70, 100], chunk_bytes) as sl:
        log = IssueLog()
        batches = list(decode_fixed(sl.stream, layout, log, device_id=3))
        rec = np.concatenate([b.records for b in batches])
        offs = np.concatenate([b.offsets for b in batches])
        assert len(log) == 0
        assert rec["tid"].tolist() == [100, 101, 102]
        assert rec["task_type"].tolist() == [b"task0", b"task1", b"task2"]
        assert offs.tolist() == [0, 64, 128]
        assert sl.stream.source_files(offs).to_pylist() == [
            "data/stream.0.slice_0",
            "data/stream.0.slice_0",
            "data/stream.0.slice_2",
        ]
        assert sl.stream.locate(128) == ("data/stream.0.slice_2", 28)


def test_decode_fixed_bad_magic_and_truncation_are_located_per_file():
    layout, fmt, _ = FIXED_REF["runtime_task_track"]
    good = struct.pack(fmt, MAGIC, 41, 1, 2, b"x", 1, 0, 5).ljust(64, b"\0")
    bad = b"\x00\x00" + good[2:]
    data = good + bad + good + good[:20]  # record 1 has no magic, the stream ends 20 bytes into record 3
    with sliced(data, [100], chunk_bytes=33) as sl:  # record 1 (64..127) straddles the cut at 100
        log = IssueLog()
        n = sum(len(b.records) for b in decode_fixed(sl.stream, layout, log, device_id=0))
        assert n == 2
        got = sorted((i.kind, i.source_file, i.byte_offset, i.byte_length) for i in log.issues)
        assert got == [
            ("bad_magic", "data/stream.0.slice_0", 64, 36),
            ("bad_magic", "data/stream.0.slice_1", 0, 28),
            ("truncated_record", "data/stream.0.slice_1", 92, 20),
        ]


# --- TLV streams ----------------------------------------------------------------------

# Reference formats (docs/formats.md#tlv): header "mode u8, tag u8, bufSize u16, reserved u32".
TLV_REF = {
    hiprof_layouts.TIME_LINE.tag: (
        "<BBH4xHHHHQII",
        [
            "mode",
            "tag",
            "buf_size",
            "task_type",
            "task_state",
            "stream_id",
            "task_id",
            "timestamp",
            "thread",
            "device_id",
        ],
    ),
    hiprof_layouts.EVENT_COUNT.tag: (
        "<BBH4xHHHHQ8QQQH",
        [
            "mode",
            "tag",
            "buf_size",
            "task_type",
            "stream_id",
            "task_id",
            "overflow",
            "overflow_cycle",
            "events",
            "task_cyc",
            "timestamp",
            "block",
        ],
    ),
    hiprof_layouts.STEP_TRACE.tag: (
        "<BBH4xQQQHHH",
        ["mode", "tag", "buf_size", "timestamp", "index_id", "model_id", "stream_id", "task_id", "tag_id"],
    ),
    hiprof_layouts.TS_MEMCPY.tag: (
        "<BBH4xQHHB",
        ["mode", "tag", "buf_size", "timestamp", "stream_id", "task_id", "task_state"],
    ),
}
RECORD_SIZE = {
    hiprof_layouts.TIME_LINE.tag: 32,
    hiprof_layouts.EVENT_COUNT.tag: 112,
    hiprof_layouts.STEP_TRACE.tag: 40,
    hiprof_layouts.TS_MEMCPY.tag: 40,
}
COUNTED = (6, 7, 8, 9)
KNOWN = set(RECORD_SIZE) | set(COUNTED)


def unpack_tlv(data: bytes, pos: int, tag: int) -> dict:
    fmt, names = TLV_REF[tag]
    values = list(struct.unpack_from(fmt, data, pos))
    if tag == hiprof_layouts.EVENT_COUNT.tag:  # events[8] are eight consecutive u64 values
        i = names.index("events")
        values[i : i + 8] = [tuple(values[i : i + 8])]
    return dict(zip(names, values))


@dataclass
class TlvExpect:
    """What a correct TLV reader finds in a stream (the reference walk)."""

    decoded: list[tuple[int, int, int, dict]] = field(default_factory=list)  # (offset, seq, tag, fields)
    counted: dict[int, list[int]] = field(default_factory=dict)  # tag -> [count, bytes]
    counted_ranges: list[tuple[int, int]] = field(
        default_factory=list
    )  # (offset, bufSize) of counted records
    corrupt_at: int | None = None  # first byte that cannot be framed
    truncated_at: int | None = None  # first byte of a record the stream ends inside


def tlv_reference(data: bytes) -> TlvExpect:
    """Walk the stream record by record: the documented semantics, one record at a time."""
    e = TlvExpect()
    pos, seq = 0, 0
    while pos < len(data):
        if len(data) - pos < 4:
            e.truncated_at = pos
            break
        tag = data[pos + 1]
        size = int.from_bytes(data[pos + 2 : pos + 4], "little")
        minimum = RECORD_SIZE.get(tag, 8)
        if tag not in KNOWN or size < minimum:
            e.corrupt_at = pos
            break
        if pos + size > len(data):
            e.truncated_at = pos
            break
        if tag in RECORD_SIZE:
            e.decoded.append((pos, seq, tag, unpack_tlv(data, pos, tag)))
        else:
            c = e.counted.setdefault(tag, [0, 0])
            c[0] += 1
            c[1] += size
            e.counted_ranges.append((pos, size))
        pos += size
        seq += 1
    return e


def tlv_record(rng: random.Random, tag: int, size: int) -> bytes:
    return bytes([rng.randrange(256), tag]) + size.to_bytes(2, "little") + rng.randbytes(size - 4)


@st.composite
def tlv_layouts(draw, max_records: int = 24):
    """(tag, bufSize) of each record: decoded tags at their size or longer, counted tags >= 8 bytes.

    Records come in groups of one tag and size, as producers write them, so the decoder's
    vectorised runs (several records at once) are exercised as well as single records.
    """
    out = []
    while len(out) < max_records and draw(st.integers(0, 5)) > 0:
        tag = draw(st.sampled_from([3, 3, 3, 4, 4, 10, 11, 6, 7, 8, 9]))
        if tag == hiprof_layouts.EVENT_COUNT.tag:
            size = 112 + draw(st.sampled_from([0, 0, 8, 24, 37]))
        elif tag in RECORD_SIZE:
            size = RECORD_SIZE[tag] + draw(st.sampled_from([0, 0, 0, 0, 8]))
        else:
            size = draw(st.integers(8, 80))
        out.extend([(tag, size)] * draw(st.integers(1, 6)))
    return out[:max_records]


@st.composite
def tlv_streams(draw, max_records: int = 24):
    """A valid TLV stream, its record boundaries, and cut positions for slices."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    bounds, parts, pos = [], [], 0
    for tag, size in draw(tlv_layouts(max_records)):
        bounds.append(pos)
        parts.append(tlv_record(rng, tag, size))
        pos += size
    data = b"".join(parts)
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=5))
    return data, bounds, cuts


def run_tlv(data: bytes, cuts: list[int], chunk_bytes: int):
    """Decode and check everything that must hold for any input; return the pieces for more checks."""
    with sliced(data, cuts, chunk_bytes) as sl:
        log = IssueLog()
        decoded = []
        for by_tag in decode_tlv(
            sl.stream, hiprof_layouts.DECODED_TAGS, hiprof_layouts.COUNTED_TAGS, log, device_id=1
        ):
            for tag, b in by_tag.items():
                assert (b.records["tag"] == tag).all()
                for o, s, r in zip(b.offsets.tolist(), b.seq.tolist(), b.records):
                    decoded.append((o, s, tag, r))
                    assert sl.stream.locate(o) == sl.where(o)
                assert sl.stream.source_files(b.offsets).to_pylist() == [
                    sl.where(o)[0] for o in b.offsets.tolist()
                ]
        decoded.sort(key=lambda d: d[0])

        # every byte: decoded, counted, or skipped with a located issue
        decoded_bytes = sum(int(r["buf_size"]) for *_, r in decoded)
        issue_bytes = sum(i.byte_length for i in log.issues if i.kind in BYTE_KINDS)
        assert decoded_bytes + issue_bytes == len(data)
        located = check_issue_locations(sl, log)
        return sl, log, decoded, located


def assert_matches_reference(data: bytes, cuts: list[int], chunk_bytes: int) -> None:
    sl, log, decoded, located = run_tlv(data, cuts, chunk_bytes)
    e = tlv_reference(data)

    assert [(o, s, t) for o, s, t, _ in decoded] == [(o, s, t) for o, s, t, _ in e.decoded]
    for (o, _, tag, rec), (_, _, _, ref) in zip(decoded, e.decoded):
        for f, v in ref.items():
            assert plain(rec[f]) == v, (tag, f, o)

    counted = {}
    for i in log.issues:
        if i.kind == "counted_tag":
            tag = int(i.message.split("(tag ")[1].split(")")[0])
            counted[tag] = [i.count, i.byte_length]
    assert counted == e.counted

    corrupt = sorted((o, n) for o, n, k in located if k == "corrupt_stream")
    truncated = [(o, n) for o, n, k in located if k == "truncated_record"]
    if e.corrupt_at is None:
        assert corrupt == []
    else:  # one issue per file from the bad header to the end of the stream
        assert corrupt[0][0] == e.corrupt_at
        assert_tiles(len(data) - e.corrupt_at, [(o - e.corrupt_at, n) for o, n in corrupt])
        first = next(i for i in log.issues if i.kind == "corrupt_stream")
        assert (first.source_file, first.byte_offset) == sl.where(e.corrupt_at)
    if e.truncated_at is None:
        assert truncated == []
    else:
        assert sorted(truncated)[0][0] == e.truncated_at
        assert sum(n for _, n in truncated) == len(data) - e.truncated_at
    assert {k for _, _, k in located} <= {"corrupt_stream", "truncated_record"}
    # decoded records, counted records and located issues tile the stream
    assert_tiles(
        len(data),
        [(o, int(r["buf_size"])) for o, _, _, r in decoded]
        + e.counted_ranges
        + [(o, n) for o, n, _ in located],
    )


@SETTINGS
@given(tlv_streams(), CHUNKS)
def test_decode_tlv_valid_streams_match_reference(case, chunk_bytes):
    data, _, cuts = case
    e = tlv_reference(data)
    assert e.corrupt_at is None and e.truncated_at is None  # the generator writes valid streams
    assert_matches_reference(data, cuts, chunk_bytes)
    # one slice, one chunk: long runs of same-tag records decode in one vectorised step
    assert_matches_reference(data, [], 1 << 20)


def test_decode_tlv_mixed_run_sizes_of_one_tag():
    """EVENT_COUNT records of 112 and 150 bytes in one chunk come out in one batch, all fields intact."""
    rng = random.Random(5)
    sizes = [112, 112, 150, 112, 150, 150]
    data = b"".join(tlv_record(rng, hiprof_layouts.EVENT_COUNT.tag, s) for s in sizes)
    assert_matches_reference(data, [], 1 << 20)
    assert_matches_reference(data, [113, 300], 33)


@pytest.mark.slow
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(tlv_streams(max_records=10), CHUNKS, st.data())
def test_decode_tlv_truncated_anywhere(case, chunk_bytes, data_st):
    """Cut the stream at every record boundary and at points inside records."""
    data, bounds, cuts = case
    ends = set(bounds) | {len(data)}
    inside = {b + k for b in bounds for k in (1, 2, 3, 4, 5, 9)}
    inside |= {data_st.draw(st.integers(0, len(data)), label="cut") for _ in range(3)}
    for n in sorted(p for p in ends | inside if 0 <= p <= len(data)):
        assert_matches_reference(data[:n], [c for c in cuts if c <= n], chunk_bytes)


def test_decode_tlv_truncated_at_every_byte():
    rng = random.Random(11)
    layout = [(3, 32), (10, 40), (6, 24), (4, 112), (11, 40), (4, 120), (3, 32), (9, 8)]
    data = b"".join(tlv_record(rng, t, s) for t, s in layout)
    for n in range(len(data) + 1):
        assert_matches_reference(data[:n], [n // 3, n // 2], 7)


@SETTINGS
@given(
    tlv_streams(),
    CHUNKS,
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=4),
)
def test_decode_tlv_flipped_bytes(case, chunk_bytes, flips):
    data, _, cuts = case
    if not data:
        return
    buf = bytearray(data)
    for pos, mask in flips:
        buf[pos % len(buf)] ^= mask
    assert_matches_reference(bytes(buf), cuts, chunk_bytes)


BAD_HEADERS = st.one_of(
    # unknown tag
    st.tuples(
        st.integers(0, 255).filter(lambda t: t not in KNOWN), st.integers(0, 65535), st.just("unknown")
    ),
    # bufSize 0 of a known tag
    st.tuples(st.sampled_from(sorted(KNOWN)), st.just(0), st.just("zero")),
    # bufSize below the record (decoded tags) or below the 8-byte header (counted tags)
    st.sampled_from(sorted(KNOWN)).flatmap(
        lambda t: st.tuples(st.just(t), st.integers(1, RECORD_SIZE.get(t, 8) - 1), st.just("short"))
    ),
    # bufSize larger than the rest of the stream (set when the header is placed)
    st.tuples(st.sampled_from(sorted(KNOWN)), st.integers(1, 300), st.just("long")),
)


@SETTINGS
@given(tlv_streams(), BAD_HEADERS, st.integers(0, 10**6), CHUNKS, st.integers(0, 40))
def test_decode_tlv_bad_header(case, header, where, chunk_bytes, body_len):
    """A bad header at a record boundary: everything before it decodes, the rest is reported."""
    data, bounds, cuts = case
    tag, size, what = header
    at = (bounds + [len(data)])[where % (len(bounds) + 1)]
    body = random.Random(where).randbytes(body_len)
    rest_after = 8 + body_len + (len(data) - at)
    if what == "long":
        size = min(rest_after + size, 65535)
        if size <= rest_after:
            return
        if tag in RECORD_SIZE and size < RECORD_SIZE[tag]:
            return
    bad = bytes([1, tag]) + size.to_bytes(2, "little") + b"\0" * 4 + body
    stream = data[:at] + bad + data[at:]
    e = tlv_reference(stream)
    if what == "long":
        assert e.truncated_at == at and e.corrupt_at is None
    else:
        assert e.corrupt_at == at and e.truncated_at is None
    assert_matches_reference(stream, [c for c in cuts] + [at + 3], chunk_bytes)


def test_decode_tlv_corrupt_stream_issue_names_each_file():
    """The skipped rest of a stream is one corrupt_stream issue per file, each located in it."""
    rng = random.Random(2)
    good = b"".join(tlv_record(rng, 3, 32) for _ in range(4))
    data = good + bytes([0, 200, 32, 0]) + rng.randbytes(100)  # tag 200 at byte 128
    with sliced(data, [40, 150, 200], 7) as sl:
        log = IssueLog()
        n = sum(
            len(b.records)
            for by in decode_tlv(sl.stream, hiprof_layouts.DECODED_TAGS, hiprof_layouts.COUNTED_TAGS, log, 0)
            for b in by.values()
        )
        assert n == 4
        got = [(i.source_file, i.byte_offset, i.byte_length) for i in log.issues]
        assert got == [
            ("data/stream.0.slice_1", 88, 22),
            ("data/stream.0.slice_2", 0, 50),
            ("data/stream.0.slice_3", 0, 32),
        ]
        assert "unknown tag 200" in log.issues[0].message
        assert all(i.kind == "corrupt_stream" for i in log.issues)


@pytest.mark.parametrize("chunk_bytes", [7, 64, 100])
@pytest.mark.parametrize("skip", [0, 12])
def test_chunks_aligned_to_records_end_on_a_record_boundary_except_at_a_slice_end(chunk_bytes, skip):
    """Read with ``align``, a chunk ends where a record does (records start at ``skip``) unless
    its slice ends first; the chunks still hold every byte after ``skip`` once, in order."""
    data = bytes(range(256)) * 2
    with sliced(data, [150, 333], chunk_bytes) as sl:
        stream = SliceStream(sl.stream.files, chunk_bytes=chunk_bytes, skip=skip)
        chunks = list(stream.chunks(align=40))
        assert b"".join(c for _, c in chunks) == data[skip:]
        assert [pos for pos, _ in chunks] == list(
            itertools.accumulate([skip] + [len(c) for _, c in chunks][:-1])
        )
        slice_ends = {150, 333, len(data)}
        for pos, c in chunks:
            end = pos + len(c)
            assert end in slice_ends or (end - skip) % 40 == 0
            assert len(c) < chunk_bytes + 40  # bounded as before, less one record


def test_batch_where_keeps_the_masked_records_and_is_the_batch_itself_when_all_are_kept():
    b = Batch(np.arange(5) * 10, np.arange(5) * 40, np.arange(5))
    assert b.where(np.ones(5, bool)) is b
    some = b.where(np.array([True, False, True, False, False]))
    assert (some.records.tolist(), some.offsets.tolist(), some.seq.tolist()) == ([0, 20], [0, 80], [0, 2])
