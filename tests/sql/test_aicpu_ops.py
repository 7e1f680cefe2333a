"""aicpu_ops and build_issues' aicpu_without_op on synthetic generation-2 dumps holding AI CPU
task records (ProfConfig.aicpu), against what the generator wrote (truth.aicpu,
truth.launches): the operator each record belongs to is worked out here from the executions
the generator made, by the rule of docs/formats.md#rule-aicpu, not from the SQL."""

from __future__ import annotations

import pytest

from pipeline.synth.prof import ProfConfig, generate
from tests.helpers.built import build_dump

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


AMBIGUOUS: dict[int, dict[int, int]] = {}  # id(truth) -> device -> records held by several executions


def _expected(truth) -> dict[tuple[int, int], dict]:
    """(device, seq) -> the row aicpu_ops should hold for each record the generator wrote."""
    out = {}
    seqs: dict[int, int] = {}
    ambiguous = AMBIGUOUS.setdefault(id(truth), {})
    for r in truth.aicpu:
        seq = seqs.get(r.device_id, 0)
        seqs[r.device_id] = seq + 1
        # AI CPU executions with both logs written, of the record's device (and its stream and
        # task, when it names them), whose span holds the record's run end
        held = [
            x
            for x in truth.launches
            if x.device_id == r.device_id
            and x.task_type_name == "AI_CPU"
            and x.start_ns is not None
            and x.start_ns <= r.after_ns <= x.end_ns
            and (r.stream_id is None or (x.stream_id, x.task_id) == (r.stream_id, r.task_id))
        ]
        one = held[0] if len(held) == 1 else None
        ambiguous[r.device_id] = ambiguous.get(r.device_id, 0) + (len(held) > 1 and r.node_name is None)
        ambiguous[-1] = ambiguous.get(-1, 0) + (len(held) > 1)  # all records held by several
        out[(r.device_id, seq)] = {
            "stream_id": r.stream_id if r.stream_id is not None else (one.stream_id if one else None),
            "task_id": r.task_id if r.task_id is not None else (one.task_id if one else None),
            "op_name": one.op_name if one else r.node_name,
            "op_source": "execution" if one else ("record" if r.node_name else None),
            "start_ns": r.before_ns,
            "end_ns": r.after_ns,
            "task_ns": r.after_ns - r.before_ns,
            "compute_ns": None if r.compute_us is None else 1000 * r.compute_us,
            "memcpy_ns": None if r.memcpy_us is None else 1000 * r.memcpy_us,
            "dispatch_ns": 1000 * r.dispatch_us,
            "total_ns": 1000 * r.total_us,
            "dispatch_recomputed_ns": r.before_ns - r.submit_ns,
            "total_recomputed_ns": r.after_ns - r.submit_ns,
        }
    return out


@pytest.mark.parametrize("layout", ["text", "binary"])
def test_aicpu_ops_against_the_generator(tmp_path, layout):
    # ten ops per inference: two AI CPU ops on two streams, whose executions overlap at times
    cfg = ProfConfig(chip="ascend910a", aicpu=layout, drop_start=2, seed=3, tasks=10)
    truth = generate(tmp_path / "dump", cfg)
    _, rows = build_dump(tmp_path / "wh", tmp_path / "dump" / truth.root)
    want = _expected(truth)
    got = {(r["device_id"], r["seq"]): r for r in rows("aicpu_ops")}
    assert set(got) == set(want)
    for key, w in want.items():
        assert {k: got[key][k] for k in w} == w, key
        assert got[key]["record_format"] == layout
    # every device has one record after its last execution: no execution holds it
    unnamed: dict[int, int] = {}
    for (dev, _), w in want.items():
        unnamed[dev] = unnamed.get(dev, 0) + (w["op_name"] is None)
    issues = {r["device_id"]: r for r in rows("build_issues") if r["kind"] == "aicpu_without_op"}
    assert {d: r["count"] for d, r in issues.items()} == {d: n for d, n in unnamed.items() if n}
    ambiguous = AMBIGUOUS[id(truth)]
    for d, r in issues.items():
        assert f"({ambiguous.get(d, 0)} held by more than one)" in r["message"]
    if layout == "text":  # a text record names no stream: two overlapping executions hold some
        assert ambiguous[-1] > 0
    assert any(w["op_source"] == "execution" for w in want.values())
    # the record after the last execution names its node in text (Lone_op), none in binary
    lone = {
        (d, s)
        for (d, s), w in want.items()
        if w["start_ns"] > max(x.end_ns for x in truth.launches if x.device_id == d)
    }
    assert len(lone) == 2
    for key in lone:
        assert (got[key]["op_name"], got[key]["op_source"]) == (
            ("Lone_op", "record") if layout == "text" else (None, None)
        )


def test_a_dump_without_aicpu_records_has_no_rows(tmp_path):
    truth = generate(tmp_path / "dump", ProfConfig(chip="ascend910a"))
    _, rows = build_dump(tmp_path / "wh", tmp_path / "dump" / truth.root)
    assert rows("aicpu_ops") == [] and rows("aicpu_tasks") == []
    assert not [r for r in rows("build_issues") if r["kind"] == "aicpu_without_op"]
