"""Start/end logs are paired a chunk at a time: the result equals pairing the whole stream at once."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.ingest import ingest
from pipeline.readers.prof import device as D
from pipeline.readers.prof.pairing import Logs, Pairer, batch_from_wraps
from pipeline.synth.prof import ProfConfig, generate
from pipeline.warehouse import Warehouse


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


@pytest.mark.parametrize("chip", ["ascend910a", "ascend910b"])
def test_chunked_pairing_equals_whole_stream(tmp_path, monkeypatch, chip):
    dump = tmp_path / "dump"
    truth = generate(dump, ProfConfig(chip=chip, inferences=6, tasks=40, flip_after=3, drop_start=3, extra_start=3))
    root = dump / truth.root if truth.root else dump

    def task_runs(chunk_logs: int, name: str) -> tuple[list[dict], list[tuple]]:
        monkeypatch.setattr(D, "CHUNK_LOGS", chunk_logs)
        wh = Warehouse(tmp_path / name)
        res = ingest(root, wh)
        paths = {t: next((tmp_path / name / "raw" / t).rglob("*.parquet")) for t in ("task_runs", "ingest_issues")}
        rows = sorted(pq.read_table(paths["task_runs"]).to_pylist(), key=lambda r: (r["device_id"], r["seq"]))
        issues = sorted((i["source_file"], i["kind"], i["count"]) for i in pq.read_table(paths["ingest_issues"]).to_pylist())
        assert res.rows_by_table["task_runs"] > 0
        return rows, issues

    whole = task_runs(10**9, "whole")
    for size in (7, 50):
        assert task_runs(size, f"chunks{size}") == whole


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), min_size=1, max_size=60),
       st.sets(st.integers(1, 59), max_size=4))
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
