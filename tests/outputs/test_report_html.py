"""profetl report: one self-contained HTML file per run, checked as text and in headless Chromium."""

from __future__ import annotations

import json
import re
import statistics
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipeline.jobs.runner import ingest_dump, run_roots
from pipeline.outputs import html_report as report_limits
from pipeline.outputs.html_report import chart_ids, write_report
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.built import table_rows
from tests.helpers.chromium import CHROMIUM, NO_CHROMIUM, console_lines, dump_dom

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
SAMPLE_CHARTS = ["top-ops", "task-states", "pipe-ratios", "memory-bound", "topdown"]
MAX_BYTES = 6_000_000  # the Plotly library (~4.8 MB) and the aggregated figures


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    wh = Warehouse(tmp / "wh")
    with wh.writer():
        outcomes = run_roots(wh, [SAMPLE])
    run_id = outcomes[0].run_id
    written = write_report(wh, tmp / "report.html", run_id)
    return wh, run_id, written, written.path.read_text(encoding="utf-8")


class _Refs(HTMLParser):
    """Every src and href attribute, and the ids of the chart divs."""

    def __init__(self):
        super().__init__()
        self.refs, self.charts = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.refs += [a[k] for k in ("src", "href") if a.get(k)]
        if tag == "div" and "chart" in (a.get("class") or "").split():
            self.charts.append(a["id"])


def test_the_report_is_one_file_that_loads_nothing(sample_report):
    _, _, written, html = sample_report
    p = _Refs()
    p.feed(html)
    assert all(r.startswith("#") for r in p.refs), [r for r in p.refs if not r.startswith("#")]
    assert "<script src" not in html and "<link" not in html
    assert html.count("Plotly=") + html.count("plotly.js") >= 1  # the library is inside
    assert written.bytes == len(html.encode("utf-8")) < MAX_BYTES


def test_the_report_shows_the_run_its_accounting_and_its_advice(sample_report):
    wh, run_id, written, html = sample_report
    run = wh.run_index().run_record(run_id)
    assert run_id in html and run["chip"] in html
    assert f"{run['bytes_decoded']:,} bytes" in html and f"{run['records_decoded']:,}" in html
    assert "dropped_task_instances" in html  # the build issues of the sample
    advice = table_rows(wh, run_id)("advice")
    assert advice and written.findings == len(advice)  # one run: no regression rule
    for r in advice + table_rows(wh, run_id)("advice_instances"):  # every finding, every instance
        assert r["evidence"].replace("'", "&#39;") in html
    assert "no run of workload" in html  # why regressions were not checked


def test_every_chart_has_a_div(sample_report):
    _, _, written, html = sample_report
    p = _Refs()
    p.feed(html)
    assert chart_ids(html) == p.charts == SAMPLE_CHARTS
    assert written.charts == len(SAMPLE_CHARTS)


def _runs_of_one_workload(tmp_path, slow_op: str, factor: float):
    """Four nights of one workload; the last with ``slow_op`` ``factor`` times slower."""
    wh = Warehouse(tmp_path / "wh")
    truths = []
    with wh.writer():
        for night in range(4):
            cfg = HiprofConfig(
                devices=1,
                inferences=3,
                tasks=6,
                seed=night,
                start_us=1_767_225_600_000_000 + night * 86_400_000_000,
                op_scale={slow_op: factor} if night == 3 else {},
            )
            dump = tmp_path / f"night{night}"
            truths.append(generate(dump, cfg))
            o = ingest_dump(wh, dump)
            assert o.status == "built", o.error
            last = o.run_id
    return wh, last, truths


@pytest.fixture(scope="module")
def nights_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nights")
    wh, run_id, truths = _runs_of_one_workload(tmp, "conv2d_0", 4.0)
    written = write_report(wh, tmp / "r.html", run_id)
    return wh, truths, written, written.path.read_text(encoding="utf-8")


