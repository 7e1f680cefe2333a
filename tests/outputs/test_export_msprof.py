"""export --all --like msprof: a run's tables as msprof's summary files (docs/formats.md#msprof-files),
read as a team's script reads msprof's files (glob by msprof's name, csv.DictReader by msprof's
header names). Expected values come from the events the generator wrote (its truth, and the
oracles that re-implement the rules from it) and the dumps' start_info files, never from profetl.
"""

from __future__ import annotations

import csv
import glob
import json
import math
import os
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.jobs.runner import ingest_dump
from pipeline.outputs import formats, msprof_files
from pipeline.outputs.msprof_files import export_msprof
from pipeline.synth import hiprof, prof
from pipeline.warehouse.store import Warehouse
from tests.helpers import oracle, oracle_prof
from tests.helpers.warehouse_checks import fail_on_call

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

STAMP = "20260101000000"  # both dumps start collecting at 2026-01-01T00:00:00Z (the generators' default)
KINDS = ("op_summary", "op_statistic", "api_statistic", "task_time")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A hiprof-era dump (generation 1, Ascend310) and a PROF_* dump (generation 3, Ascend910B),
    two devices each, in one warehouse."""
    root = tmp_path_factory.mktemp("msprof")
    wh = Warehouse(root / "wh")
    made = {}
    for name, write in (
        ("hiprof", lambda d: hiprof.generate(d, hiprof.HiprofConfig(devices=2, seed=3))),
        ("prof", lambda d: prof.generate(d, prof.ProfConfig(chip="ascend910b", devices=2, seed=4))),
    ):
        dump = root / name
        truth = write(dump)
        with wh.writer():
            o = ingest_dump(wh, dump / truth.root if name == "prof" and truth.root else dump)
        assert o.status == "built", o.error
        made[name] = (o.run_id, truth, dump)
    return wh, made


def script_reads(folder: Path, kind: str) -> dict[str, list[dict]]:
    """What a script written for msprof reads: every ``<kind>_*.csv``, by file name, as dicts."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, f"{kind}_*.csv"))):
        with open(path, newline="", encoding="utf-8") as f:
            out[os.path.basename(path)] = list(csv.DictReader(f))
    return out


def wall_offsets(dump: Path, devices) -> dict[int, int]:
    """ns to add to a run-clock time for the Unix epoch, from each device's start_info
    (collectionTimeBegin us * 1000 - clockMonotonicRaw ns, docs/formats.md#clock-wall)."""
    out = {}
    for d in devices:
        (path,) = dump.rglob(f"start_info.{d}")
        info = json.loads(path.read_text())
        out[d] = int(info["collectionTimeBegin"]) * 1000 - int(info["clockMonotonicRaw"])
    return out


def us(ns: int) -> str:
    """ns as msprof's microseconds: 3 decimals, by hand."""
    return f"{Decimal(ns) / 1000:.3f}"


def us_avg(total: int, n: int) -> str:
    return str((Decimal(total) / n / 1000).quantize(Decimal("0.001"), ROUND_HALF_UP))


def close(cell: str, value: float, tol: float = 0.0006) -> bool:
    return abs(float(cell) - value) <= tol


