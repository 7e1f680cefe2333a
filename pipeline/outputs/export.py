"""Export a table of one or more runs as CSV (for spreadsheets), JSON lines or Parquet, atomically.

CSV carries the profiling tool's display headers ("Time(%)", "Stream ID") unless snake_case
column names are asked for; Parquet and JSON lines always use the column names, and Parquet
the contract's types.

CSV is written for spreadsheets, which keep 15 significant digits: every time column's header
names its unit ("Start Time(ns)"), and a time point on the wall clock (an exported run's
19-digit ns since 1970) is written as ISO 8601 UTC text exact to the ns
("2026-01-01T00:00:00.123456789Z") instead of a number the spreadsheet would round. An
export of several runs adds each run's collection time after its id. A spreadsheet opens
1,048,576 lines of a CSV and drops the rest: a CSV with more rows is written with a warning
(``Exported.warnings``, for the command line to show), and ``max_rows`` splits it into numbered
files that each open whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from pipeline.errors import UnknownTable, UsageError
from pipeline.outputs import formats
from pipeline.outputs.formats import ROW_FORMATS, atomic_write, check_format, csv_cell, csv_text
from pipeline.outputs.query import write_consistent
from pipeline.warehouse.contracts import Contract, contract, contracts
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

FORMATS = ROW_FORMATS
HEADERS = ("display", "snake")
__all__ = [
    "FORMATS",
    "HEADERS",
    "Exported",
    "atomic_write",
    "csv_cell",
    "export",
    "export_table",
    "fetch",
    "select_sql",
    "stream_runs",
    "table_contract",
    "to_csv",
]


def table_contract(table: str) -> Contract:
    for layer in ("marts", "raw"):
        if table in contracts(layer):
            return contract(layer, table)
    known = sorted(contracts("marts")) + sorted(contracts("raw"))
    raise UnknownTable(f"no table named {table!r}; known: {', '.join(known)}")


def unbuilt_runs(wh: Warehouse, c: Contract, run_ids: list[str]) -> list[str]:
    """The runs of ``run_ids`` whose marts are not built (ingested only), when ``c`` is a mart
    (a raw table is there from the ingest). UsageError when that is every one of them: the table
    would be empty for no reason the user could see (`profetl build RUN` builds it)."""
    if c.layer != "marts":
        return []
    rows = wh.run_index().rows_by_run_id()
    unbuilt = [r for r in run_ids if r in rows and not rows[r].get("build_id")]
    if unbuilt and len(unbuilt) == len(run_ids):
        which = unbuilt[0] if len(unbuilt) == 1 else f"{unbuilt[0]} (and {len(unbuilt) - 1} more)"
        raise UsageError(
            f"run {which} is ingested but not built: `profetl build {unbuilt[0]}` makes its {c.name}"
        )
    return unbuilt


def _columns(c: Contract) -> list[str]:
    return ["run_id"] + [col.name for col in c.columns if col.name != "run_id"]


# rows per batch read from DuckDB and written out: an export holds about this many rows at a time
BATCH_ROWS = 100_000


def select_sql(
    c: Contract,
    names: list[str],
    devices: list[int] | None,
    items: list[str] | None = None,
    many: bool = False,
) -> str:
    """SELECT of ``names`` (or the expressions ``items``) from the table of one run, ``$run``;
    optionally only some devices. ``many``: of the runs in the list ``$runs`` whose ids lie
    between ``$lo`` and ``$hi`` (the range lets the reader skip the files and row groups of
    other runs by their statistics)."""
    where = ""
    if devices:
        if "device_id" not in {col.name for col in c.columns}:
            raise UsageError(f"{c.name} has no device_id column; leave out --device")
        where = " AND device_id IN (" + ", ".join(str(int(d)) for d in devices) + ")"
    if many:  # a stretch of runs: the run's collection time by each row's run_id
        items = [
            i.replace(
                "FROM _run_records WHERE run_id = $run)",
                f"FROM _run_records AS _r WHERE _r.run_id = {c.name}.run_id)",
            )
            for i in items or names
        ]
        return (
            f"SELECT {', '.join(items)} FROM {c.name} "
            f"WHERE run_id BETWEEN $lo AND $hi AND list_contains($runs, run_id){where}"
        )
    return f"SELECT {', '.join(items or names)} FROM {c.name} WHERE run_id = $run{where}"


def run_chunks(wh: Warehouse, layer: str, run_ids: list[str]) -> list[list[str]]:
    """``run_ids`` cut into stretches that one scan returns in that order: consecutive runs
    whose rows share a group file, in the file's order (collection order). A query per run
    would cost a plan and a pass over the group's statistics for every run."""
    from pipeline.warehouse.layout import is_group, run_order

    key = "raw_part" if layer == "raw" else "mart_part"
    run_index = wh.run_index()
    t = run_index.stored_table
    idx = (
        {r["run_id"]: r for r in t.select(["run_id", key, "collection_start_us"]).to_pylist()}
        if t is not None
        else run_index.rows_by_run_id()
    )
    chunks: list[list[str]] = []
    prev = None
    for run_id in run_ids:
        r = idx.get(run_id)
        part = r.get(key) if r else None
        if (
            chunks
            and prev is not None
            and part is not None
            and is_group(part)
            and part == prev[key]
            and run_order(prev) < run_order(r)
        ):
            chunks[-1].append(run_id)
        else:
            chunks.append([run_id])
        prev = r
    return chunks


