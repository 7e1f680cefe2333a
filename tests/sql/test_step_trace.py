"""step_trace_summary and step_trace_reduces from hand-written step-trace records.

The records below go straight into the raw step_trace table; every expected value is worked
out by hand from them with the rule msprof's step-trace parser applies per (device, model),
in time order:
  MODEL_START (0) opens an iteration (ignored while one is open; after an ITER_END it restarts
  the open iteration there), MODEL_END (1) closes an iteration a MODEL_START opened (ignored
  after an ITER_END), ITER_END (4) closes the open iteration and opens the next; FP (2) / BP (3)
  are the last ones seen in the iteration; all-reduce tags (10000-19999) pair per stream, even
  opens, odd closes the range opened last (a later odd tag overwrites the end).
"""

from __future__ import annotations

import pytest

from pipeline.jobs.transforms import run_layer, run_table_layers
from pipeline.synth.prof import ProfConfig
from pipeline.synth.prof import generate as prof_generate
from tests.helpers.built import build_dump
from tests.helpers.empty_raw import empty_raw_tables

# (device, model, tag, stream, ns); seq is the position in this list
RECORDS = [
    # device 0, model 7
    (0, 7, 2, 1, 50),  # FP before any MODEL_START: in no iteration
    (0, 7, 0, 1, 100),  # iteration 1 opens
    (0, 7, 2, 1, 110),
    (0, 7, 2, 1, 120),  # the last FP of iteration 1
    (0, 7, 10000, 5, 130),  # range A opens on stream 5
    (0, 7, 10001, 6, 140),  # odd before any even on stream 6: closes nothing
    (0, 7, 10002, 6, 150),  # range B opens on stream 6
    (0, 7, 10001, 5, 160),  # A closes: 130 -> 160
    (0, 7, 10003, 6, 170),  # B closes at 170 ...
    (0, 7, 10003, 6, 175),  # ... and again at 175: the end is 175
    (0, 7, 3, 1, 180),  # BP
    (0, 7, 1, 1, 200),  # iteration 1 closes: [100, 200]
    (0, 7, 1, 1, 210),  # MODEL_END with nothing open: ignored
    (0, 7, 4, 1, 220),  # ITER_END with nothing open: ignored
    (0, 7, 2, 1, 230),  # FP between iterations: in none
    (0, 7, 0, 1, 300),  # iteration 2 opens
    (0, 7, 0, 1, 310),  # MODEL_START while open: ignored
    (0, 7, 2, 1, 320),
    (0, 7, 10004, 5, 330),  # a range that never closes
    (0, 7, 4, 1, 400),  # iteration 2 closes [300, 400]; iteration 3 opens at 400
    (0, 7, 1, 1, 410),  # MODEL_END after ITER_END: ignored
    (0, 7, 3, 1, 420),
    (0, 7, 4, 1, 500),  # iteration 3 closes [400, 500]; iteration 4 opens at 500
    (0, 7, 2, 1, 510),  # forgotten: the MODEL_START at 600 restarts iteration 4
    (0, 7, 0, 1, 600),  # iteration 4 restarts at 600
    (0, 7, 2, 1, 620),
    (0, 7, 3, 1, 650),
    (0, 7, 1, 1, 700),  # iteration 4 closes [600, 700]
    (0, 7, 0, 1, 800),  # iteration 5 opens and never closes
    (0, 7, 2, 1, 810),
    # device 0, model 9
    (0, 9, 0, 2, 250),
    (0, 9, 2, 2, 260),
    (0, 9, 3, 2, 280),
    (0, 9, 1, 2, 290),  # [250, 290]
    (0, 9, 0, 2, 550),
    (0, 9, 1, 2, 560),  # [550, 560], no FP or BP
    # device 1: one iteration, never closed
    (1, 7, 0, 1, 100),
    (1, 7, 2, 1, 150),
]