def test_hiprof_run_reads_as_msprof_files(runs, tmp_path):
    wh, made = runs
    run_id, truth, dump = made["hiprof"]
    done = export_msprof(wh, run_id, tmp_path)
    devices = [d.device_id for d in truth.devices]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"{k}_{d}_1_{STAMP}.csv" for k in KINDS for d in devices)
    assert sorted(p.name for p, *_ in done.files) == names

    wall = wall_offsets(dump, devices)
    complete = [i for i in truth.instances if i.complete_ns is not None]
    op_of = {o.op_name: o for o in truth.ops}

    # op_summary: one row per complete task instance, times in us on the wall clock
    rows = [r for f in script_reads(tmp_path, "op_summary").values() for r in f]
    got = Counter(
        (
            r["Device_id"],
            r["Stream ID"],
            r["Task ID"],
            r["Op Name"],
            r["Task Start Time(us)"],
            r["Task Duration(us)"],
        )
        for r in rows
    )
    want = Counter(
        (
            str(i.device_id),
            str(i.stream_id),
            str(i.task_id),
            i.op_name or "N/A",
            us(i.running_ns + wall[i.device_id]) + "\t",
            us(i.complete_ns - i.running_ns),
        )
        for i in complete
    )
    assert got == want
    assert {r["HF32 Eligible"] for r in rows} == {"N/A"}  # a column profetl does not have
    for d in devices:  # in start order, the first row of a device waits 0
        mine = [r for r in rows if r["Device_id"] == str(d)]
        starts = [Decimal(r["Task Start Time(us)"]) for r in mine]
        assert starts == sorted(starts) and mine[0]["Task Wait Time(us)"] == "0.000"

    # op_statistic: per (device, op type, core type), sorted by total time
    groups = defaultdict(list)
    for i in complete:
        if i.op_name:
            o = op_of[i.op_name]
            groups[(i.device_id, o.op_type, o.task_type)].append(i.complete_ns - i.running_ns)
    for name, rows in script_reads(tmp_path, "op_statistic").items():
        dev = int(name.split("_")[2])
        mine = {k: v for k, v in groups.items() if k[0] == dev}
        total = sum(sum(v) for v in mine.values())
        assert len(rows) == len(mine)
        assert [Decimal(r["Total Time(us)"]) for r in rows] == sorted(
            (Decimal(r["Total Time(us)"]) for r in rows), reverse=True
        )
        for r in rows:
            d = mine[(int(r["Device_id"]), r["OP Type"], r["Core Type"])]
            assert (
                r["Count"],
                r["Total Time(us)"],
                r["Min Time(us)"],
                r["Max Time(us)"],
                r["Avg Time(us)"],
            ) == (str(len(d)), us(sum(d)), us(min(d)), us(max(d)), us_avg(sum(d), len(d)))
            assert close(r["Ratio(%)"], 100 * sum(d) / total)

    _check_api_statistic(
        tmp_path, [(c.device_id, c.level, c.name, c.end_ns - c.start_ns) for c in truth.api_calls]
    )

    # task_time: on Ascend310 msprof's task_time file is the Task Scheduler
    want = {
        (
            r["device_id"],
            r["task_type"],
            r["api_name"] or "N/A",
            r["task_id"],
            r["op_name"] or "N/A",
            r["stream_id"],
        ): r
        for r in oracle.task_scheduler(truth)
    }
    files = script_reads(tmp_path, "task_time")
    assert len(files) == len(devices)
    seen = 0
    for rows in files.values():
        assert list(rows[0])[:4] == ["Device_id", "Time(%)", "Time(us)", "Count"]
        for r in rows:
            w = want[
                (
                    int(r["Device_id"]),
                    r["Type"],
                    r["API"],
                    int(r["Task ID"]),
                    r["Op Name"],
                    int(r["Stream ID"]),
                )
            ]
            assert (
                r["Time(us)"],
                r["Count"],
                r["Running(us)"],
                r["Waiting(us)"],
                r["Pending(us)"],
                r["Min(us)"],
                r["Max(us)"],
            ) == (
                us(w["time_ns"]),
                str(w["task_count"]),
                us(w["running_ns"]),
                us(w["waiting_ns"]),
                us(w["pending_ns"]),
                us(w["min_ns"]),
                us(w["max_ns"]),
            )
            assert close(r["Time(%)"], w["time_pct"]) and close(r["Avg(us)"], w["avg_ns"] / 1000)
            seen += 1
        pcts = [float(r["Time(%)"]) for r in rows]
        assert pcts == sorted(pcts, reverse=True)
    assert seen == len(want)


