"""Vectorised decoding of record streams: fixed-size records and TLV streams.

Both walk a ``SliceStream`` chunk by chunk with bounded memory. Fixed-size records
decode with one ``np.frombuffer`` per chunk. A TLV stream (``mode, tag, bufSize``
headers, docs/formats.md#tlv) is cut into *runs* of consecutive records with the same
tag and size; each run is found with one vectorised comparison and decoded with one
``np.frombuffer``, so the Python loop is per run, not per record.

Every byte ends up in a decoded record or in an ``Issue`` (file, byte offset,
length, kind).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pipeline.layouts import HOST_MAGIC, Layout
from pipeline.readers.issues import Issue, IssueLog, runs_of_true
from pipeline.readers.slices import Carry, SliceStream

RUN_PROBE = 1 << 16  # most records compared at once when looking for the end of a run


@dataclass
class Batch:
    """Records of one layout decoded from a stream, with their stream offsets and order."""

    records: np.ndarray
    offsets: np.ndarray  # stream offset of each record's first byte
    seq: np.ndarray  # record index within the stream (all tags counted)

    def where(self, keep: np.ndarray) -> Batch:
        """The records where ``keep`` is true: the batch itself when that is every record
        (masking copies each record, and most batches keep them all)."""
        if keep.all():
            return self
        return Batch(self.records[keep], self.offsets[keep], self.seq[keep])


def report_bytes(
    stream: SliceStream,
    log: IssueLog,
    device_id,
    offset: int,
    length: int,
    kind: str,
    message: str,
    count: int = 1,
) -> None:
    """Bytes not decoded: one issue per slice file the stream range covers."""
    for rel, off, n in stream.spans(offset, length):
        log.add(Issue(rel, kind, message, device_id=device_id, byte_offset=off, byte_length=n, count=count))


def report_records(
    stream: SliceStream, log: IssueLog, device_id, bad, offsets, size: int, kind: str, what: str
) -> None:
    """Records of ``size`` bytes not decoded: one issue per run of consecutive records ``bad``
    marks (a mask over records at stream ``offsets``), its message "<count> <what>"."""
    for i, k in runs_of_true(bad):
        report_bytes(stream, log, device_id, int(offsets[i]), k * size, kind, f"{k} {what}", k)


def reject_records(
    stream: SliceStream, log: IssueLog, device_id, batch: Batch, bad, size: int, kind: str, what: str
) -> Batch:
    """``batch`` without the records ``bad`` marks, which are reported (``report_records``) and
    no longer counted as decoded (``decode_fixed`` counted them)."""
    if not bad.any():
        return batch
    report_records(stream, log, device_id, bad, batch.offsets, size, kind, what)
    log.decoded(-int(bad.sum()) * size)
    return batch.where(~bad)


def decode_fixed(
    stream: SliceStream, layout: Layout, log: IssueLog, device_id: int | None, check_magic: bool = True
) -> Iterator[Batch]:
    """Fixed-size records; records whose magic is not 0x5A5A are reported and skipped."""
    size = layout.size
    carry = Carry()
    seq0 = 0
    for offset, data in stream.chunks(align=size):
        start, buf = carry.join(offset, data)
        n = len(buf) // size
        carry.keep(start, buf, n * size)
        if n == 0:
            continue
        rec = np.frombuffer(buf, dtype=layout.dtype, count=n)
        offs = start + np.arange(n, dtype=np.int64) * size
        seq = seq0 + np.arange(n, dtype=np.int64)
        seq0 += n
        if check_magic:
            bad = rec["magic"] != HOST_MAGIC
            if bad.any():
                report_records(
                    stream,
                    log,
                    device_id,
                    bad,
                    offs,
                    size,
                    "bad_magic",
                    f"{layout.name} record(s) without magic 0x5A5A skipped",
                )
                rec, offs, seq = rec[~bad], offs[~bad], seq[~bad]
        log.decoded(len(rec) * size)
        yield Batch(rec, offs, seq)
    if carry.tail:
        report_bytes(
            stream,
            log,
            device_id,
            carry.tail_offset,
            len(carry.tail),
            "truncated_record",
            f"stream ends {len(carry.tail)} bytes into a {size}-byte {layout.name} record",
        )


@dataclass
class TlvRun:
    pos: int  # position in the buffer
    size: int
    tag: int
    count: int


def tlv_runs(
    buf: np.ndarray, decoded: dict[int, Layout], counted: dict[int, str]
) -> tuple[list[TlvRun], int, str | None]:
    """Cut a buffer into runs of same-tag, same-size TLV records.

    Returns the runs, the bytes consumed, and an error message when the stream is
    corrupt at the consumed position (unknown tag, impossible size). Bytes after the
    last whole record are left unconsumed for the next chunk.
    """
    n = len(buf)
    pos = 0
    runs: list[TlvRun] = []
    # Each 4-byte-aligned header as one number (tag | bufSize << 8, the mode byte dropped):
    # a run of records whose size is a multiple of 4 is then a strided view of these keys.
    keys = buf[: n - n % 4].view("<u4") >> 8
    while n - pos >= 4:
        tag = int(buf[pos + 1])
        size = int(buf[pos + 2]) | (int(buf[pos + 3]) << 8)
        if tag in decoded:
            minimum = decoded[tag].size
        elif tag in counted:
            minimum = 8
        else:
            return runs, pos, f"unknown tag {tag} (bufSize {size})"
        if size < minimum:
            return runs, pos, f"tag {tag} with bufSize {size}, below the {minimum} bytes of its record"
        if pos + size > n:
            break
        # gallop: compare 16, 32, 64, ... records at a time, so a short run costs little
        avail = (n - pos) // size
        aligned = pos % 4 == 0 and size % 4 == 0
        if aligned:
            headers = keys[pos // 4 :: size // 4]
            key = tag | (size << 8)
        m, probe = 0, 16
        while m < avail:
            k = min(avail - m, probe)
            if aligned:
                same = headers[m : m + k] == key
            else:
                idx = pos + size * (m + np.arange(k, dtype=np.int64))
                same = (buf[idx + 1] == tag) & (
                    (buf[idx + 2].astype(np.int32) | (buf[idx + 3].astype(np.int32) << 8)) == size
                )
            if same.all():
                m += k
                probe = min(probe * 2, RUN_PROBE)
            else:
                m += int(np.argmin(same))
                break
        runs.append(TlvRun(pos, size, tag, m))
        pos += m * size
    return runs, pos, None


def decode_tlv(
    stream: SliceStream,
    decoded: dict[int, Layout],
    counted: dict[int, str],
    log: IssueLog,
    device_id: int | None,
) -> Iterator[dict[int, Batch]]:
    """Decoded records by tag, chunk by chunk. Counted tags are reported by count and bytes.

    A corrupt header stops the stream (there is no resynchronisation marker): the rest
    of the stream is reported as one ``corrupt_stream`` issue per file it covers.
    """
    carry = Carry()
    seq0 = 0
    counted_n: dict[int, list[int]] = {}
    for offset, data in stream.chunks():
        start, buf = carry.join(offset, data)
        runs, consumed, error = tlv_runs(buf, decoded, counted)
        carry.keep(start, buf, consumed)
        parts: dict[int, list[Batch]] = {}
        for r in runs:
            seq = seq0 + np.arange(r.count, dtype=np.int64)
            seq0 += r.count
            if r.tag in counted:
                c = counted_n.setdefault(r.tag, [0, 0])
                c[0] += r.count
                c[1] += r.count * r.size
                continue
            log.decoded(r.count * r.size)
            dtype = decoded[r.tag].with_size(r.size)
            rec = np.frombuffer(buf, dtype=dtype, count=r.count, offset=r.pos)
            offs = start + r.pos + np.arange(r.count, dtype=np.int64) * r.size
            parts.setdefault(r.tag, []).append(Batch(rec, offs, seq))
        if parts:
            yield {tag: _concat(batches, decoded[tag]) for tag, batches in parts.items()}
        if error is not None:
            bad_at = start + consumed
            report_bytes(
                stream,
                log,
                device_id,
                bad_at,
                stream.total - bad_at,
                "corrupt_stream",
                f"{error}; the rest of the stream cannot be framed and is skipped",
            )
            carry.tail = b""
            break
    for tag, (count, nbytes) in sorted(counted_n.items()):
        rel = stream.files[0].rel if stream.files else ""
        log.add(
            Issue(
                rel,
                "counted_tag",
                f"{count} {counted[tag]} (tag {tag}) record(s) counted, not decoded",
                device_id=device_id,
                byte_length=nbytes,
                count=count,
            )
        )
    if carry.tail:
        report_bytes(
            stream,
            log,
            device_id,
            carry.tail_offset,
            len(carry.tail),
            "truncated_record",
            f"stream ends inside a record ({len(carry.tail)} bytes left)",
        )


def _concat(batches: list[Batch], layout: Layout) -> Batch:
    if len(batches) == 1:
        return batches[0]
    dtype = batches[0].records.dtype
    if all(b.records.dtype == dtype for b in batches):
        # one record size: join the bytes (numpy's structured concatenate costs ~30 us a piece)
        recs = np.concatenate([b.records.view(np.uint8) for b in batches]).view(dtype)
    else:
        # Runs of one tag may differ in record size: bring them to the layout's own dtype.
        recs = np.concatenate(
            [b.records if b.records.dtype == layout.dtype else _narrow(b.records, layout) for b in batches]
        )
    return Batch(recs, np.concatenate([b.offsets for b in batches]), np.concatenate([b.seq for b in batches]))


def _narrow(rec: np.ndarray, layout: Layout) -> np.ndarray:
    out = np.empty(len(rec), dtype=layout.dtype)
    for name in layout.dtype.names:
        out[name] = rec[name]
    return out