N = None
BREAKDOWN = (
    "computing_ns",
    "communication_ns",
    "communication_not_overlapped_ns",
    "overlapped_ns",
    "free_ns",
    "stage_ns",
    "bubble_ns",
    "preparing_ns",
)
# device, iteration_id, fp, bp, end, iteration, fp_to_bp, refresh, data_aug, model, iter_id, start, reduces
# (then the exported breakdown, NULL here, and the iteration from the previous end: FROM_PREVIOUS_END)
SUMMARY = [
    (0, 1, 120, 180, 200, 100, 60, 20, N, 7, 1, 100, 2),
    (0, 1, 260, 280, 290, 40, 20, 10, 60, 9, 2, 250, 0),  # 260 - 200 (model 7's end)
    (0, 2, 320, N, 400, 100, N, N, 30, 7, 3, 300, 1),  # 320 - 290 (model 9's end)
    (0, 3, N, 420, 500, 100, N, 80, N, 7, 4, 400, 0),
    (0, 2, N, N, 560, 10, N, N, N, 9, 5, 550, 0),
    (0, 4, 620, 650, 700, 100, 30, 50, 60, 7, 6, 600, 0),  # 620 - 560 (model 9's end)
]
# MindInsight's iteration: the end minus the previous end of the same (device, model), row by row
# of SUMMARY; a model's first iteration has none
FROM_PREVIOUS_END = [N, N, 400 - 200, 500 - 400, 560 - 290, 700 - 500]
# device, model, iteration_id, iter_id, reduce_index, stream, start, end, duration
REDUCES = [
    (0, 7, 1, 1, 1, 5, 130, 160, 30),
    (0, 7, 1, 1, 2, 6, 150, 175, 25),
    (0, 7, 2, 3, 1, 5, 330, N, N),
]