def _check_api_statistic(folder: Path, calls: list[tuple[int, str, str, int]]) -> None:
    """api_statistic against (device, level, name, duration ns) of every call the generator wrote."""
    groups = defaultdict(list)
    for dev, level, name, dur in calls:
        groups[(dev, level, name)].append(dur)
    seen = 0
    for name, rows in script_reads(folder, "api_statistic").items():
        assert [(r["API Name"], r["Level"]) for r in rows] == sorted(
            (r["API Name"], r["Level"]) for r in rows
        )
        for r in rows:
            d = groups[(int(r["Device_id"]), r["Level"], r["API Name"])]
            assert name.startswith(f"api_statistic_{r['Device_id']}_1_")
            assert (r["Time(us)"], r["Count"], r["Avg(us)"], r["Min(us)"], r["Max(us)"]) == (
                us(sum(d)),
                str(len(d)),
                us_avg(sum(d), len(d)),
                us(min(d)),
                us(max(d)),
            )
            mean = sum(d) / len(d) / 1000
            assert close(r["Variance"], sum((x / 1000 - mean) ** 2 for x in d) / len(d))
            seen += 1
    assert seen == len(groups)


def test_prof_run_reads_as_msprof_files(runs, tmp_path):
    wh, made = runs
    run_id, truth, dump = made["prof"]
    export_msprof(wh, run_id, tmp_path)
    devices = [d.device_id for d in truth.devices]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{k}_{d}_1_{STAMP}.csv" for k in KINDS for d in devices
    )
    wall = wall_offsets(dump, devices)
    ops = oracle_prof.op_summary_ops(truth)

    rows = [r for f in script_reads(tmp_path, "op_summary").values() for r in f]
    got = Counter(
        (
            r["Device_id"],
            r["Stream ID"],
            r["Task ID"],
            r["Op Name"],
            r["OP Type"],
            r["Model ID"],
            r["Block Num"],
            r["Task Start Time(us)"],
            r["Task Duration(us)"],
        )
        for r in rows
    )
    want = Counter(
        (
            str(o["device_id"]),
            str(o["stream_id"]),
            str(o["task_id"]),
            o["op_name"],
            o["op_type"],
            str(o["model_id"]),
            str(o["block_dim"]),
            us(o["start_ns"] + wall[o["device_id"]]) + "\t",
            us(o["dur_ns"]),
        )
        for o in ops
    )
    assert got == want
    # raw runs have no PMU values in op_summary (they are in ai_core_metrics): written as msprof's missing value
    assert {
        r[k] for r in rows for k in ("HF32 Eligible", "aicore_time(us)", "mac_ratio", "cube_utilization(%)")
    } == {"N/A"}

    # task_time on a STARS chip: one row per kernel execution, start and stop on the wall clock
    rows = [r for f in script_reads(tmp_path, "task_time").values() for r in f]
    got = Counter(
        (
            r["Device_id"],
            r["kernel_name"],
            r["stream_id"],
            r["task_id"],
            r["task_time(us)"],
            r["task_start(us)"],
            r["task_stop(us)"],
        )
        for r in rows
    )
    want = Counter(
        (
            str(o["device_id"]),
            o["op_name"],
            str(o["stream_id"]),
            str(o["task_id"]),
            us(o["dur_ns"]),
            us(o["start_ns"] + wall[o["device_id"]]) + "\t",
            us(o["start_ns"] + o["dur_ns"] + wall[o["device_id"]]) + "\t",
        )
        for o in ops
    )
    assert got == want

    want = {(r["device_id"], r["op_type"], r["core_type"]): r for r in oracle_prof.op_statistic(truth)}
    rows = [r for f in script_reads(tmp_path, "op_statistic").values() for r in f]
    assert len(rows) == len(want)
    for r in rows:
        w = want[(int(r["Device_id"]), r["OP Type"], r["Core Type"])]
        assert (r["Count"], r["Total Time(us)"], r["Min Time(us)"], r["Max Time(us)"], r["Avg Time(us)"]) == (
            str(w["count"]),
            us(w["total_ns"]),
            us(w["min_ns"]),
            us(w["max_ns"]),
            us_avg(w["total_ns"], w["count"]),
        )
        assert close(r["Ratio(%)"], w["ratio_pct"])

    _check_api_statistic(
        tmp_path, [(c.device_id, c.level, c.name, c.end_ns - c.start_ns) for c in truth.api_calls]
    )