def stream_runs(
    con, sql: str, run_ids: list[str], chunks: list[list[str]] | None = None, many_sql: str | None = None
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The rows of ``sql`` for each run in turn (in the order the build wrote them), as the
    schema and a lazy stream of batches: one reader is open at a time. With ``chunks``
    (``run_chunks``) and ``many_sql`` (``select_sql(many=True)``), a stretch of several runs is
    read by one query."""
    if chunks is None or many_sql is None:
        chunks = [[r] for r in run_ids]

    def reader(chunk: list[str]):
        if len(chunk) == 1:
            return con.sql(sql, params={"run": chunk[0]}).to_arrow_reader(BATCH_ROWS)
        return con.sql(many_sql, params={"runs": chunk, "lo": min(chunk), "hi": max(chunk)}).to_arrow_reader(
            BATCH_ROWS
        )

    first = reader(chunks[0]) if chunks else con.sql(sql, params={"run": None}).to_arrow_reader(BATCH_ROWS)

    def batches() -> Iterator[pa.RecordBatch]:
        yield from first
        for chunk in chunks[1:]:
            yield from reader(chunk)

    return first.schema, batches()


def fetch(
    wh: Warehouse, table: str, run_ids: list[str], devices: list[int] | None = None
) -> tuple[Contract, pa.Table]:
    """The table's rows for the given runs (in that order), in the order the build wrote them;
    optionally only some devices. In memory: for small tables and tests; ``export`` streams."""
    c = table_contract(table)
    sql = select_sql(c, _columns(c), devices)
    many = select_sql(c, _columns(c), devices, many=True)

    def read(con):
        schema, batches = stream_runs(con, sql, run_ids, run_chunks(wh, c.layer, run_ids), many)
        return pa.Table.from_batches(list(batches), schema)

    return c, read_consistent(wh, read, run_ids, {c.name})


def _keep(c: Contract, with_run: bool) -> list[str]:
    cols = [col.name for col in c.columns if col.name != "run_id"]
    return (["run_id"] if with_run or c.name == "runs" else []) + cols


# units a display header must name when it does not already ("Start Time" -> "Start Time(ns)")
_TIME_UNITS = {"ns", "us", "ms", "s", "us^2"}
# time points at or after 2000-01-01 are wall clock (ns since 1970), earlier ones a monotonic clock
WALL_CLOCK_NS = 946_684_800 * 10**9
COLLECTED = "collected_at"  # the run's collection time, added after run_id to multi-run exports


def _time_point(c: Contract, name: str) -> bool:
    """A column that holds an instant in ns (not a duration)."""
    col = next((x for x in c.columns if x.name == name), None)
    return col is not None and col.unit == "ns" and (name == "ts_ns" or name.endswith(("start_ns", "end_ns")))


def _header(c: Contract, names: list[str], headers: str) -> list[str]:
    """CSV header cells: the tool's display names, each time column's with its unit, or the
    column names."""
    if headers == "snake":
        return names
    cols = {col.name: col for col in c.columns}
    out = []
    for n in names:
        if n == "run_id":
            out.append("Run ID")
        elif n == COLLECTED:
            out.append("Collected (UTC)")
        else:
            out.append(display_header(cols[n]))
    return out


def display_header(col) -> str:
    """A column's display name, with its unit when it is a time the name does not qualify."""
    display = col.display or col.name
    if col.unit in _TIME_UNITS and not display.endswith(")"):
        display += f"({col.unit})"
    return display


def _csv_select(c: Contract, names: list[str]) -> list[str]:
    """SELECT items for a CSV: wall-clock time points as exact ISO 8601 UTC text."""
    items = []
    for n in names:
        if _time_point(c, n):
            items.append(
                f"CASE WHEN {n} >= {WALL_CLOCK_NS} THEN strftime(make_timestamp(({n} // 1000000000) * 1000000), "
                f"'%Y-%m-%dT%H:%M:%S') || '.' || lpad(({n} % 1000000000)::VARCHAR, 9, '0') || 'Z' "
                f"ELSE {n}::VARCHAR END AS {n}"
            )
        elif n == COLLECTED:
            items.append(
                f"(SELECT make_timestamptz(collection_start_us) FROM _run_records WHERE run_id = $run) AS {n}"
            )
        else:
            items.append(n)
    return items


def to_csv(c: Contract, t: pa.Table, headers: str = "display", with_run: bool = False) -> str:
    names = _keep(c, with_run)
    return csv_text(t.select(names), _header(c, names, headers))


@dataclass
class Exported:
    """What an export wrote: rows, the files with their row counts (none for standard output)
    and warnings for the command line to show."""

    rows: int
    files: list[tuple[Path, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def export(
    wh: Warehouse,
    table: str,
    run_ids: list[str],
    fmt: str,
    out: str,
    headers: str = "display",
    devices: list[int] | None = None,
) -> int:
    """``export_table`` to one file or standard output; returns the row count."""
    return export_table(wh, table, run_ids, fmt, out, headers, devices).rows


def export_table(
    wh: Warehouse,
    table: str,
    run_ids: list[str],
    fmt: str,
    out: str,
    headers: str = "display",
    devices: list[int] | None = None,
    max_rows: int | None = None,
) -> Exported:
    """Write the table of ``run_ids`` to ``out`` (``-`` is standard output).

    A run_id column, and the run's collection time after it, are added when more than one
    run is exported. Rows stream from the part files to ``out`` a batch at a time, so memory
    does not grow with the table. ``max_rows`` (CSV to a file only) splits the rows into
    numbered files of at most that many rows, each with the header (``formats.part_path``).
    A CSV file with more rows than a spreadsheet opens (``formats.SPREADSHEET_ROWS``, header
    included) gets a warning.
    """
    check_format(fmt, FORMATS)
    if max_rows is not None:
        if fmt != "csv":
            raise UsageError("--max-rows splits CSV files; JSON lines and Parquet have no row limit")
        if out == "-":
            raise UsageError("--max-rows writes numbered files; give --out a file name")
        if max_rows < 1:
            raise UsageError(f"--max-rows {max_rows}; use a positive number of rows")
    if headers not in HEADERS:
        raise UsageError(f"headers {headers!r}; use display or snake")
    c = table_contract(table)
    unbuilt = unbuilt_runs(wh, c, run_ids)
    names = _keep(c, len(run_ids) > 1)
    if len(run_ids) > 1 and c.name != "runs":
        names.insert(names.index("run_id") + 1, COLLECTED)
    items = (
        _csv_select(c, names)
        if fmt == "csv"
        else [i if n == COLLECTED else n for n, i in zip(names, _csv_select(c, names))]
    )
    sql = select_sql(c, names, devices, items)
    many = select_sql(c, names, devices, items, many=True)
    head = _header(c, names, headers) if fmt == "csv" else None

    def select(con):
        return stream_runs(con, sql, run_ids, run_chunks(wh, c.layer, run_ids), many)

    if max_rows is None:
        rows = write_consistent(wh, select, fmt, out, head, run_ids, {c.name})
        done = Exported(rows, [] if out == "-" else [(Path(out), rows)])
    else:  # a retried read writes every file again from the start
        rows, files = read_consistent(
            wh,
            lambda con: formats.write_csv_parts(select(con)[1], head, Path(out), max_rows),
            run_ids,
            {c.name},
        )
        done = Exported(rows, files)
        stale = formats.stale_parts(Path(out), len(files))
        if stale:
            done.warnings.append(
                f"{len(stale)} file(s) from an earlier export with more parts are still there "
                f"({stale[0].name} to {stale[-1].name}): remove them before reading {Path(out).stem}-*"
            )
    if unbuilt:
        done.warnings.append(
            f"{len(unbuilt)} of the runs are ingested but not built, so none of their rows are here "
            f"(`profetl build {unbuilt[0]}`...)"
        )
    if fmt == "csv":
        for path, n in done.files or [(out, rows)]:
            warning = formats.spreadsheet_warning(str(path), n)
            if warning:
                done.warnings.append(warning)
    return done
