"""Start/end logs are paired a chunk at a time: the result equals pairing the whole stream at once."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.jobs.ingest import ingest
from pipeline.readers.prof import device as prof_device
from pipeline.readers.prof.pairing import Logs, Pairer, batch_from_wraps
from pipeline.synth.prof import ProfConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.pairing import pair_whole


def _logs(rows, first_seq=0):
    """rows: (stream, task, is_end, syscnt) in file order."""
    a = np.array(rows, dtype=np.int64).reshape(-1, 4)
    seq = np.arange(first_seq, first_seq + len(a))
    return Logs(a[:, 0], a[:, 1], a[:, 2].astype(bool), a[:, 3], seq, seq * 64, np.zeros(len(a), np.int32))


def test_a_start_open_at_the_end_of_a_chunk_is_closed_by_the_next():
    # stream 1 task 5: S(10) | E(12) S(14) | E(15)   stream 2 task 7: S(1) S(2) | (never ended)
    p = Pairer(by_time=False)
    r1 = p.feed(_logs([(1, 5, 0, 10), (2, 7, 0, 1), (2, 7, 0, 2)]))
    r2 = p.feed(_logs([(1, 5, 1, 12), (1, 5, 0, 14)], first_seq=3))
    r3 = p.feed(_logs([(1, 5, 1, 15)], first_seq=5))
    left = p.finish()
    got = [(int(a), int(b)) for r in (r1, r2, r3) for a, b in zip(r.start_syscnt, r.end_syscnt)]
    assert got == [(10, 12), (14, 15)]
    # start 1 was replaced by start 2 within the first chunk (an orphan there); start 2 never ended
    assert r1.orphan_starts.tolist() == [1 * 64]
    assert left.tolist() == [2 * 64]


@pytest.mark.slow
@pytest.mark.parametrize("chip", ["ascend910a", "ascend910b"])
def test_chunked_pairing_equals_whole_stream(tmp_path, monkeypatch, chip):
    dump = tmp_path / "dump"
    truth = generate(
        dump, ProfConfig(chip=chip, inferences=6, tasks=40, flip_after=3, drop_start=3, extra_start=3)
    )
    root = dump / truth.root if truth.root else dump

    def task_runs(chunk_logs: int, name: str) -> tuple[list[dict], list[tuple]]:
        monkeypatch.setattr(prof_device, "CHUNK_LOGS", chunk_logs)
        wh = Warehouse(tmp_path / name)
        with wh.writer():  # the parts stay uncommitted; the test reads them from raw/
            res = ingest(root, wh)
        paths = {
            t: next((tmp_path / name / "raw" / t).rglob("*.parquet")) for t in ("task_runs", "ingest_issues")
        }
        rows = sorted(pq.read_table(paths["task_runs"]).to_pylist(), key=lambda r: (r["device_id"], r["seq"]))
        issues = sorted(
            (i["source_file"], i["kind"], i["count"])
            for i in pq.read_table(paths["ingest_issues"]).to_pylist()
        )
        assert res.rows_by_table["task_runs"] > 0
        return rows, issues

    whole = task_runs(10**9, "whole")
    for size in (7, 50):
        assert task_runs(size, f"chunks{size}") == whole


@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=60),
    st.sets(st.integers(1, 59), max_size=4),
)
def test_wrap_around_batches_continue_across_chunks(tasks, cuts):
    """Any cut of a time-ordered task sequence into chunks gives the batches of the whole sequence."""
    stream = np.array([s for s, _ in tasks])
    task = np.array([t for _, t in tasks])
    ts = np.arange(len(tasks)) * 10
    whole = batch_from_wraps(stream, task, ts)
    bounds = [0, *sorted(c for c in cuts if c < len(tasks)), len(tasks)]
    carry: dict = {}
    parts = [batch_from_wraps(stream[a:b], task[a:b], ts[a:b], carry) for a, b in zip(bounds, bounds[1:])]
    assert np.concatenate(parts).tolist() == whole.tolist()


def test_wrap_around_at_a_chunk_boundary():
    # stream 1: tasks 5, 6 | 0 (wrapped), 1 -> batches 0, 0 | 1, 1
    carry: dict = {}
    a = batch_from_wraps(np.array([1, 1]), np.array([5, 6]), np.array([1, 2]), carry)
    b = batch_from_wraps(np.array([1, 1]), np.array([0, 1]), np.array([3, 4]), carry)
    assert (a.tolist(), b.tolist()) == ([0, 0], [1, 1])


def _by_rule(rows: list[tuple], by_time: bool) -> tuple[list[tuple], list[int]]:
    """The pairing rule, one log at a time: per (stream, task), in log order (by_time: time,
    then log order), a start waits for the next end; a second start leaves the first unpaired;
    an end with no waiting start has start -1. Executions by end time, then key, then end
    record; orphan starts as stream offsets. rows: (stream, task, is_end, syscnt, seq)."""
    keyed = defaultdict(list)
    for r in rows:
        keyed[r[:2]].append(r)
    runs, orphans = [], []
    for (stream, task), logs in keyed.items():
        if by_time:
            logs.sort(key=lambda r: (r[3], r[4]))
        waiting = None
        for r in logs:
            if not r[2]:
                if waiting is not None:
                    orphans.append(waiting[4] * 64)
                waiting = r
            else:
                runs.append((r[3], stream, task, r[4], -1 if waiting is None else waiting[3]))
                waiting = None
        if waiting is not None:
            orphans.append(waiting[4] * 64)
    return [(s, t, start, end, seq) for end, s, t, seq, start in sorted(runs)], sorted(orphans)


@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans(), st.integers(0, 30)), max_size=80),
    st.sampled_from([0, 2**31 - 4, 2**31, 2**40]),
    st.booleans(),
    st.lists(st.integers(0, 80), max_size=6),
    st.integers(1, 3),
)
def test_pairing_whole_and_in_chunks_follows_the_rule(rows, wide, by_time, cuts, pieces):
    """The whole stream at once and Pairer over any cut into chunks (each chunk in pieces) give the rule's executions;
    stream 3 becomes 3 + wide, so some runs have ids past the one-key sort."""
    rows = [(s + wide if s == 3 else s, t, e, c, i) for i, (s, t, e, c) in enumerate(rows)]
    want = _by_rule(rows, by_time)

    def got(runs_list, orphans):
        runs = [
            (s, t, a, b, q)
            for r in runs_list
            for s, t, a, b, q in zip(
                r.stream_id.tolist(),
                r.task_id.tolist(),
                r.start_syscnt.tolist(),
                r.end_syscnt.tolist(),
                r.seq.tolist(),
            )
        ]
        return runs, sorted(orphans)

    whole = pair_whole(_logs([r[:4] for r in rows]), by_time)
    assert got([whole], whole.orphan_starts.tolist()) == want
    if by_time:
        return  # in chunks, a key's logs must arrive in time order (Pairer's contract)
    bounds = [0, *sorted(c for c in set(cuts) if c < len(rows)), len(rows)]
    p = Pairer(by_time)
    outs = []
    for a, b in zip(bounds, bounds[1:]):
        chunk = rows[a:b]
        step = max(1, -(-len(chunk) // pieces))
        parts = [
            _logs([r[:4] for r in chunk[i : i + step]], first_seq=a + i) for i in range(0, len(chunk), step)
        ]
        if parts:
            outs.append(p.feed(*parts))
    left = p.finish().tolist()
    runs, orphans = got(outs, [o for r in outs for o in r.orphan_starts.tolist()] + left)
    assert sorted(runs, key=lambda r: (r[3], r[0], r[1], r[4])) == want[0] and orphans == want[1]