def test_trend_and_regression_over_earlier_runs(nights_report):
    wh, truths, written, html = nights_report
    assert chart_ids(html) == SAMPLE_CHARTS + ["trend"]
    one = write_report(wh, written.path.with_name("one.html"), trend_runs=1)
    assert one.charts == len(SAMPLE_CHARTS)  # --trend-runs 1: this run only, no trend

    def mean(truth, op):  # mean running time of the op's complete instances, from the events
        runs = [
            x.complete_ns - x.running_ns
            for x in truth.instances
            if x.op_name == op and x.complete_ns is not None
        ]
        return sum(runs) / len(runs)

    before = statistics.median(mean(t, "conv2d_0") for t in truths[:3])
    ratio = mean(truths[3], "conv2d_0") / before
    assert ratio > 1.1
    # one regression finding, its worst op conv2d_0 (the one slowed down) and its value conv2d_0's
    regression = re.findall(
        r"regression</td>\s*<td>op</td>\s*<td class=\"num\">(\d+)</td>\s*<td><b>conv2d_0(?:, [^<]*)?</b>"
        r"(?:, &hellip;)?</td>\s*<td class=\"num\">([0-9.]+) ratio",
        html,
    )
    assert len(regression) == 1, "no regression finding with conv2d_0 first"
    assert float(regression[0][1]) == pytest.approx(ratio, rel=1e-3)
    assert html.count("regression</td>") == 1


def test_a_missing_out_folder_is_a_usage_error(sample_report, tmp_path):
    from pipeline.errors import UsageError

    wh, run_id, _, _ = sample_report
    with pytest.raises(UsageError, match="does not exist"):
        write_report(wh, tmp_path / "missing" / "r.html", run_id)


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
@pytest.mark.parametrize("which", ["sample_report", "nights_report"])
def test_headless_chromium_draws_every_chart_offline(which, request, tmp_path):
    written, html = request.getfixturevalue(which)[-2:]
    charts = chart_ids(html)
    p = dump_dom(written.path.as_uri(), tmp_path / "profile")
    dom = p.stdout
    body = re.search(r'<body data-charts="(\d+)" data-errors="([^"]*)"', dom)
    assert body, dom[:500]
    assert body.group(2) == "", body.group(2)
    assert int(body.group(1)) == len(charts) >= len(SAMPLE_CHARTS)
    for chart in charts:  # each chart div holds Plotly's drawing
        start = dom.index(f'id="{chart}"')
        assert 'class="main-svg"' in dom[start : start + 20_000], chart
    assert console_lines(p, page_only=True) == []


def test_the_command_writes_the_file_and_says_what_it_wrote(sample_report, tmp_path):
    import json

    from typer.testing import CliRunner

    from pipeline.cli.main import app

    wh, run_id, _, _ = sample_report
    out = tmp_path / "cli.html"
    r = CliRunner().invoke(app, ["report", run_id, "--out", str(out), "--json", "-w", str(wh.path)])
    assert r.exit_code == 0, r.output
    said = json.loads(r.stdout)
    assert said == {
        "path": str(out),
        "bytes": out.stat().st_size,
        "charts": len(SAMPLE_CHARTS),
        "findings": len(table_rows(wh, run_id)("advice")),
    }
    r = CliRunner().invoke(app, ["report", "--out", str(out), "-w", str(tmp_path / "typo")])
    assert r.exit_code == 2 and "no warehouse at" in r.output


def test_a_training_run_charts_its_iterations(tmp_path):
    """A dump with FP, BP and all-reduce records gets the step-trace chart; its bars are the
    parts of each iteration the synthetic records say (truth.training_marks: FP 1 us after the
    start, BP 1 us before the end, two all-reduce ranges of 2 us each)."""
    wh = Warehouse(tmp_path / "wh")
    dump = tmp_path / "train"
    truth = generate(dump, HiprofConfig(devices=1, inferences=3, tasks=4, seed=3, training=True))
    with wh.writer():
        o = ingest_dump(wh, dump)
    assert o.status == "built", o.error
    html = write_report(wh, tmp_path / "t.html", o.run_id).path.read_text(encoding="utf-8")
    assert "step-trace" in chart_ids(html)
    blob = html[html.index('id="report-charts"') :]
    blob = blob[blob.index(">") + 1 : blob.index("</script>")]
    fig = next(c for c in json.loads(blob) if c["id"] == "step-trace")["figure"]
    by_name = {t["name"]: t["y"] for t in fig["data"]}
    steps = [i.step for i in truth.inferences if i.step is not None]
    assert len(by_name["FP to BP"]) == len(steps)
    for k, (start, end) in enumerate(steps):
        assert by_name["start to FP"][k] == pytest.approx(1.0)
        assert by_name["FP to BP"][k] == pytest.approx((end - start - 2_000) / 1e3)
        assert by_name["refresh after BP"][k] == pytest.approx(1.0)
        assert by_name["all-reduce (sum of ranges)"][k] == pytest.approx(4.0)


