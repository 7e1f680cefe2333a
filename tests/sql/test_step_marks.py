"""Steps from STEP_START / STEP_END records (tags 60000 / 60001), written by hand.

The rule (docs/formats.md#rule-step-marks): per device, the records of tags 60000 and 60001
are grouped by their own index id; a group of exactly one START and one END is a step from the
START's time to the END's time; any other group is no step and build_issues counts it
(step_marks_unpaired, naming its index ids). Every expected value below is derived from the
records this file writes, not from the SQL.
"""

from __future__ import annotations

from pipeline.jobs.transforms import run_layer, run_table_layers
from tests.helpers.empty_raw import empty_raw_tables

START, END = 60000, 60001

# (device, model, index_id, tag, ns); seq is the position in this list
MARKS = [
    # device 0: steps 1, 2, 3 paired (written out of time order), 4 a lone START, 5 two STARTs and one END
    (0, 3, 1, START, 1_000),
    (0, 3, 2, START, 2_500),
    (0, 3, 1, END, 2_000),
    (0, 3, 3, START, 4_000),
    (0, 3, 2, END, 3_700),
    (0, 3, 4, START, 5_000),
    (0, 3, 5, START, 6_000),
    (0, 3, 5, START, 6_100),
    (0, 3, 5, END, 6_900),
    (0, 3, 3, END, 4_600),
    # device 1: one step, a lone END, and step 9 whose END (of another model) comes before its
    # START: a step of the START's model 3, from 12,000 to 11,800 ns, -200 ns as written
    (1, 3, 7, START, 10_000),
    (1, 3, 7, END, 10_450),
    (1, 3, 8, END, 11_000),
    (1, 4, 9, END, 11_800),
    (1, 3, 9, START, 12_000),
]


def _built(records):
    con = empty_raw_tables()
    con.executemany(
        "insert into step_trace (device_id, source_file, seq, model_id, index_id, tag_id, stream_id, task_id, "
        "timestamp_syscnt, ts_ns, raw_tag_id) values (?, 'ts_track.data.0.slice_0', ?, ?, ?, ?, 0, 0, ?, ?, ?)",
        [(d, seq, m, idx, tag, ns // 10, ns, tag) for seq, (d, m, idx, tag, ns) in enumerate(records)],
    )
    run_table_layers(con)
    run_layer(con, "marts")  # every mart, after the shared macros, as a build makes them
    return con


def _groups(records):
    """(device, index_id) -> the group's records, as the rule groups them."""
    groups: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for d, m, idx, tag, ns in records:
        groups.setdefault((d, idx), []).append((m, tag, ns))
    return groups


def _expected_steps(records):
    """(device, model, step_id, start, end, duration) of each paired group, by device then start."""
    steps = []
    for (d, idx), recs in _groups(records).items():
        starts = [r for r in recs if r[1] == START]
        ends = [r for r in recs if r[1] == END]
        if len(starts) == 1 and len(ends) == 1:
            steps.append((d, starts[0][0], idx, starts[0][2], ends[0][2], ends[0][2] - starts[0][2]))
    return sorted(steps, key=lambda s: (s[0], s[3]))


def _expected_unpaired(records):
    """device -> sorted index ids of the groups that are not one START and one END."""
    out: dict[int, list[int]] = {}
    for (d, idx), recs in _groups(records).items():
        tags = sorted(r[1] for r in recs)
        if tags != [START, END]:
            out.setdefault(d, []).append(idx)
    return {d: sorted(v) for d, v in out.items()}


def test_paired_groups_become_steps_of_step_trace_summary():
    con = _built(MARKS)
    got = con.execute(
        "select device_id, model_id, step_id, iteration_start_ns, iteration_end_ns, iteration_ns, iteration_id, "
        "fp_start_ns, bp_end_ns, reduce_count from step_trace_summary order by device_id, iteration_start_ns"
    ).fetchall()
    want = _expected_steps(MARKS)
    assert [g[:6] for g in got] == want
    # iteration_id: the step's 1-based rank by start within (device, model); no FP, BP or reduces
    ranks: dict[tuple[int, int], int] = {}
    want_ids = []
    for d, m, *_ in want:
        ranks[(d, m)] = ranks.get((d, m), 0) + 1
        want_ids.append(ranks[(d, m)])
    assert [g[6] for g in got] == want_ids
    assert all(g[7:] == (None, None, None) for g in got)
    # hand checks: device 0's step 2 runs from 2,500 to 3,700 ns; device 1's step 9 keeps its
    # START's model and its negative duration
    assert (0, 3, 2, 2_500, 3_700, 1_200) in want
    assert (1, 3, 9, 12_000, 11_800, -200) in want


def test_every_unpaired_group_is_counted_in_build_issues():
    con = _built(MARKS)
    got = con.execute(
        "select device_id, count, message from build_issues where kind = 'step_marks_unpaired' order by device_id"
    ).fetchall()
    want = _expected_unpaired(MARKS)
    assert want == {0: [4, 5], 1: [8]}  # the groups this file wrote as unpaired
    assert [(d, n) for d, n, _ in got] == [(d, len(ids)) for d, ids in sorted(want.items())]
    for d, _, message in got:
        assert f"(index ids: {', '.join(str(i) for i in want[d])})" in message
    # no group is lost: steps + unpaired groups = groups written
    steps = con.execute("select count(*) from step_trace_summary").fetchone()[0]
    assert steps + sum(n for _, n, _ in got) == len(_groups(MARKS))


def test_iterations_of_the_step_trace_take_precedence_over_step_marks():
    # device 0 also has a MODEL_START / MODEL_END iteration: its STEP marks make no row
    records = [(0, 3, 0, 0, 500), (0, 3, 0, 1, 900)] + MARKS
    con = _built(records)
    got = con.execute(
        "select device_id, iteration_start_ns, iteration_end_ns from step_trace_summary order by device_id, iter_id"
    ).fetchall()
    device1 = [(d, s, e) for d, _, _, s, e, _ in _expected_steps(MARKS) if d == 1]
    assert got == [(0, 500, 900)] + device1
    # the unpaired groups are counted all the same
    n = con.execute("select sum(count) from build_issues where kind = 'step_marks_unpaired'").fetchone()[0]
    assert n == sum(len(v) for v in _expected_unpaired(MARKS).values())


def test_synthetic_dump_with_step_marks(tmp_path):
    """A PROF_* dump whose step trace also has STEP marks (ProfConfig.step_marks): the groups the
    truth says are not pairs are counted, and the MODEL_START / MODEL_END iterations keep precedence."""
    from pipeline.synth.prof import ProfConfig
    from pipeline.synth.prof import generate as prof_generate
    from tests.helpers.built import build_dump

    dump = tmp_path / "dump"
    truth = prof_generate(dump, ProfConfig(chip="ascend910b", devices=1, inferences=2, step_marks=True))
    _, rows = build_dump(tmp_path / "wh", dump / truth.root if truth.root else dump)
    written = [(d, 0, idx, tag, ns) for d, idx, tag, ns in truth.step_marks]
    unpaired = _expected_unpaired(written)
    assert unpaired  # the generator writes one lone STEP_START per device
    got = sorted(
        (r["device_id"], r["count"]) for r in rows("build_issues") if r["kind"] == "step_marks_unpaired"
    )
    assert got == [(d, len(ids)) for d, ids in sorted(unpaired.items())]
    summary = rows("step_trace_summary")
    assert sorted(
        (r["device_id"], r["iteration_start_ns"], r["iteration_end_ns"]) for r in summary
    ) == sorted((it.device_id, it.step[0], it.step[1]) for it in truth.iterations)
