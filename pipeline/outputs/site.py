"""``profetl site``: one static site over the warehouse's runs, rebuilt incrementally.

The folder it writes (``DIR``)::

    index.html               the front page: workloads x recent nights, the changes found
    workloads/<slug>.html    a page per workload: its tracked metrics over time
    runs/<run_id>.html       the report page of each run (``html_report``), written once per build
                             (``report_nights``: only for the runs of the last N nights)
    assets/plotly.min.js     the Plotly library, one copy every page loads by a relative path
    changes.parquet          every change found (``pipeline.analysis.changes.CHANGES_SCHEMA``)
    data/measures.parquet    what the series are made of, per run (``changes.measure``): a cache
    manifest.json            what each page was built from

No page loads anything from the network: the pages link each other and the library by
relative paths, so the folder works from a file: URL and from any static web server.

Incremental: ``data/measures.parquet`` keeps each run's measures with the build they were read
from, so a rebuild reads the marts of new (or rebuilt) runs only; a run's report page is
written when the run has none or was rebuilt since (``manifest.json``: run id -> build id);
a workload page or the front page is written when the digest of what it shows changed. The
changes are found again from the cached measures every time (milliseconds per series).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.analysis.changes import MEASURES_SCHEMA, TOP_N, Series, changes, measure, tracked
from pipeline.analysis.selection import catalog_table
from pipeline.errors import UsageError
from pipeline.outputs import html_report
from pipeline.warehouse.store import Warehouse

NIGHTS = 14  # nights (UTC dates with runs) the front page's grid shows
MAX_CHANGES = 200  # changes listed on the front page (all are in changes.parquet)
MANIFEST_VERSION = (
    1  # raise it when what a page or the measures cache holds changes: the next build rebuilds all
)
# runs-view columns that are bookkeeping, not lineage; every other column of a run's row
# (chip, layout, versions, and the columns later profetl versions add, such as tags) is
# lineage: the front page says which of them differ between the runs around a change
NOT_LINEAGE = {
    "run_id",
    "ingest_id",
    "build_id",
    "fingerprint",
    "source_abspath",
    "collection_start_us",
    "collected_at",
    "ingested_at",
    "built_at",
    "ingest_seconds",
    "build_seconds",
    "data_bytes",
    "records_decoded",
    "bytes_decoded",
    "bytes_skipped",
    "issues",
    "tables_filled",
    "status",
    "metadata_json",
    "sources",
    "notes",
    "workload",
    "pmu_event_ids",
    "metric_set_raw",
    "source_path",
}
EXCLUDE = ("metadata_json",)  # the control files' text: most of a run's row, not shown


@dataclass
class Built:
    out: Path
    runs: int
    workloads: int
    changes: int
    pages_written: list[str] = field(default_factory=list)
    pages_kept: int = 0
    reports_written: int = 0
    reports_kept: int = 0
    runs_measured: int = 0


def slug(workload: str) -> str:
    """A file name for a workload key (which has slashes): its readable part and a short hash."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", workload).strip("_")[:60] or "workload"
    return f"{text}-{hashlib.sha1(workload.encode()).hexdigest()[:8]}"


def report_href(run_id: str) -> str:
    return f"runs/{run_id}.html"


def lineage_columns(runs: list[dict]) -> list[str]:
    """The runs' columns that say what a run is (every column but bookkeeping), in row order."""
    cols: list[str] = []
    for r in runs[:1]:
        cols = [c for c in r if c not in NOT_LINEAGE]
    return cols


