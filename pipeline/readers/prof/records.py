"""Fixed-size record streams of generations 2 and 3: aged heads, device magic, byte accounting.

Built on ``pipeline.readers.decode.decode_fixed``. Two additions:

* **Aged heads** (docs/formats.md#aging): once storage fills up the collector deletes the oldest
  slices, so the first surviving slice of an aged stream may start mid-record. msprof
  skips ``total % record_size`` bytes at the start. A stream whose tail was cut instead
  (a copy that stopped early) has the same remainder at the end; where the records carry
  a magic number the two are told apart by which alignment shows the magic, else
  msprof's rule applies. Either way the bytes are reported.
* **Device magic**: HWTS, AI Core PMU, STARS SoC and FFTS records carry 0x6BD3 at bytes 2-3;
  records without it are reported and skipped (msprof counts STARS ones as invalid).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from pipeline.layouts import Layout
from pipeline.readers.decode import Batch, decode_fixed, reject_records, report_bytes
from pipeline.readers.issues import Issue, IssueLog
from pipeline.readers.slices import SliceFile, SliceStream


def _head(files: list[SliceFile], n: int) -> bytes:
    out = b""
    for f in files:
        with open(f.path, "rb") as fh:
            out += fh.read(n - len(out))
        if len(out) >= n:
            break
    return out


def head_skip(files: list[SliceFile], size: int, magic: tuple[int, int] | None) -> tuple[int, str]:
    """Bytes to skip at the start of an aged stream, and why (docs/formats.md#aging)."""
    total = sum(f.size for f in files)
    r = total % size
    if r == 0:
        return 0, ""
    if magic is not None and total >= size + r:
        off, value = magic
        head = _head(files, size + r)
        at0 = int.from_bytes(head[off : off + 2], "little") == value
        at_r = int.from_bytes(head[r + off : r + off + 2], "little") == value
        if at0 and not at_r:
            return 0, "tail"
    return r, "head"


def read_fixed(
    files: list[SliceFile],
    layout: Layout,
    log: IssueLog,
    device_id: int,
    *,
    aged: bool,
    host_magic: bool = False,
    device_magic: int | None = None,
) -> tuple[SliceStream, Iterator[Batch]]:
    """A stream of ``layout`` records and its decoded batches (magic-checked, every byte accounted)."""
    skip = 0
    if aged:
        magic = (2, device_magic) if device_magic is not None else ((0, 0x5A5A) if host_magic else None)
        skip, where = head_skip(files, layout.size, magic)
    stream = SliceStream(files, skip=skip, log=log, device_id=device_id)
    if skip:
        report_bytes(
            stream,
            log,
            device_id,
            0,
            skip,
            "truncated_record",
            f"aged stream: the first slice starts {skip} bytes into a {layout.size}-byte {layout.name} record "
            f"(the oldest slices were deleted); those bytes are skipped",
        )

    def batches() -> Iterator[Batch]:
        for b in decode_fixed(stream, layout, log, device_id, check_magic=host_magic):
            if device_magic is not None:
                b = reject_records(
                    stream,
                    log,
                    device_id,
                    b,
                    b.records["magic"] != device_magic,
                    layout.size,
                    "bad_magic",
                    f"{layout.name} record(s) without magic 0x{device_magic:04X} skipped",
                )
            yield b

    return stream, batches()


class Tally:
    """Decoded records that no canonical table holds (other log types), counted per file and kind."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int], list[int]] = {}

    def add(self, stream: SliceStream, offsets: np.ndarray, size: int, what: str) -> None:
        if len(offsets) == 0:
            return
        idx = stream.file_index(offsets)
        for i in np.unique(idx).tolist():
            k = int((idx == i).sum())
            c = self.counts.setdefault((stream.files[i].rel, what, size), [0, 0])
            c[0] += k
            c[1] += k * size

    def flush(self, log: IssueLog, device_id: int) -> None:
        for (rel, what, _), (k, nbytes) in sorted(self.counts.items()):
            log.decoded(-nbytes)  # counted, not decoded into a row (decode_fixed had counted them)
            log.add(
                Issue(
                    rel,
                    "counted_tag",
                    f"{k} {what} record(s) decoded and counted, not stored",
                    device_id=device_id,
                    byte_length=nbytes,
                    count=k,
                )
            )
        self.counts.clear()
