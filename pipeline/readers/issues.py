"""Collecting ``ingest_issues`` rows: every byte not decoded is reported, never dropped silently."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.progress import report


@dataclass
class Issue:
    source_file: str
    kind: str
    message: str
    device_id: int | None = None
    byte_offset: int | None = None
    byte_length: int | None = None
    count: int = 1

    def as_row(self) -> dict:
        return {
            "device_id": self.device_id,
            "source_file": self.source_file,
            "byte_offset": self.byte_offset,
            "byte_length": self.byte_length,
            "kind": self.kind,
            "count": self.count,
            "message": self.message,
        }

    def line(self) -> str:
        where = self.source_file
        if self.byte_offset is not None:
            where += f" at byte {self.byte_offset}"
        return f"{where}: {self.kind}: {self.message}"


@dataclass
class IssueLog:
    issues: list[Issue] = field(default_factory=list)
    bytes_decoded: int = 0  # bytes of recognised files that became records (or dictionary entries)

    def add(self, issue: Issue) -> None:
        self.issues.append(issue)

    def decoded(self, nbytes: int) -> None:
        self.bytes_decoded += int(nbytes)
        report(advance=int(nbytes))

    def bytes_skipped(self) -> int:
        return sum(i.byte_length or 0 for i in self.issues if i.kind in BYTE_KINDS)

    def __len__(self) -> int:
        return len(self.issues)

    def losses(self) -> dict[str, int]:
        """Issues that stand for data lost (``LOSS_KINDS``), counted by kind."""
        out: dict[str, int] = {}
        for i in self.issues:
            if i.kind in LOSS_KINDS:
                out[i.kind] = out.get(i.kind, 0) + i.count
        return out


# Issue kinds that stand for bytes of a recognised file that were not decoded into a record.
BYTE_KINDS = {
    "truncated_record",
    "corrupt_stream",
    "bad_magic",
    "counted_tag",
    "bad_hash_line",
    "bad_text_line",
    "unreadable_file",
    "changed_while_read",
}

# Issue kinds that mean the run lacks data the dump was meant to hold: bytes not decoded,
# metadata that could not be read, files or parts of files missing, a writer not finished.
# A night where a dump is built with any of them ends with ExitCode.DATA_LOSS.
LOSS_KINDS = BYTE_KINDS | {
    "bad_metadata",
    "missing_file",
    "missing_data",
    "unfinished_write",
    "bad_row",
    "no_data",
}


def runs_of_true(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of each run of True in a boolean array, without a loop per element."""
    if mask.size == 0:
        return []
    m = np.concatenate(([False], mask, [False])).astype(np.int8)
    d = np.diff(m)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return list(zip(starts.tolist(), (ends - starts).tolist()))
