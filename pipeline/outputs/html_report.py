"""One run as a self-contained HTML report: metadata, data accounting, charts and advice.

Everything the page needs is inside the file: the styles, the figures' data and the Plotly
JavaScript (from the plotly package, inlined once), so it opens offline from a file: URL and
can be mailed. The page is made from ``pipeline/templates/report.html.j2`` with Jinja2.

Size bound: every chart is aggregated in SQL before it is plotted, and each has a fixed
number of points: TOP_OPS ops (per device for the bars), MAX_INFERENCES inferences of the
top-down chart, MAX_INFERENCES iterations of the step-trace chart, TREND_RUNS runs of the trend,
MAX_FINDINGS findings (one per device, rule and scope kind: the ``advice`` mart), MAX_SHOWN
instances of each (the worst, folded under it; all are in ``advice_instances``) and MAX_ISSUES
issue rows (the largest, ISSUES_SHOWN of them open and the rest folded). A report therefore
holds at most some tens of thousands of values however many tasks the run has: about 5 MB of
which ~4.8 MB is the Plotly library. Building it reads each mart once with an aggregating query.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipeline.analysis.advice import Finding, Instance, regressions
from pipeline.analysis.selection import catalog, earlier_runs, run_row
from pipeline.errors import UsageError
from pipeline.outputs.cells import cell
from pipeline.outputs.formats import check_out_file
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import read_consistent

TOP_OPS = 20
MAX_INFERENCES = 200
TREND_RUNS = 30
TREND_OPS = 8
MAX_FINDINGS = 500
MAX_SHOWN = 50
MAX_ISSUES = 50
ISSUES_SHOWN = 5  # ingest issue rows shown open; the rest are folded, so the charts stay near the top
MARTS = [
    "task_scheduler",
    "ai_core_metrics",
    "topdown_inference",
    "step_trace_summary",
    "step_trace_reduces",
    "advice",
    "advice_instances",
    "build_issues",
]
PIPES = ["mac", "vec", "scalar", "mte1", "mte2", "mte3"]
PIPE_NAMES = {
    "mac": "Cube (mac)",
    "vec": "Vector (vec)",
    "scalar": "Scalar",
    "mte1": "MTE1",
    "mte2": "MTE2",
    "mte3": "MTE3",
}


@dataclass
class Chart:
    id: str
    title: str
    note: str
    figure: dict


@dataclass
class Report:
    run: dict
    meta: list[tuple[str, str]]
    accounting: list[tuple[str, str]]
    issues: list[dict]
    build_issues: list[dict]
    charts: list[Chart] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    regression_note: str | None = None
    generated_at: str = ""


@dataclass
class Written:
    path: Path
    bytes: int
    charts: int
    findings: int


def plotly_js() -> str:
    """The Plotly library the plotly package ships (read as a file: importing plotly is slow)."""
    try:
        return (
            importlib.resources.files("plotly")
            .joinpath("package_data/plotly.min.js")
            .read_text(encoding="utf-8")
        )
    except (ModuleNotFoundError, FileNotFoundError) as e:
        raise UsageError(f"profetl report needs the plotly package (pip install plotly): {e}") from None


def _mb(n) -> str:
    return "N/A" if n is None else f"{n / 1e6:.2f} MB ({n:,} bytes)"


def _bar(name: str, x, y, orientation: str = "v", **extra) -> dict:
    return {"type": "bar", "name": name, "x": x, "y": y, "orientation": orientation, **extra}


def _layout(title_x: str, title_y: str, **extra) -> dict:
    return {
        "xaxis": {"title": {"text": title_x}, "automargin": True},
        "yaxis": {"title": {"text": title_y}, "automargin": True},
        "margin": {"t": 30, "r": 20},
        "legend": {"orientation": "h", "y": -0.25},
        "hovermode": "closest",
        **extra,
    }


# an op's axis label keeps its name's last OP_LABEL_CHARS characters (a scope path's end names the
# op; its start, the same network prefix for every op, would fill the chart); the bar's hover
# text keeps the whole name
OP_LABEL_CHARS = 40


def _op_axis(names, **axis) -> dict:
    """A category axis of op names, each labelled by its end: the categories stay the whole
    names, so two ops whose ends are alike stay two bars."""
    names = list(dict.fromkeys(names))
    text = [n if len(n) <= OP_LABEL_CHARS else "…" + n[-(OP_LABEL_CHARS - 1) :] for n in names]
    return {"automargin": True, **axis, "tickmode": "array", "tickvals": names, "ticktext": text}


def gather(
    wh: Warehouse, run_ref: str = "latest", trend_runs: int = TREND_RUNS, rows: list[dict] | None = None
) -> Report:
    """Everything the report shows for one run, aggregated (``rows``: the catalog, when the
    caller has read it: the site writes the reports of many runs)."""
    rows = catalog(wh) if rows is None else rows
    run = run_row(wh, run_ref, rows)
    run_id = run["run_id"]
    if not run.get("build_id"):
        raise UsageError(f"run {run_id} is ingested but not built: `profetl build {run_id}` first")
    p = {"run": run_id}

    def read(con):
        q = lambda sql: con.sql(sql, params=p).fetchall()  # noqa: E731
        out = {}
        out["issues"] = (
            con.sql(
                "select source_file, byte_offset, kind, count, message from ingest_issues where run_id = $run "
                f"order by count desc limit {MAX_ISSUES}",
                params=p,
            )
            .to_arrow_table()
            .to_pylist()
            if _has(con, "ingest_issues")
            else []
        )
        out["build_issues"] = (
            con.sql(
                "select device_id, kind, count, message from build_issues where run_id = $run order by device_id, kind",
                params=p,
            )
            .to_arrow_table()
            .to_pylist()
        )
        out["top_ops"] = q(f"""
            select device_id, coalesce(op_name, task_type) as op, sum(time_ns)::bigint as t, sum(task_count)::bigint as n
            from task_scheduler where run_id = $run group by device_id, op
            qualify row_number() over (partition by device_id order by t desc, op) <= {TOP_OPS}
            order by device_id, t desc, op""")
        out["states"] = q(f"""
            select coalesce(op_name, task_type) as op, sum(waiting_ns)::bigint, sum(running_ns)::bigint,
                   sum(greatest(pending_ns - running_ns, 0))::bigint, count(waiting_ns) > 0
            from task_scheduler where run_id = $run group by all
            order by sum(running_ns) + coalesce(sum(waiting_ns), 0) desc, op limit {TOP_OPS}""")
        weighted = ", ".join(
            f"sum({x}_ratio * total_cycles) / nullif(sum(total_cycles) filter (where {x}_ratio is not null), 0)"
            for x in PIPES
        )
        out["pipes"] = q(f"""
            select coalesce(op_name, 'stream ' || stream_id || ' task ' || task_id) as op, {weighted},
                   sum(aicore_time_us) as t, count(*) as n,
                   sum(mte2_ratio * total_cycles) / nullif(greatest(sum(mac_ratio * total_cycles), sum(vec_ratio * total_cycles)), 0) as mb
            from ai_core_metrics where run_id = $run group by all
            order by t desc nulls last, op limit {TOP_OPS}""")
        out["topdown"] = q(f"""
            select infer_id, module, avg(dur_ns) from (
                select device_id, infer_id, module_name || coalesce(' ' || api_name, '') as module, sum(dur_ns) as dur_ns
                from topdown_inference where run_id = $run and infer_id <= {MAX_INFERENCES}
                group by all)
            group by all order by infer_id, module""")
        out["inferences"] = q(
            "select count(distinct (device_id, infer_id)), count(distinct device_id) from topdown_inference where run_id = $run"
        )[0]
        # training iterations: each part of an iteration's time, the mean over devices and models
        out["steps"] = q(f"""
            select s.iter_id, avg(s.fp_start_ns - s.iteration_start_ns), avg(s.fp_to_bp_ns), avg(s.iteration_refresh_ns),
                   avg(s.iteration_ns), avg(coalesce(r.reduce_ns, 0)), count(r.reduce_ns)
            from step_trace_summary s
            left join (select device_id, model_id, iteration_id, sum(reduce_ns) as reduce_ns
                       from step_trace_reduces where run_id = $run group by all) r
                on r.device_id = s.device_id and r.model_id is not distinct from s.model_id
                   and r.iteration_id = s.iteration_id
            where s.run_id = $run and s.iter_id <= {MAX_INFERENCES}
              and exists (select 1 from step_trace_summary t
                          where t.run_id = $run and (t.fp_start_ns is not null or t.bp_end_ns is not null))
            group by s.iter_id order by s.iter_id""")
        out["findings"] = (
            con.sql(
                "select device_id, severity, rule_id, scope, instances, worst, value, threshold, unit, share_pct, evidence, suggestion "
                f"from advice where run_id = $run order by severity = 'medium', device_id, share_pct desc nulls last, rule_id, scope "
                f"limit {MAX_FINDINGS}",
                params=p,
            )
            .to_arrow_table()
            .to_pylist()
        )
        # the worst MAX_SHOWN instances of each finding, in the mart's order (inferences by number)
        out["instances"] = (
            con.sql(
                "select device_id, rule_id, scope, scope_name, rank, severity, value, share_pct, evidence "
                f"from advice_instances where run_id = $run and rank <= {MAX_SHOWN} "
                "order by device_id, rule_id, scope, scope_key nulls last, rank",
                params=p,
            )
            .to_arrow_table()
            .to_pylist()
        )
        return out

    data = read_consistent(wh, read, [run_id], MARTS + ["ingest_issues"])
    rep = Report(
        run,
        _meta(run),
        _accounting(run),
        data["issues"],
        data["build_issues"],
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    )
    shown: dict[tuple, list[Instance]] = {}
    for i in data["instances"]:
        key = (i.pop("device_id"), i.pop("rule_id"), i.pop("scope"))
        shown.setdefault(key, []).append(Instance(**i))
    rep.findings = [
        Finding(**f, shown=shown.get((f["device_id"], f["rule_id"], f["scope"]), []))
        for f in data["findings"]
    ]
    found, why_not = regressions(wh, run_id)
    rep.findings = found + rep.findings
    rep.regression_note = why_not
    rep.charts = [
        c
        for c in (
            _top_ops_chart(data["top_ops"]),
            _states_chart(data["states"]),
            _pipes_chart(data["pipes"]),
            _memory_bound_chart(data["pipes"]),
            _topdown_chart(data["topdown"], data["inferences"]),
            _step_trace_chart(data["steps"]),
            _trend_chart(wh, run, rows, data["top_ops"], trend_runs),
        )
        if c is not None
    ]
    return rep


def _has(con, table: str) -> bool:
    return bool(con.sql("select 1 from duckdb_views() where view_name = $t", params={"t": table}).fetchall())


def _meta(run: dict) -> list[tuple[str, str]]:
    when = run.get("collected_at")
    return [
        ("Run", run["run_id"]),
        ("Workload", str(run.get("workload") or "N/A")),
        ("Source", str(run.get("source_path") or "N/A")),
        ("Layout", f"{run.get('layout')} (generation {run.get('layout_generation')})"),
        ("Chip", str(run.get("chip") or "N/A")),
        ("Devices", ", ".join(str(d) for d in (run.get("devices") or [])) or "N/A"),
        ("Metric set", str(run.get("metric_set") or "N/A")),
        (
            "Collected",
            when.strftime("%Y-%m-%d %H:%M:%S UTC") if isinstance(when, datetime) else str(when or "N/A"),
        ),
        ("CANN", str(run.get("cann_version") or "N/A")),
        ("Driver", str(run.get("driver_version") or "N/A")),
        ("Framework", str(run.get("framework_version") or "N/A")),
        ("Tags", cell(run.get("tags") or None)),  # k=v,k=v; N/A without any
        ("profetl", str(run.get("profetl_version") or "N/A")),
    ]


def _accounting(run: dict) -> list[tuple[str, str]]:
    return [
        ("Raw data", _mb(run.get("data_bytes"))),
        ("Bytes decoded", _mb(run.get("bytes_decoded"))),
        ("Bytes skipped", _mb(run.get("bytes_skipped"))),
        ("Records decoded", f"{run.get('records_decoded') or 0:,}"),
        ("Ingest issues", f"{run.get('issues') or 0:,}"),
        ("Ingest / build", f"{run.get('ingest_seconds') or 0:.2f} s / {run.get('build_seconds') or 0:.2f} s"),
    ]


def _top_ops_chart(rows) -> Chart | None:
    if not rows:
        return None
    traces = []
    for dev in sorted({r[0] for r in rows}, key=lambda d: (d is None, d)):
        mine = [r for r in rows if r[0] == dev][::-1]
        traces.append(
            _bar(
                f"device {dev}",
                [r[2] / 1e3 for r in mine],
                [r[1] for r in mine],
                "h",
                customdata=[r[3] for r in mine],
                hovertemplate="%{y}<br>%{x:,.1f} us in %{customdata} task(s)<extra>device "
                + str(dev)
                + "</extra>",
            )
        )
    height = 120 + 22 * min(len(rows), TOP_OPS * 2)
    return Chart(
        "top-ops",
        "Top ops by device time",
        f"Running time summed over an op's task instances (task_scheduler), top {TOP_OPS} per device.",
        {
            "data": traces,
            "layout": _layout(
                "device time (us)",
                "",
                barmode="group",
                height=height,
                yaxis=_op_axis([r[1] for r in rows], categoryorder="total ascending"),
            ),
        },
    )


def _states_chart(rows) -> Chart | None:
    if not rows:
        return None
    ops = [r[0] for r in rows]
    has_states = any(r[4] for r in rows)
    traces = [
        _bar(
            "running",
            ops,
            [(r[2] or 0) / 1e3 for r in rows],
            marker={"color": "#2a9d8f"},
            hovertemplate="%{x}<br>running %{y:,.1f} us<extra></extra>",
        )
    ]
    if has_states:
        traces.insert(
            0,
            _bar(
                "waiting",
                ops,
                [(r[1] or 0) / 1e3 for r in rows],
                marker={"color": "#e9c46a"},
                hovertemplate="%{x}<br>waiting %{y:,.1f} us<extra></extra>",
            ),
        )
        traces.insert(
            1,
            _bar(
                "pending (before running)",
                ops,
                [(r[3] or 0) / 1e3 for r in rows],
                marker={"color": "#f4a261"},
                hovertemplate="%{x}<br>pending %{y:,.1f} us<extra></extra>",
            ),
        )
    note = (
        "Waiting, pending and running time per op (task_scheduler, summed over devices), top "
        f"{TOP_OPS}. Pending is shown without the running time msprof's Pending includes."
    )
    if not has_states:
        note += " This chip reports no waiting or pending states: running only."
    return Chart(
        "task-states",
        "Task Scheduler: waiting / pending / running per op",
        note,
        {
            "data": traces,
            "layout": _layout("", "time (us)", barmode="stack", height=420, xaxis=_op_axis(ops)),
        },
    )


def _pipes_chart(rows) -> Chart | None:
    rows = [r for r in rows if any(v is not None for v in r[1:7])]
    if not rows:
        return None
    ops = [r[0] for r in rows]
    traces = [
        _bar(
            PIPE_NAMES[x],
            ops,
            [r[1 + i] for r in rows],
            hovertemplate="%{x}<br>" + x + "_ratio %{y:.3f}<extra></extra>",
        )
        for i, x in enumerate(PIPES)
        if any(r[1 + i] is not None for r in rows)
    ]
    return Chart(
        "pipe-ratios",
        "AI Core pipeline ratios per op",
        f"Cycle-weighted pipe ratios (ai_core_metrics) of the {TOP_OPS} ops with the most AI Core time.",
        {
            "data": traces,
            "layout": _layout(
                "",
                "share of cycles",
                barmode="group",
                height=420,
                yaxis={"range": [0, 1], "title": {"text": "share of cycles"}},
                xaxis=_op_axis(ops),
            ),
        },
    )


def _memory_bound_chart(rows) -> Chart | None:
    rows = [r for r in rows if r[9] is not None]
    if not rows:
        return None
    ops = [r[0] for r in rows]
    colors = ["#e76f51" if r[9] >= 1 else "#8ab17d" for r in rows]
    trace = _bar(
        "memory_bound",
        ops,
        [r[9] for r in rows],
        marker={"color": colors},
        hovertemplate="%{x}<br>memory_bound %{y:.2f}<extra></extra>",
    )
    line = {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": 1,
        "y1": 1,
        "line": {"dash": "dash", "color": "#444"},
    }
    return Chart(
        "memory-bound",
        "Memory-bound ops",
        "memory_bound = mte2_ratio / max(mac_ratio, vec_ratio) per op, from its cycles on all devices; at 1 or above (dashed line, red bars) "
        "moving data takes longer than computing.",
        {
            "data": [trace],
            "layout": _layout(
                "", "memory_bound", height=380, shapes=[line], showlegend=False, xaxis=_op_axis(ops)
            ),
        },
    )


def _topdown_chart(rows, counts) -> Chart | None:
    if not rows:
        return None
    infers = sorted({r[0] for r in rows})
    modules = sorted(
        {r[1] for r in rows},
        key=lambda m: (
            ["ACL", "GE", "Runtime", "Task"].index(m.split()[0])
            if m.split()[0] in ("ACL", "GE", "Runtime", "Task")
            else 9,
            m,
        ),
    )
    traces = []
    for m in modules:
        by = {r[0]: r[2] for r in rows if r[1] == m}
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": m,
                "x": infers,
                "y": [by.get(i, None) and by[i] / 1e3 for i in infers],
                "hovertemplate": "inference %{x}<br>" + m + " %{y:,.1f} us<extra></extra>",
            }
        )
    total, devices = counts
    note = "Span of each module of the inference workflow per inference (topdown_inference; the mean over devices)."
    if infers and infers[-1] >= MAX_INFERENCES:
        note += f" The first {MAX_INFERENCES} inferences of {total} (device, inference) pairs."
    return Chart(
        "topdown",
        "Top-down time per inference",
        note,
        {
            "data": traces,
            "layout": _layout(
                "inference",
                "duration (us)",
                height=400,
                xaxis={
                    "title": {"text": "inference"},
                    "tickformat": "d",
                    **({"dtick": 1} if len(infers) <= 30 else {}),
                },
            ),
        },
    )


def _step_trace_chart(rows) -> Chart | None:
    """Stacked parts of each training iteration (start to FP, FP to BP, refresh after BP) and the
    all-reduce time beside them where the run recorded all-reduce ranges; only for runs whose
    step trace has FP or BP records. A row: iteration, the three parts, the iteration's time,
    the all-reduce time and how many (device, model) iterations had all-reduce ranges (ns)."""
    if not rows:
        return None
    iters = [r[0] for r in rows]
    us = lambda v: None if v is None else v / 1e3  # noqa: E731
    parts = [("start to FP", 1), ("FP to BP", 2), ("refresh after BP", 3)]
    traces = [
        _bar(
            name,
            iters,
            [us(r[i]) for r in rows],
            hovertemplate="iteration %{x}<br>" + name + " %{y:,.1f} us<extra></extra>",
        )
        for name, i in parts
    ]
    note = (
        "Where each training iteration's time goes (step_trace_summary; the mean over devices and models, by the "
        "iteration's rank on its device)"
    )
    # the all-reduce line only for a run that recorded all-reduce ranges: a line of zeros would
    # say the iterations spent no time in it
    if any(r[6] for r in rows):
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "all-reduce (sum of ranges)",
                "x": iters,
                "y": [us(r[5]) for r in rows],
                "hovertemplate": "iteration %{x}<br>all-reduce %{y:,.1f} us<extra></extra>",
            }
        )
        note += ", with the summed all-reduce ranges of the iteration (step_trace_reduces), which overlap the backward pass."
    else:
        note += "; the run recorded no all-reduce ranges (step_trace_reduces), so none is drawn."
    if iters[-1] >= MAX_INFERENCES:
        note += f" The first {MAX_INFERENCES} iterations."
    return Chart(
        "step-trace",
        "Training iterations (step trace)",
        note,
        {
            "data": traces,
            "layout": _layout(
                "iteration",
                "time (us)",
                barmode="stack",
                height=400,
                xaxis={
                    "title": {"text": "iteration"},
                    "tickformat": "d",
                    **({"dtick": 1} if len(iters) <= 30 else {}),
                },
            ),
        },
    )


def _trend_chart(wh: Warehouse, run: dict, rows: list[dict], top_ops, n: int) -> Chart | None:
    earlier = earlier_runs(wh, run, run["workload"], n - 1, rows) if n > 1 else []
    if not earlier:
        return None
    from pipeline.analysis.run_stats import entries

    ids = [r["run_id"] for r in earlier] + [run["run_id"]]
    per_run = entries(wh, ids, "op")
    totals: dict[str, float] = {}
    for _, op, t, _ in top_ops:
        totals[op] = totals.get(op, 0) + t
    ops = sorted(totals, key=lambda o: -totals[o])[:TREND_OPS]
    when = {r["run_id"]: r.get("collected_at") for r in earlier + [run]}
    x = [when[i].isoformat() if isinstance(when[i], datetime) else i for i in ids]
    traces = []
    for op in ops:
        ys = []
        for i in ids:
            s = per_run[i].get(("", op))
            ys.append(None if s is None or s.mean is None else s.mean / 1e3)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": op,
                "x": x,
                "y": ys,
                "customdata": ids,
                "hovertemplate": op + "<br>%{customdata}<br>mean %{y:,.2f} us<extra></extra>",
            }
        )
    return Chart(
        "trend",
        f"Trend of the top ops over the last {len(ids)} runs of the workload",
        f"Mean time per task instance of this run's top {len(ops)} ops in each run of workload {run['workload']} "
        "(as profetl compare --by op computes it).",
        {"data": traces, "layout": _layout("collection start", "mean (us)", height=400)},
    )


def render(rep: Report, plotly_src: str | None = None) -> str:
    """The report as one HTML document: with the Plotly library inside, or, given
    ``plotly_src``, loading it from that relative URL (the site's pages share one copy)."""
    return _template().render(
        rep=rep,
        charts=[asdict(c) for c in rep.charts],
        findings=[asdict(f) for f in rep.findings],
        plotly_js="" if plotly_src else plotly_js(),
        plotly_src=plotly_src,
        issues_shown=ISSUES_SHOWN,
    )


@functools.cache
def _template():
    """The report's template, compiled once per process (the site renders many reports)."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("pipeline", "templates"), autoescape=select_autoescape(["html", "j2"])
    )
    env.filters["num"] = _num
    return env.get_template("report.html.j2")


def _num(v) -> str:
    if v is None:
        return "N/A"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def write_report(
    wh: Warehouse, out: str | os.PathLike, run_ref: str = "latest", trend_runs: int = TREND_RUNS
) -> Written:
    """Write the report of run ``run_ref`` to ``out`` atomically (a temporary file beside it, renamed)."""
    out = check_out_file(out)
    if trend_runs < 1:
        raise UsageError("--trend-runs takes a number of runs >= 1")
    rep = gather(wh, run_ref, trend_runs)
    text = render(rep).encode("utf-8")
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        tmp.write_bytes(text)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return Written(out, len(text), len(rep.charts), len(rep.findings))


def chart_ids(html: str) -> list[str]:
    """The ids of the charts a report holds (tests check each one is drawn)."""
    start = html.index('id="report-charts"')
    blob = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return [c["id"] for c in json.loads(blob)]
