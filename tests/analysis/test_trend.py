"""trend: one metric over ten synthetic nights returns the ten values synth wrote, and plots them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from pipeline.analysis.selection import RunSelection
from pipeline.analysis.trend import trend
from pipeline.cli.main import app
from pipeline.errors import UsageError
from pipeline.outputs.plot import svg
from tests.helpers.history import build_history, op_mean

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

runner = CliRunner()
SCALES = [1.0, 1.07, 0.95, 1.12, 1.2, 1.01, 1.33, 0.9, 1.5, 1.25]
OP = "matmul_1"


@pytest.fixture(scope="module")
def ten(tmp_path_factory):
    return build_history(tmp_path_factory.mktemp("trend"), [{"seed": 2, "op_scale": {OP: s}} for s in SCALES])


def test_ten_runs_give_the_ten_values(ten):
    wh, nights = ten
    t = trend(wh, f"op:{OP}")
    assert [p.run_id for p in t.points] == [n.run_id for n in nights]  # collection order
    assert [p.value for p in t.points] == pytest.approx([op_mean(n.truth, OP) for n in nights], rel=1e-12)
    assert [p.count for p in t.points] == [3] * 10
    assert t.points[3].collected_at == datetime(2026, 1, 4, tzinfo=UTC)
    # the scale shows through: value / first value follows SCALES within the 10 ns rounding
    ratios = [p.value / t.points[0].value for p in t.points]
    assert ratios == pytest.approx(SCALES, abs=0.01)


def test_total_count_and_run_metrics(ten):
    wh, nights = ten
    total = trend(wh, f"op:{OP}", stat="total")
    assert [p.value for p in total.points] == [
        sum(x.complete_ns - x.running_ns for x in n.truth.instances if x.op_name == OP) for n in nights
    ]
    task_time = trend(wh, "run:task_time")
    assert [p.value for p in task_time.points] == [
        sum(x.complete_ns - x.running_ns for x in n.truth.instances if x.complete_ns is not None)
        for n in nights
    ]
    api = trend(wh, "api:rtKernelLaunch", stat="count")
    assert [p.value for p in api.points] == [8 * 3] * 10
    assert trend(wh, "run:aicore_time").unit == "us"


def test_selection_and_missing_entries(ten):
    wh, nights = ten
    t = trend(
        wh,
        f"op:{OP}",
        sel=RunSelection(since=datetime(2026, 1, 3, tzinfo=UTC), until=datetime(2026, 1, 6, tzinfo=UTC)),
    )
    assert [p.run_id for p in t.points] == [n.run_id for n in nights[2:5]]
    assert [p.run_id for p in trend(wh, f"op:{OP}", sel=RunSelection(last=2)).points] == [
        n.run_id for n in nights[-2:]
    ]
    with pytest.raises(UsageError, match="no selected run has op"):
        trend(wh, "op:no_such_op")
    with pytest.raises(UsageError, match="KIND:NAME"):
        trend(wh, "conv2d_0")
    with pytest.raises(UsageError, match="no run metric"):
        trend(wh, "run:nope")


def _markers(root, i: int) -> list[tuple[float, float, str]]:
    """(x, y, tooltip) of each point marker of workload line ``i`` of a plot's SVG."""
    ns = "{http://www.w3.org/2000/svg}"
    group = next(g for g in root.iter(f"{ns}g") if g.get("id") == f"workload-{i}")
    return [(float(u.get("x")), float(u.get("y")), u.find(f"{ns}title").text) for u in group.iter(f"{ns}use")]


