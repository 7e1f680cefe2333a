"""A dump's units of work: the parts of a dump a cluster reads and builds on its own
(docs/architecture.md#cluster).

An ingest reads a dump unit by unit (a hiprof-era device with its host-side streams; a PROF_*
collection directory, ``host`` or ``device_N``; an export as a whole), each into its own
Parquet files, which become the shards of the run's raw part: the rows are the same, row for
row, as one read of the whole dump writes. A build makes each device's marts on its own
(every mart's grain starts with the device, and no rule reads another device's rows), one
shard of the run's mart part per device.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline.readers.catalog import reader_of
from pipeline.readers.hiprof.reader import RunMeta
from pipeline.readers.instance_numbers import InstanceNumbers, RunNumbers
from pipeline.readers.issues import IssueLog
from pipeline.warehouse.contracts import RAW_TABLES
from pipeline.warehouse.faults import checkpoint
from pipeline.warehouse.layout import new_id
from pipeline.warehouse.sink import ParquetSink
from pipeline.warehouse.writer import digest

WHOLE = None  # the unit of a dump read in one piece (an export)


def raw_sink(paths: dict[str, Path], run_id: str) -> ParquetSink:
    """The sink one read of a dump (or of one unit) writes its raw tables through."""
    return ParquetSink(
        paths, derive={"task_states": InstanceNumbers().add, "task_runs": RunNumbers().add}, run_id=run_id
    )


def unit_label(unit) -> str:
    if unit is WHOLE:
        return "the export"
    return f"device {unit}" if isinstance(unit, int) else str(unit)


@dataclass
class UnitRead:
    """What one unit's read wrote and learnt; picklable, it travels from a worker back."""

    unit: object
    files: dict[str, str] = field(default_factory=dict)  # raw table -> its Parquet file
    rows: dict[str, int] = field(default_factory=dict)
    meta: RunMeta | None = None
    log: IssueLog | None = None
    # each file's size and hash (pipeline.warehouse.writer.digest) by its path, taken on the
    # worker that wrote it (read_unit): the starting process places the files without reading them
    digests: dict[str, dict] = field(default_factory=dict)


def read_into(out: Path, layout: str, scanned, run_id: str, unit=WHOLE, first: bool = True) -> UnitRead:
    """Read a dump (``scanned``: its reader's listing of it), or its ``unit``, into a Parquet
    file per raw table in the folder ``out``, its issues (ingest_issues) included. ``out`` is a
    folder of the ingest's own (an export's databases are read from copies taken there);
    ``first``: this unit also reports what belongs to no unit. The reader's decoding modules
    load here: a process that reads one generation (or only builds) loads no other's."""
    paths = {t: out / f"{t}.parquet" for t in RAW_TABLES}
    sink = raw_sink(paths, run_id)
    log = IssueLog()
    try:
        meta = reader_of(layout).read(scanned, sink, log, unit, first, out)
        sink.write("ingest_issues", issue_columns(log))
        sink.close()
    except BaseException:
        sink.abort()
        raise
    return UnitRead(unit, {t: str(p) for t, p in paths.items()}, dict(sink.rows), meta, log)


def read_unit(layout: str, dump: str, unit, first: bool, workdir: str, run_id: str) -> UnitRead:
    """Read one unit of ``dump`` into a fresh folder under ``workdir`` (a worker's retry after a
    crash starts in a folder of its own, never in the dead attempt's files). The worker lists
    the dump itself: it may be another machine, which sees the dump at the same path."""
    out = Path(workdir) / f"unit-{new_id()}"
    out.mkdir(parents=True)
    read = read_into(out, layout, reader_of(layout).scan(Path(dump), layout), run_id, unit, first)
    read.digests = {p: digest(Path(p)) for p in read.files.values()}
    checkpoint("unit_read")
    return read


def merge_reads(layout: str, reads: list[UnitRead]) -> tuple[RunMeta, IssueLog, dict[str, int]]:
    """The run's metadata, issues and rows by raw table, from its units' reads."""
    rows: dict[str, int] = {}
    log = IssueLog()
    for r in reads:
        for table, n in r.rows.items():
            rows[table] = rows.get(table, 0) + n
        log.issues += r.log.issues
        log.bytes_decoded += r.log.bytes_decoded
    meta = reader_of(layout).merge_metas([r.meta for r in reads])
    return meta, log, rows


def issue_columns(log: IssueLog) -> dict:
    """The ingest_issues table's columns of ``log``."""
    rows = [i.as_row() for i in log.issues]
    keys = ["device_id", "source_file", "byte_offset", "byte_length", "kind", "count", "message"]
    return {k: [r[k] for r in rows] for k in keys}