def test_no_all_reduce_line_for_a_run_without_all_reduce_ranges():
    """Iterations of a run that recorded no all-reduce ranges (an export's step trace) get no
    all-reduce line: a line of zeros would say they spent no time in it. Rows as the report's
    query gives them: iteration, the three parts, the iteration, all-reduce ns, ranges found."""
    from pipeline.outputs.html_report import _step_trace_chart

    without = [(1, 1_000, 5_000, 1_000, 7_000, 0.0, 0), (2, 2_000, 5_000, 1_000, 8_000, 0.0, 0)]
    chart = _step_trace_chart(without)
    assert [t["name"] for t in chart.figure["data"]] == ["start to FP", "FP to BP", "refresh after BP"]
    assert "no all-reduce ranges" in chart.note
    with_ranges = [(1, 1_000, 5_000, 1_000, 7_000, 4_000.0, 1), (2, 2_000, 5_000, 1_000, 8_000, 0.0, 0)]
    data = _step_trace_chart(with_ranges).figure["data"]
    assert data[-1]["name"] == "all-reduce (sum of ranges)" and data[-1]["y"] == [4.0, 0.0]


def test_ingest_issues_beyond_the_first_few_are_folded(tmp_path):
    """A dump with 8 files profetl does not know: 8 issue rows, the first ISSUES_SHOWN open and
    the rest inside a <details>, so that many issues do not push the charts down the page."""
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(SAMPLE / "resnet50_2dev", dump)
    for i in range(8):
        (dump / "data" / f"junk_{i}.bin").write_bytes(b"not profiling data")
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, dump)
    assert o.status == "built", o.error
    html = write_report(wh, tmp_path / "r.html", o.run_id).path.read_text(encoding="utf-8")
    junk = r"<tr><td>data/junk_\d\.bin</td>"
    (folded,) = re.findall(r'<details class="issues">(.*?)</details>', html, flags=re.S)
    outside = html.replace(folded, "")
    assert len(re.findall(junk, outside)) == report_limits.ISSUES_SHOWN == 5
    assert len(re.findall(junk, folded)) == 3 and "<summary>3 more</summary>" in folded


def test_long_op_names_are_labelled_by_their_end():
    """MindSpore names ops by scope path (80-120 characters, the same network prefix for all):
    an axis label keeps a name's last 40 characters, so the bars keep the chart's width; the
    categories (and the hover text) keep the whole names, so ops whose ends are alike stay two."""
    from pipeline.outputs.html_report import _top_ops_chart

    a = "Gradients/Default/network-WithLossCell/_backbone-AlexNet/conv1-Conv2d/gradConv2D/Conv2D-op222"
    b = "Default/network-WithLossCell/_backbone-AlexNet/conv1-Conv2d/gradConv2D/Conv2D-op222"
    rows = [(0, a, 5_000, 2), (0, b, 4_000, 2), (0, "MatMul", 3_000, 1)]
    fig = _top_ops_chart(rows).figure
    axis = fig["layout"]["yaxis"]
    assert axis["tickvals"] == [a, b, "MatMul"]
    end = "…et/conv1-Conv2d/gradConv2D/Conv2D-op222"  # 40 characters: "…" and the name's last 39
    assert axis["ticktext"] == [end, end, "MatMul"]
    assert fig["data"][0]["y"] == ["MatMul", b, a]  # bars by whole name (smallest first)