def test_svg_plot_has_one_point_per_value_on_a_time_axis(ten):
    wh, nights = ten
    t = trend(wh, f"op:{OP}")
    t.points[4].value = None  # a run without the op breaks the line
    text = svg(t)
    root = ET.fromstring(text)
    points = _markers(root, 0)
    assert len(points) == 9
    assert nights[0].run_id in points[0][2]
    # higher values are drawn higher (smaller y)
    ys = [y for _, y, _ in points]
    values = [p.value for p in t.points if p.value is not None]
    assert sorted(range(9), key=lambda i: ys[i]) == sorted(range(9), key=lambda i: -values[i])
    # x is time: the nights are one day apart, night 4 (no value) leaves a two-day step
    xs = [x for x, _, _ in points]
    steps = [b - a for a, b in zip(xs, xs[1:])]
    day = steps[0]
    assert steps == pytest.approx([day, day, day, 2 * day, day, day, day, day], rel=1e-3)
    # axis titles with units, as text
    assert "collection start (UTC)" in text and f"mean op:{OP} (ns)" in text


def test_svg_plot_one_line_per_workload_with_a_legend_and_time_spacing():
    from pipeline.analysis.trend import Point, Trend

    day = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    at = lambda d: datetime.fromtimestamp(day + d * 86400, UTC)  # noqa: E731
    t = Trend(
        "op:x",
        "mean",
        "ns",
        "",
        [
            Point("a0", at(0), "w/one", 10.0),
            Point("b0", at(1), "w/two", 30.0),
            Point("a1", at(2), "w/one", 12.0),
            Point("a2", at(62), "w/one", 11.0),
            Point("b1", at(63), "w/two", 31.0),
            Point("c", None, "w/one", 5.0),
        ],
    )
    text = svg(t)
    root = ET.fromstring(text)
    one, two = _markers(root, 0), _markers(root, 1)
    assert [m[2].split()[0] for m in one] == ["a0", "a1", "a2"] and [m[2].split()[0] for m in two] == [
        "b0",
        "b1",
    ]
    # two months take the width of two months, not of one night
    assert (one[2][0] - one[1][0]) == pytest.approx(30 * (one[1][0] - one[0][0]), rel=1e-3)
    assert "w/one" in text and "w/two" in text and "workload" in text  # the legend
    assert "1 run(s) without a collection time not drawn" in text


def test_cli_table_json_csv_and_plot(ten, tmp_path):
    wh, nights = ten
    base = ["trend", f"op:{OP}", "--warehouse", str(wh.path)]
    r = runner.invoke(app, base)
    assert r.exit_code == 0, r.output
    assert all(n.run_id in r.stdout for n in nights)
    r = runner.invoke(app, base + ["--json"])
    got = json.loads(r.stdout)
    assert [p["value"] for p in got["points"]] == pytest.approx(
        [op_mean(n.truth, OP) for n in nights], rel=1e-12
    )
    r = runner.invoke(app, base + ["--format", "csv", "--last", "3"])
    lines = r.stdout.splitlines()
    assert lines[0] == "run_id,collected_at,workload,value,count" and len(lines) == 4
    plot = tmp_path / "t.svg"
    r = runner.invoke(app, base + ["--plot", str(plot)])
    assert r.exit_code == 0 and ET.parse(plot).getroot().tag.endswith("svg")
    r = runner.invoke(app, base + ["--plot", str(tmp_path / "t.gif")])
    assert r.exit_code == 2 and ".svg or .png" in r.stderr


def test_png_plot(ten, tmp_path):
    wh, _ = ten
    out = tmp_path / "t.png"
    r = runner.invoke(app, ["trend", f"op:{OP}", "--plot", str(out), "--warehouse", str(wh.path)])
    assert r.exit_code == 0 and out.read_bytes().startswith(b"\x89PNG")


def test_a_warning_when_workloads_mix(ten):
    from pipeline.analysis.trend import Point, Trend, _mixed

    wh, _ = ten
    assert trend(wh, f"op:{OP}").warnings == []  # ten runs of one workload
    t = Trend(
        "op:x",
        "mean",
        "ns",
        "",
        [Point("a", None, "w1", 1.0), Point("b", None, "w2", 2.0), Point("c", None, "w3", None)],
    )
    assert len(_mixed(t).warnings) == 1 and "w1, w2" in t.warnings[0]
