"""What every exported-source reader gets and gives back."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.paths import relative
from pipeline.readers.hiprof.reader import Sink
from pipeline.readers.issues import IssueLog

# Canonical tables an exported source can fill (docs/architecture.md#canonical-tables).
EXPORT_TABLES = (
    "api_calls",
    "task_runs",
    "task_ops",
    "task_metrics",
    "step_trace",
    "api_totals",
    "step_times",
    "comm_ops",
    "comm_tasks",
    "aicpu_tasks",
    "devices",
)


@dataclass
class ExportContext:
    """One export dump being read.

    ``tables`` is what this source is asked to fill: reader.py chose it as the most detailed
    source for those tables. A reader must not write other tables (devices excepted).
    ``default_device`` is the device id for rows whose source does not name one (a torch_npu
    rank folder: the rank's device from profiler_info / the path), or None when unknown.
    """

    root: Path
    sink: Sink
    log: IssueLog
    tables: frozenset[str]
    default_device: int | None = None
    workdir: Path | None = (
        None  # where a reader may put a private copy of its file (the ingest's temp folder)
    )

    def rel(self, p: Path) -> str:
        return relative(self.root, p)


@dataclass
class SourceResult:
    """What one source file held: rows per table written, devices seen, and facts about the run."""

    rows: dict[str, int] = field(default_factory=dict)
    devices: set[int] = field(default_factory=set)
    start_ns: int | None = None  # earliest collection or event time, wall-clock ns when known
    chip: str | None = None  # "Ascend910B", ... when the source names it
    notes: list[str] = field(default_factory=list)  # what the source could not supply, and why
    # the first event time of a timeline whose clock is not the wall clock (monotonic): the run's
    # notes name such files together, not a note each
    monotonic_first_ns: int | None = None

    def add_rows(self, table: str, n: int) -> None:
        self.rows[table] = self.rows.get(table, 0) + int(n)


def file_size(path: Path) -> int | None:
    """Size of a source file, None when it cannot be stat'ed (reported by the caller)."""
    try:
        return path.stat().st_size
    except OSError:
        return None


class _Bounded(io.RawIOBase):
    """A file read from its start up to ``size`` bytes, never further."""

    def __init__(self, path: Path, size: int):
        self._fh = open(path, "rb")
        self._left = max(0, int(size))

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if not self._left:
            return 0
        view = memoryview(b)
        n = self._fh.readinto(view[: min(len(view), self._left)]) or 0
        self._left -= n
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def open_measured(path: Path, size: int | None) -> io.BufferedReader:
    """``path`` opened for reading up to ``size`` bytes, the size the ingest measured when it
    scanned the dump (docs/formats.md#live-dumps): bytes a producer writes later are not read.
    ``size`` None reads to the end as it is now."""
    if size is None:
        size = os.stat(path).st_size
    return io.BufferedReader(_Bounded(path, size), buffer_size=1 << 20)