def test_an_inference_run_has_no_step_trace_chart(sample_report):
    _, _, _, html = sample_report
    assert "step-trace" not in chart_ids(html)  # step trace without FP / BP: nothing to break down


MANY = HiprofConfig(devices=1, inferences=600, tasks=10, seed=7)  # about 1 in 6 inferences launch-bound
MAX_CHART_TOP = 1500  # px at 1300 px wide: the run, the data accounting and a screen of advice above it


@pytest.fixture(scope="module")
def many_report(tmp_path_factory):
    """The report of a run of 600 inferences, and the launch-bound ones by the events."""
    from tests.sql.test_advice import expected

    tmp = tmp_path_factory.mktemp("many")
    truth = generate(tmp / "dump", MANY)
    wh = Warehouse(tmp / "wh")
    with wh.writer():
        o = ingest_dump(wh, tmp / "dump")
    assert o.status == "built", o.error
    written = write_report(wh, tmp / "many.html", o.run_id)
    launch = {
        int(k[3].split()[1]): v[1] for k, v in expected(truth).items() if k[1] == "launch_bound"
    }  # number -> ratio
    return launch, written, written.path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_many_findings_are_folded_under_one_row_per_rule(many_report):
    """One row per finding; the launch-bound inferences (derived from the events) are one
    finding with their number, and the worst of them (largest launch span ratio) are listed
    by number inside <details>."""
    launch, written, html = many_report
    assert len(launch) > report_limits.MAX_SHOWN
    rows = re.findall(
        r'<tr class="finding">\s*<td class="sev-\w+">\w+</td>\s*<td>\d+</td>\s*<td>(\w+)</td>\s*'
        r'<td>(\w+)</td>\s*<td class="num">([0-9,]+)</td>',
        html,
    )
    assert len(rows) == written.findings < 20
    assert len({(rule, scope) for rule, scope, _ in rows}) == len(rows)
    assert [int(n.replace(",", "")) for rule, _, n in rows if rule == "launch_bound"] == [len(launch)]
    # everything about an instance is inside a <details> element (folded)
    outside = re.sub(r"<details>.*?</details>", "", html, flags=re.S)
    assert "topdown_inference: device_id" not in outside
    folded = [d for d in re.findall(r"<details>(.*?)</details>", html, flags=re.S) if "launch_bound" in d]
    assert len(folded) == 1
    shown = [int(n) for n in re.findall(r"<tr><td>inference (\d+)</td>", folded[0])]
    worst = sorted(launch, key=lambda n: (-launch[n], n))[: report_limits.MAX_SHOWN]  # largest ratio first
    assert shown == sorted(worst)  # the worst, by number: 2, 9, 10, 100, not 10, 100, 2, 9


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_headless_chromium_the_first_chart_is_near_the_top(many_report, tmp_path):
    """Laid out by Chromium at 1300 px wide, the first chart of a 600-inference run's report
    starts within MAX_CHART_TOP px of the top (a script added to a copy writes its position)."""
    _, written, html = many_report
    first = chart_ids(html)[0]
    probe = (
        '<script>window.addEventListener("load", function () {'
        f'var c = document.getElementById("{first}");'
        "document.body.dataset.chartTop = String(Math.round(c.getBoundingClientRect().top + window.scrollY));"
        "document.body.dataset.pageHeight = String(document.documentElement.scrollHeight);});</script>"
    )
    page = tmp_path / "probe.html"
    page.write_text(html.replace("</body>", probe + "</body>"), encoding="utf-8")
    p = dump_dom(page.as_uri(), tmp_path / "profile", window="1300,900")
    top = re.search(r'data-chart-top="(\d+)"', p.stdout)
    height = re.search(r'data-page-height="(\d+)"', p.stdout)
    assert top and height, p.stdout[:500]
    assert 0 < int(top.group(1)) < MAX_CHART_TOP, f"first chart at {top.group(1)} px"
    assert int(height.group(1)) < 10_000  # the charts, not pages of advice