def _text(v) -> str:
    if v is None:
        return "N/A"
    if isinstance(v, list | tuple):
        return ", ".join(_text(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={_text(x)}" for k, x in sorted(v.items()))
    return str(v)


def lineage_diff(before: dict, after: dict, cols: list[str]) -> list[tuple[str, str, str]]:
    """(column, before, after) for each lineage column that differs between two runs."""
    return [(c, _text(before.get(c)), _text(after.get(c))) for c in cols if before.get(c) != after.get(c)]


def _utc_date(t) -> date | None:
    return t.astimezone(UTC).date() if isinstance(t, datetime) else None


def _fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "N/A"
    if unit == "ns":
        return f"{v / 1e3:,.2f} us"
    return f"{v:,.2f} {unit}".strip()


def _metric_label(metric: str, stat: str | None) -> str:
    return f"{metric} {stat}" if stat else metric


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _read_manifest(out: Path) -> dict:
    f = out / "manifest.json"
    try:
        m = json.loads(f.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}
    return m if isinstance(m, dict) and m.get("version") == MANIFEST_VERSION else {}


def _measures(wh: Warehouse, out: Path, runs: list[dict], use_cache: bool) -> tuple[pa.Table, int]:
    """The measures of ``runs``: those cached in data/measures.parquet for the same build (when
    ``use_cache``: the manifest is of this version), and the rest read from the marts (and added
    to the cache). Returns the table and how many runs were read."""
    f = out / "data" / "measures.parquet"
    builds = {r["run_id"]: r.get("build_id") or "" for r in runs}
    cached = None
    if use_cache and f.exists():
        try:
            cached = pq.read_table(f)
        except (OSError, pa.ArrowInvalid):
            cached = None  # a damaged cache is read again from the warehouse
    if cached is not None and {"build_id", *MEASURES_SCHEMA.names} <= set(cached.schema.names):
        keys = pa.array([f"{r}\x00{b}" for r, b in builds.items()], pa.string())
        have = pc.binary_join_element_wise(cached.column("run_id"), cached.column("build_id"), "\x00")
        cached = cached.filter(pc.is_in(have, value_set=keys))
        # a run with no measures at all has one marker row (kind NULL), so it is not read again
        done = set(cached.column("run_id").to_pylist())
    else:
        cached, done = None, set()
    todo = [r for r in builds if r not in done]
    parts = [cached] if cached is not None else []
    if todo:
        new = measure(wh, todo)
        measured = set(new.column("run_id").to_pylist())
        marker = [
            {"run_id": r, "kind": None, "name": None, "total": None, "count": None}
            for r in todo
            if r not in measured
        ]
        new = pa.concat_tables([new, pa.Table.from_pylist(marker, schema=MEASURES_SCHEMA)])
        new = new.append_column("build_id", pa.array([builds[r] for r in new.column("run_id").to_pylist()]))
        parts.append(new)
    table = (
        pa.concat_tables(parts)
        if parts
        else MEASURES_SCHEMA.append(pa.field("build_id", pa.string())).empty_table()
    )
    if todo or cached is None or cached.num_rows != table.num_rows:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(".measures.parquet.tmp")
        pq.write_table(table, tmp)
        tmp.replace(f)
    return table.filter(pc.is_valid(table.column("kind"))), len(todo)


def _env():
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader("pipeline", "templates"), autoescape=select_autoescape(["html", "j2"])
    )


def _workload_page(workload: str, series: list[Series], found: list[dict], reports: set[str]) -> dict:
    """What a workload's page shows: one chart per group of series, the changes found."""
    groups: dict[str, list[Series]] = {}
    for s in series:
        kind = s.metric.split(":", 1)[0]
        title = {
            "run": "Total AI Core time per run",
            "iteration": "Step time (mean training iteration)",
            "op": f"Top ops: {s.stat} time",
            "api": f"Top APIs: {s.stat} time",
        }[kind]
        groups.setdefault(title, []).append(s)
    charts = []
    for i, (title, members) in enumerate(groups.items()):
        unit = "us" if members[0].unit in ("ns", "us") else members[0].unit
        scale = 1e3 if members[0].unit == "ns" else 1.0
        traces = []
        for s in members:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": s.metric.split(":", 1)[1],
                    "x": [r["collected_at"].isoformat() if r.get("collected_at") else None for r in s.runs],
                    "y": [v / scale for v in s.values],
                    "customdata": [
                        ("../" + report_href(r["run_id"])) if r["run_id"] in reports else "" for r in s.runs
                    ],
                    "text": [r["run_id"] for r in s.runs],
                    "hovertemplate": s.metric.split(":", 1)[1]
                    + "<br>run %{text}<br>%{x}<br>%{y:,.3f} "
                    + unit
                    + "<extra></extra>",
                }
            )
        lines = sorted(
            {
                c["collected_at"].isoformat()
                for c in found
                if c["collected_at"] is not None
                and any(c["metric"] == s.metric and c["stat"] == s.stat for s in members)
            }
        )
        shapes = [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "color": "#c0392b", "width": 1},
            }
            for x in lines
        ]
        charts.append(
            {
                "id": f"chart-{i}",
                "title": title,
                "figure": {
                    "data": traces,
                    "layout": {
                        "xaxis": {"type": "date", "title": {"text": "collection start (UTC)"}},
                        "yaxis": {"title": {"text": unit}, "automargin": True},
                        "margin": {"t": 20, "r": 20},
                        "height": 360,
                        "hovermode": "closest",
                        "legend": {"orientation": "h", "y": -0.3},
                        "shapes": shapes,
                    },
                },
            }
        )
    return {"workload": workload, "charts": charts, "changes": found}


