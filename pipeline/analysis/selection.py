"""Which runs a command works on: ids, collection-time ranges, workloads, the last N.

Runs are ordered by collection start (``collected_at``), the time the profiling began,
not by when profetl ingested them, so a late re-ingest does not reorder history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.errors import UnknownRun, UsageError
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

_RELATIVE = re.compile(r"^(\d+)\s*([hdw])$")
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_when(text: str, now: datetime | None = None) -> datetime:
    """A UTC instant from ISO 8601 (``2026-03-02``, ``2026-03-02T01:00``, with or without a
    zone; no zone means UTC), ``today``, ``yesterday``, or an age such as ``7d``, ``12h``, ``2w``."""
    now = now or datetime.now(UTC)
    t = text.strip().lower()
    if t == "now":
        return now
    if t in ("today", "yesterday"):
        day = now.date() - timedelta(days=1 if t == "yesterday" else 0)
        return datetime.combine(day, time(0), UTC)
    m = _RELATIVE.match(t)
    if m:
        try:
            return now - int(m.group(1)) * _UNITS[m.group(2)]
        except (OverflowError, ValueError):  # before year 1: every run is younger
            raise UsageError(
                f"{text!r}: an age of at most {(now - datetime.min.replace(tzinfo=UTC)).days}d"
            ) from None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            value = datetime.combine(date.fromisoformat(text.strip()), time(0))
        except ValueError:
            raise UsageError(
                f"{text!r} is not a time: use 2026-03-02, 2026-03-02T01:00, today, yesterday or 7d"
            ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass
class RunSelection:
    """A filter over the warehouse's runs; empty means every run."""

    runs: list[str] | None = None  # ids, unique prefixes or ``latest``
    since: datetime | None = None  # collected at or after
    until: datetime | None = None  # collected before
    workload: str | None = None
    last: int | None = None  # the newest N after the other filters

    def __post_init__(self) -> None:
        if self.last is not None and self.last < 1:
            raise UsageError(f"--last {self.last}: takes a number of runs >= 1")

    def is_empty(self) -> bool:
        return not (self.runs or self.since or self.until or self.workload or self.last is not None)

    def describe(self) -> str:
        """The filter in words, with --since/--until as the UTC instants they resolved to."""
        parts = []
        if self.runs:
            parts.append("run " + ", ".join(self.runs))
        if self.since:
            parts.append(f"collected at or after {_utc(self.since)}")
        if self.until:
            parts.append(f"collected before {_utc(self.until)}")
        if self.workload:
            parts.append(f"workload {self.workload}")
        if self.last is not None:
            parts.append(f"the last {self.last}")
        return "; ".join(parts) or "every run"


def _utc(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def catalog_table(wh: Warehouse, exclude: tuple[str, ...] = ()) -> pa.Table:
    """Every committed run as the ``runs`` view has it (with collected_at and workload), oldest
    first; without the columns in ``exclude`` (the control files' text is most of a run's bytes)."""
    cols = f"* EXCLUDE ({', '.join(exclude)})" if exclude else "*"
    sql = f"SELECT {cols} FROM runs ORDER BY collection_start_us NULLS FIRST, run_id"
    return read_consistent(wh, lambda con: con.sql(sql).to_arrow_table(), tables=())


def catalog(wh: Warehouse) -> list[dict]:
    """``catalog_table`` as one dict per run."""
    return catalog_table(wh).to_pylist(maps_as_pydicts="strict")


def select_runs(
    wh: Warehouse, sel: RunSelection, default_latest: bool = True, exclude: tuple[str, ...] = ()
) -> list[dict]:
    """The runs ``sel`` names, oldest collection first. With an empty selection: the latest
    run (collected last) when ``default_latest``, else every run. The filters run on the
    columns; only the runs chosen become dicts (thousands of runs, a few chosen)."""
    everything = catalog_table(wh, exclude)
    if not everything.num_rows:
        wh.check(must_exist=True)
        raise UnknownRun(f"the warehouse {wh.path} has no runs yet")
    if sel.is_empty():
        if default_latest:
            latest = wh.run_index().resolve_run("latest")["run_id"]
            return everything.filter(pc.equal(everything.column("run_id"), latest)).to_pylist(
                maps_as_pydicts="strict"
            )
        return everything.to_pylist(maps_as_pydicts="strict")
    t = everything
    if sel.runs:
        run_index = wh.run_index()
        wanted = sorted({run_index.resolve_run(r)["run_id"] for r in sel.runs})
        t = t.filter(pc.is_in(t.column("run_id"), value_set=pa.array(wanted, pa.string())))
    at = "collected_at"
    if sel.since:
        t = t.filter(pc.greater_equal(t.column(at), pa.scalar(sel.since, t.schema.field(at).type)))
    if sel.until:
        t = t.filter(pc.less(t.column(at), pa.scalar(sel.until, t.schema.field(at).type)))
    if sel.workload:
        t = t.filter(pc.equal(t.column("workload"), sel.workload))
    if sel.last is not None:
        t = t.slice(max(t.num_rows - sel.last, 0)) if sel.last else t  # as rows[-0:]: every run
    if not t.num_rows:
        collected = everything.column(at).drop_null()
        span = (
            f"; its {everything.num_rows} run(s) were collected from {_utc(pc.min(collected).as_py())} "
            f"to {_utc(pc.max(collected).as_py())}"
            if len(collected)
            else ""
        )
        raise UnknownRun(
            f"no run in {wh.path} matches the selection ({sel.describe()}){span} (see `profetl runs`)"
        )
    return t.to_pylist(maps_as_pydicts="strict")


def _by_id(rows: list[dict], run_id: str) -> dict:
    return next(r for r in rows if r["run_id"] == run_id)


def earlier_runs(
    wh: Warehouse, run: dict, workload: str | None, n: int, rows: list[dict] | None = None
) -> list[dict]:
    """Up to ``n`` runs of ``workload`` collected before ``run``, newest last (``rows``: a catalog already read)."""
    rows = catalog(wh) if rows is None else rows
    key = (run.get("collection_start_us") or 0, run["run_id"])
    before = [
        r
        for r in rows
        if (r.get("collection_start_us") or 0, r["run_id"]) < key
        and (workload is None or r["workload"] == workload)
    ]
    return before[-n:] if n else before


def run_row(wh: Warehouse, run_ref: str, rows: list[dict] | None = None) -> dict:
    """One run, as the ``runs`` view has it (``rows``: a catalog already read)."""
    return _by_id(catalog(wh) if rows is None else rows, wh.run_index().resolve_run(run_ref)["run_id"])