def _built(records):
    con = empty_raw_tables()
    con.executemany(
        "insert into step_trace (device_id, source_file, seq, model_id, index_id, tag_id, stream_id, task_id, "
        "timestamp_syscnt, ts_ns, raw_tag_id) values (?, 'ts_track.data.0.slice_0', ?, ?, 0, ?, ?, 0, ?, ?, ?)",
        [(d, seq, m, tag, stream, ns // 10, ns, tag) for seq, (d, m, tag, stream, ns) in enumerate(records)],
    )
    run_table_layers(con)
    run_layer(con, "marts")  # every mart, after the shared macros, as a build makes them
    return con


def test_iterations_fp_bp_and_bounds_worked_out_by_hand():
    con = _built(RECORDS)
    got = con.execute("select * from step_trace_summary").fetchall()
    # the exported step breakdown columns are an export's: NULL for iterations of step-trace records;
    # then the step number (the records' index id, 0 here) and the breakdown recomputed from the
    # executions (none here: no computing, free or stage time; no communication ops, so those
    # columns are NULL; no first task, so no preparing): tests/sql/test_step_breakdown.py
    recomputed = (0, N, N, N, 0, 0, N, N, N)
    assert got == [
        s + (N,) * 8 + (p, N, 0) + recomputed for s, p in zip(SUMMARY, FROM_PREVIOUS_END, strict=True)
    ]


def test_all_reduce_ranges_worked_out_by_hand():
    con = _built(RECORDS)
    assert con.execute("select * from step_trace_reduces").fetchall() == REDUCES


def test_open_iterations_and_unended_ranges_are_counted():
    con = _built(RECORDS)
    got = con.execute(
        "select device_id, kind, count from build_issues "
        "where kind in ('open_last_iteration', 'all_reduce_without_end') order by all"
    ).fetchall()
    assert got == [
        (0, "all_reduce_without_end", 1),
        (0, "open_last_iteration", 1),
        (1, "open_last_iteration", 1),
    ]


def test_topdown_iterations_are_the_same_iterations():
    """stg_iterations (top-down's iterations) holds exactly the rows of step_trace_summary."""
    con = _built(RECORDS)
    got = con.execute(
        "select device_id, model_id, iteration_id, iter_id, start_ns, end_ns from stg_iterations "
        "order by device_id, iter_id"
    ).fetchall()
    assert got == [(s[0], s[9], s[1], s[10], s[11], s[4]) for s in SUMMARY]


def test_records_at_the_same_time_keep_their_file_order():
    """An ITER_END and the MODEL_START of the next iteration at one time: seq decides."""
    con = _built(
        [(0, 1, 0, 0, 100), (0, 1, 2, 0, 100), (0, 1, 4, 0, 200), (0, 1, 0, 0, 200), (0, 1, 1, 0, 300)]
    )
    assert con.execute(
        "select iteration_id, iteration_start_ns, iteration_end_ns, fp_start_ns from step_trace_summary"
    ).fetchall() == [(1, 100, 200, 100), (2, 200, 300, None)]


# --- synthetic dumps with training records, every generation synth writes: expected rows from
# the step-trace records synth wrote (its truth), iteration by iteration


def _expected(iterations):
    """(summary rows, reduce rows) from (device, step, marks) of each iteration, by the rule."""
    summary, reduces = [], []
    by_device: dict = {}
    for dev, step, marks in iterations:
        by_device.setdefault(dev, []).append((step, marks))
    for dev in sorted(by_device):
        previous_end = None
        for n, (step, marks) in enumerate(sorted(by_device[dev], key=lambda x: x[0][1]), start=1):
            fp = max((ns for tag, _, ns in marks if tag == 2), default=None)
            bp = max((ns for tag, _, ns in marks if tag == 3), default=None)
            starts = {stream: ns for tag, stream, ns in marks if 10000 <= tag < 20000 and tag % 2 == 0}
            ends = {stream: ns for tag, stream, ns in marks if 10000 <= tag < 20000 and tag % 2 == 1}
            summary.append(
                {
                    "device_id": dev,
                    "iteration_id": n,
                    "fp_start_ns": fp,
                    "bp_end_ns": bp,
                    "iteration_end_ns": step[1],
                    "iteration_ns": step[1] - step[0],
                    "fp_to_bp_ns": bp - fp if fp and bp else None,
                    "iteration_refresh_ns": step[1] - bp if bp else None,
                    "data_aug_bound_ns": fp - previous_end if fp and previous_end else None,
                    "model_id": 1,
                    "iter_id": n,
                    "iteration_start_ns": step[0],
                    "reduce_count": len(starts),
                    # the step breakdown is an exported run's (docs/formats.md#export-totals)
                    **dict.fromkeys(BREAKDOWN),
                    # MindInsight's iteration: from the previous iteration's end (one model a device)
                    "iteration_from_previous_end_ns": step[1] - previous_end if previous_end else None,
                }
            )
            for i, (start, stream) in enumerate(sorted((v, k) for k, v in starts.items()), start=1):
                reduces.append(
                    {
                        "device_id": dev,
                        "model_id": 1,
                        "iteration_id": n,
                        "iter_id": n,
                        "reduce_index": i,
                        "stream_id": stream,
                        "reduce_start_ns": start,
                        "reduce_end_ns": ends[stream],
                        "reduce_ns": ends[stream] - start,
                    }
                )
            previous_end = step[1]
    return summary, reduces


def _check(rows, iterations):
    summary, reduces = _expected(iterations)
    assert len(summary) == 2 * 3  # two devices, three iterations each
    # the step number and the recomputed breakdown are tests/sql/test_step_breakdown.py's
    mine = [
        {k: v for k, v in r.items() if not k.endswith("_recomputed_ns") and k != "step_id"}
        for r in rows("step_trace_summary")
    ]
    assert mine == [{**r, "communication_not_overlapped_exclude_receive_ns": None} for r in summary]
    assert rows("step_trace_reduces") == reduces
    assert sum(r["fp_to_bp_ns"] is not None for r in summary) == len(summary) and len(reduces) == 2 * len(
        summary
    )


@pytest.mark.slow
def test_hiprof_training_dump(synth_run):
    run = synth_run(devices=2, inferences=3, training=True)
    assert run.outcome.status == "built", run.outcome.error

    def rows(table):
        return [{k: v for k, v in r.items() if k != "run_id"} for r in run.rows(table)]

    _check(rows, [(x.device_id, x.step, x.marks) for x in run.truth.inferences])


@pytest.mark.slow
@pytest.mark.parametrize("chip", ["ascend910a", "ascend910b"])
def test_prof_training_dump(tmp_path, chip):
    truth = prof_generate(tmp_path / "dump", ProfConfig(chip=chip, devices=2, inferences=3, training=True))
    _, rows = build_dump(tmp_path / "wh", tmp_path / "dump" / truth.root if truth.root else tmp_path / "dump")
    _check(rows, [(x.device_id, x.step, x.marks) for x in truth.iterations])


@pytest.mark.slow
def test_show_and_export_with_the_tools_headers(synth_run, tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    run = synth_run(devices=1, inferences=2, training=True)
    wh = str(run.wh.path)
    r = CliRunner().invoke(app, ["show", run.run_id, "step_trace_summary", "--warehouse", wh])
    assert r.exit_code == 0, r.output
    assert "Step trace (training iterations) - device 0" in r.stdout and "Data Aug Bound(ns)" in r.stdout
    out = tmp_path / "steps.csv"
    r = CliRunner().invoke(
        app,
        [
            "export",
            "step_trace_summary",
            "--run",
            run.run_id,
            "--format",
            "csv",
            "--out",
            str(out),
            "--warehouse",
            wh,
        ],
    )
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    assert lines[0] == (
        "Device_id,Iteration ID,FP Start(ns),BP End(ns),Iteration End(ns),Iteration Time(ns),"
        "FP to BP Time(ns),Iteration Refresh(ns),Data Aug Bound(ns),Model ID,Iter ID,"
        "Iteration Start(ns),Reduce Count,Computing(ns),Communication(ns),Communication(Not Overlapped)(ns),"
        "Overlapped(ns),Free(ns),Stage(ns),Bubble(ns),Preparing(ns),Iteration Time from Previous End(ns),"
        "Communication(Not Overlapped and Exclude Receive)(ns),Step,Computing Recomputed(ns),"
        "Communication Recomputed(ns),Communication(Not Overlapped) Recomputed(ns),Overlapped Recomputed(ns),"
        "Free Recomputed(ns),Stage Recomputed(ns),Bubble Recomputed(ns),"
        "Communication(Not Overlapped and Exclude Receive) Recomputed(ns),Preparing Recomputed(ns)"
    )
    first, second = (x for x in run.truth.inferences)
    fp2 = second.marks[0][2]
    assert lines[2].split(",")[8] == str(fp2 - first.step[1])  # Data Aug Bound: FP - the previous end
    r = CliRunner().invoke(
        app,
        [
            "export",
            "step_trace_reduces",
            "--run",
            run.run_id,
            "--format",
            "csv",
            "--out",
            "-",
            "--warehouse",
            wh,
        ],
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == (
        "Device_id,Model ID,Iteration ID,Iter ID,Reduce Index,Stream ID,"
        "Reduce Start(ns),Reduce End(ns),Reduce Duration(ns)"
    )
    assert len(r.stdout.splitlines()) == 1 + 2 * 2


def test_a_model_of_no_id_keeps_its_all_reduce_ranges():
    """An iteration whose records name no model (NULL, as an export may give): its all-reduce
    range, 120 -> 150 on stream 5, is the iteration's (NULL is a value of the key, as the
    marts' grain says), and step_trace_summary counts it."""
    con = _built([(2, N, 0, 1, 100), (2, N, 10000, 5, 120), (2, N, 10001, 5, 150), (2, N, 1, 1, 200)])
    assert con.execute("select * from step_trace_reduces").fetchall() == [(2, N, 1, 1, 1, 5, 120, 150, 30)]
    assert con.execute("select model_id, iteration_id, reduce_count from step_trace_summary").fetchall() == [
        (N, 1, 1)
    ]