def _change_row(c: dict, by_id: dict[str, dict], cols: list[str], reports: set[str]) -> dict:
    before, after = by_id.get(c["previous_run_id"], {}), by_id.get(c["run_id"], {})
    return {
        "night": str(c["night"]),
        "workload": c["workload"],
        "workload_href": f"workloads/{slug(c['workload'])}.html",
        "metric": _metric_label(c["metric"], c["stat"]),
        "direction": c["direction"],
        "before": _fmt_value(c["before"], c["unit"]),
        "after": _fmt_value(c["after"], c["unit"]),
        "relative": None if c["relative"] is None else f"{c['relative'] * 100:+.1f} %",
        "z": f"{c['z']:.1f}",
        "noise_sigmas": f"{c['noise_sigmas']:+.1f}",
        "run_id": c["run_id"],
        "run_href": report_href(c["run_id"]) if c["run_id"] in reports else None,
        "previous_run_id": c["previous_run_id"],
        "previous_href": report_href(c["previous_run_id"]) if c["previous_run_id"] in reports else None,
        "lineage": lineage_diff(before, after, cols),
    }


def build_site(
    wh: Warehouse, out: str | os.PathLike, since: datetime | None = None, report_nights: int | None = None
) -> Built:
    """Write (or bring up to date) the site of the warehouse's runs collected at or after
    ``since`` (every run when None) in the folder ``out``. ``report_nights``: write report pages
    only for the runs of the last N nights (UTC dates with runs) of the window; a run before
    them keeps the page an earlier build wrote, or has none (None: every run has one)."""
    if report_nights is not None and report_nights < 1:
        raise UsageError(f"--report-nights {report_nights}: takes a number of nights >= 1")
    if not str(out):
        raise UsageError("--out '': give the site's folder")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file, not a folder")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: the folder {out.parent} does not exist")
    table = catalog_table(wh, EXCLUDE)
    if since is not None:
        at = table.column("collected_at")
        table = table.filter(pc.greater_equal(at, pa.scalar(since, at.type)))
    runs = [
        r for r in table.to_pylist(maps_as_pydicts="strict") if r.get("build_id")
    ]  # a run not built has no marts yet
    out.mkdir(exist_ok=True)
    manifest = _read_manifest(out)
    built = Built(out, len(runs), 0, 0)

    measures, built.runs_measured = _measures(wh, out, runs, bool(manifest))
    series = tracked(runs, measures)
    found_table = changes(series)
    tmp = out / ".changes.parquet.tmp"
    pq.write_table(found_table, tmp)
    tmp.replace(out / "changes.parquet")
    found = found_table.to_pylist()
    built.changes = len(found)

    # the shared Plotly library
    lib = out / "assets" / "plotly.min.js"
    js = html_report.plotly_js()
    js_digest = hashlib.sha256(js.encode()).hexdigest()
    if manifest.get("plotly") != js_digest or not lib.exists():
        _write(lib, js)
    # report pages: once per run and build
    reports_done: dict[str, str] = dict(manifest.get("reports") or {})
    every = None  # the catalog the reports read (earlier runs of a workload), read once
    nights = sorted({d for r in runs if (d := _utc_date(r.get("collected_at"))) is not None})
    recent = set(nights[-report_nights:]) if report_nights else None
    for r in runs:
        page = out / report_href(r["run_id"])
        if reports_done.get(r["run_id"]) == r["build_id"] and page.exists():
            built.reports_kept += 1
            continue
        if recent is not None and _utc_date(r.get("collected_at")) not in recent:
            reports_done.pop(r["run_id"], None)
            page.unlink(missing_ok=True)  # of an older build of the run: not what the pages show
            continue
        every = every if every is not None else catalog_table(wh).to_pylist(maps_as_pydicts="strict")
        rep = html_report.gather(wh, r["run_id"], rows=every)
        _write(page, html_report.render(rep, plotly_src="../assets/plotly.min.js"))
        reports_done[r["run_id"]] = r["build_id"]
        built.reports_written += 1
    ids = {r["run_id"] for r in runs}
    for run_id in [x for x in reports_done if x not in ids]:  # a run dropped or out of the window
        (out / report_href(run_id)).unlink(missing_ok=True)
        del reports_done[run_id]
    reports = set(reports_done)

    pages: dict[str, str] = dict(manifest.get("pages") or {})
    env = _env()
    # a page depends on its data and on the templates (and the code) that render it
    code = _digest([__version__] + [env.loader.get_source(env, t)[0] for t in sorted(env.list_templates())])

    def page(rel: str, template: str, data: dict) -> None:
        digest = _digest([code, template, data])
        if pages.get(rel) == digest and (out / rel).exists():
            built.pages_kept += 1
            return
        _write(out / rel, env.get_template(template).render(**data))
        pages[rel] = digest
        built.pages_written.append(rel)

    by_workload: dict[str, list[Series]] = {}
    for s in series:
        by_workload.setdefault(s.workload, []).append(s)
    for r in runs:
        by_workload.setdefault(r.get("workload") or "", [])
    built.workloads = len(by_workload)
    for workload, mine in sorted(by_workload.items()):
        found_here = [c for c in found if c["workload"] == workload]
        data = _workload_page(workload, mine, found_here, reports)
        data["changes"] = _grouped([_change_row(c, {}, [], reports) for c in found_here])
        for c in data["changes"]:  # hrefs from workloads/
            c["run_href"] = c["run_href"] and "../" + c["run_href"]
            c["previous_href"] = c["previous_href"] and "../" + c["previous_href"]
        data["runs"] = sum(1 for r in runs if (r.get("workload") or "") == workload)
        page(f"workloads/{slug(workload)}.html", "site_workload.html.j2", data)
    keep = {f"workloads/{slug(w)}.html" for w in by_workload} | {"index.html"}
    for rel in [p for p in pages if p not in keep]:
        (out / rel).unlink(missing_ok=True)
        del pages[rel]

    page("index.html", "site_index.html.j2", _front(runs, found, reports, sorted(by_workload), since))
    manifest = {"version": MANIFEST_VERSION, "plotly": js_digest, "reports": reports_done, "pages": pages}
    _write(out / "manifest.json", json.dumps(manifest, indent=1, sort_keys=True))
    return built