def test_files_past_a_million_rows_are_sliced_as_msprof_slices_them(runs, tmp_path, monkeypatch):
    wh, made = runs
    run_id, truth, _ = made["prof"]
    whole = tmp_path / "whole"
    whole.mkdir()
    export_msprof(wh, run_id, whole, devices=[0])
    monkeypatch.setattr(msprof_files, "SLICE_ROWS", 5)
    sliced = tmp_path / "sliced"
    sliced.mkdir()
    export_msprof(wh, run_id, sliced, devices=[0])
    with open(whole / f"op_summary_0_1_{STAMP}.csv", newline="") as f:
        rows = list(csv.reader(f))
    n = math.ceil((len(rows) - 1) / 5)
    assert n > 2
    parts = [sliced / f"op_summary_0_1_slice_{k}_{STAMP}.csv" for k in range(n)]
    assert sorted(p.name for p in sliced.glob("op_summary_*")) == sorted(p.name for p in parts)
    got = []
    for k, p in enumerate(parts):
        with open(p, newline="") as f:
            part = list(csv.reader(f))
        assert part[0] == rows[0] and len(part) - 1 == (5 if k < n - 1 else (len(rows) - 1) - 5 * (n - 1))
        got += part[1:]
    assert got == rows[1:]


def test_an_export_that_fails_leaves_no_file(runs, tmp_path, monkeypatch):
    wh, made = runs
    run_id, _, _ = made["prof"]
    fail_on_call(monkeypatch, formats, "text_csv_records")
    with pytest.raises(OSError):
        export_msprof(wh, run_id, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cli_export_all_like_msprof(runs, tmp_path):
    wh, made = runs
    run_id, truth, _ = made["hiprof"]
    r = CliRunner().invoke(
        app,
        [
            "export",
            "--all",
            "--like",
            "msprof",
            "--run",
            run_id,
            "--device",
            "1",
            "--out",
            str(tmp_path),
            "-w",
            str(wh.path),
        ],
    )
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{k}_1_1_{STAMP}.csv" for k in KINDS)
    assert f"run {run_id}" in r.stderr
    for args, message in (
        (
            ["--all", "--like", "msprof", "--out", str(tmp_path)],
            "one run",
        ),  # both runs start at the same time
        (
            ["--all", "--like", "msprof", "--run", run_id, "--out", str(tmp_path / "missing")],
            "does not exist",
        ),
        (["--all", "--like", "msprof", "--run", run_id], "folder"),
        (["--all", "--run", run_id, "--out", str(tmp_path)], "--like"),
        (["op_summary", "--all", "--like", "msprof", "--run", run_id, "--out", str(tmp_path)], "TABLE"),
    ):
        if "one run" in message:
            args = args + ["--since", "2025-12-31"]
        r = CliRunner().invoke(app, ["export", *args, "-w", str(wh.path)])
        assert r.exit_code == 2 and message in r.stderr, (args, r.output)


def test_file_names_as_msprof_names_them():
    """By hand: device, iteration 1, an optional slice, the time; the host's files name no device."""
    assert msprof_files.file_name("op_summary", 3, STAMP) == f"op_summary_3_1_{STAMP}.csv"
    assert msprof_files.file_name("op_summary", 0, STAMP, 2) == f"op_summary_0_1_slice_2_{STAMP}.csv"
    assert msprof_files.file_name("api_statistic", 64, STAMP) == f"api_statistic_{STAMP}.csv"
    assert (
        msprof_files.stamp_of({"collection_start_us": 1_767_225_600_000_000 + 3_723_000_000})
        == "20260101010203"
    )
    # aicpu last: a run without AI CPU records has no rows of it, so no file (KINDS are those written)
    assert [f.kind for f in msprof_files.files_for("Ascend310")] == [*KINDS, "aicpu"]
    assert msprof_files.files_for("Ascend310")[-2].table == "task_scheduler"
    assert msprof_files.files_for("Ascend910B")[-2].table == "op_summary"


def test_an_exported_run_keeps_its_wall_clock_times(tmp_path):
    """A run read from a hand-written trace_view.json: its times are on the wall clock already
    and go out as they came in (the trace's ts and ts + dur, in us)."""
    from pipeline.jobs.runner import run_roots
    from tests.readers.test_exported_timeline import HAND_TRACE

    dump = tmp_path / "x_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    dump.mkdir(parents=True)
    (dump / "trace_view.json").write_text(json.dumps(HAND_TRACE[:12]))
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        (o,) = run_roots(wh, [tmp_path / "x_ascend_pt"])
    assert o.status == "built"
    out = tmp_path / "out"
    out.mkdir()
    export_msprof(wh, o.run_id, out)
    (rows,) = script_reads(out, "task_time").values()
    assert sorted(
        (r["kernel_name"], r["task_id"], r["task_time(us)"], r["task_start(us)"], r["task_stop(us)"])
        for r in rows
    ) == [
        ("MixOp", "24", "3.000", "1780295077844870.500\t", "1780295077844873.500\t"),
        (
            "aclnnAddmm_MatMulCommon_MatMulV2",
            "23",
            "6.700",
            "1780295077844859.030\t",
            "1780295077844865.730\t",
        ),
    ]


def test_ai_cpu_records_read_as_msprofs_aicpu_file_and_back(tmp_path):
    """A 910A dump with binary AI CPU records: its aicpu files hold one row per record written
    (truth.aicpu), times by hand; read back as an export, the rows join the same operators."""
    dump = tmp_path / "dump"
    truth = prof.generate(dump, prof.ProfConfig(chip="ascend910a", devices=2, aicpu="binary", seed=4))
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, dump / truth.root)
    out = tmp_path / "out"
    out.mkdir()
    export_msprof(wh, o.run_id, out)
    devices = [d.device_id for d in truth.devices]
    wall = wall_offsets(dump, devices)
    files = script_reads(out, "aicpu")
    assert sorted(files) == [f"aicpu_{d}_1_{STAMP}.csv" for d in devices]
    got = Counter(
        tuple(r[k] for k in ("Device_id", "Timestamp(us)", "Task_time(us)", "Compute_time(us)", "Memcpy_time(us)",
                             "Dispatch_time(us)", "Total_time(us)", "Stream ID", "Task ID"))
        for rows in files.values() for r in rows
    )  # fmt: skip
    want = Counter(
        (
            str(r.device_id),
            us(r.before_ns + wall[r.device_id]) + "\t",
            us(r.after_ns - r.before_ns),
            us(1000 * r.compute_us),
            us(1000 * r.memcpy_us),
            us(1000 * r.dispatch_us),
            us(r.after_ns - r.submit_ns),  # msprof's total: after-run - submit, from the ticks
            str(r.stream_id),
            str(r.task_id),
        )
        for r in truth.aicpu
    )
    assert got == want
    nodes = {r["Node"] for rows in files.values() for r in rows}
    assert "N/A" in nodes and len(nodes) > 1  # the record after the last execution joins none

    back = Warehouse(tmp_path / "back")
    with back.writer():
        b = ingest_dump(back, out)
    assert b.status == "built", b.error

    def ops(w, run):
        from pipeline.outputs.export import fetch

        _, t = fetch(w, "aicpu_ops", [run])
        return sorted(
            (r["device_id"], r["stream_id"], r["task_id"], r["op_name"], r["task_ns"]) for r in t.to_pylist()
        )

    assert ops(back, b.run_id) == ops(wh, o.run_id)