def _grouped(rows: list[dict]) -> list[dict]:
    """Mark the first of each run's changes (adjacent: the changes are ordered by run) with how
    many the run has, so that the table names the night, workload, runs and lineage once."""
    for i, r in enumerate(rows):
        first = i == 0 or (rows[i - 1]["run_id"], rows[i - 1]["workload"]) != (r["run_id"], r["workload"])
        r["span"] = 0
        if first:
            r["span"] = sum(
                1 for x in rows[i:] if (x["run_id"], x["workload"]) == (r["run_id"], r["workload"])
            )
    return rows


def _front(runs: list[dict], found: list[dict], reports: set[str], workloads: list[str], since) -> dict:
    """The front page's grid (workloads x the last NIGHTS nights) and the changes, newest first."""
    by_id = {r["run_id"]: r for r in runs}
    cols = lineage_columns(runs)
    nights: list = sorted({d for r in runs if (d := _utc_date(r.get("collected_at"))) is not None})[-NIGHTS:]
    # a date as the column's head: month and day, with the year when the nights span several
    labels = [f"{n:%m-%d}" if len({x.year for x in nights}) == 1 else str(n) for n in nights]
    if any(r.get("collected_at") is None for r in runs):  # runs of no known time: a column of their own
        nights.append(None)
        labels.append("no date")
    changed: dict[str, list[dict]] = {}
    for c in found:
        changed.setdefault(c["run_id"], []).append(c)
    grid = []
    for w in workloads:
        cells = []
        for night in nights:
            mine = [
                r
                for r in runs
                if (r.get("workload") or "") == w and _utc_date(r.get("collected_at")) == night
            ]
            if not mine:
                cells.append(None)
                continue
            here = [c for r in mine for c in changed.get(r["run_id"], [])]
            up = sum(1 for c in here if c["direction"] == "up")
            down = len(here) - up
            last = mine[-1]
            cells.append(
                {
                    "run_id": last["run_id"],
                    "href": report_href(last["run_id"]) if last["run_id"] in reports else None,
                    "runs": len(mine),
                    "up": up,
                    "down": down,
                    "cls": "up" if up else "down" if down else "same",
                }
            )
        grid.append({"workload": w, "href": f"workloads/{slug(w)}.html", "cells": cells})
    rows = _grouped([_change_row(c, by_id, cols, reports) for c in found[:MAX_CHANGES]])
    return {
        "nights": ["none" if n is None else str(n) for n in nights],
        "night_labels": labels,
        "grid": grid,
        "changes": rows,
        "total_changes": len(found),
        "runs": len(runs),
        "lineage_columns": cols,
        "window": f"runs collected at or after {since:%Y-%m-%d %H:%M} UTC" if since else "every run",
        "max_changes": MAX_CHANGES,
        "top_n": TOP_N,
    }
