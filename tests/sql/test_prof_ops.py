"""op_summary's operator columns and op_statistic of generation-2/3 dumps equal what the
events synth wrote give under msprof's rules: the model id of the model-level record that
encloses an op's node launch, and a kernel launched outside any node named after its kernel
(op type too), block dim 0, model id 4294967295, counted in op_statistic."""

from __future__ import annotations

import pytest

from tests.helpers import oracle, oracle_prof
from tests.sql.test_prof_tables import CASES, prof_run, run  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

OP_COLUMNS = (
    "device_id",
    "stream_id",
    "task_id",
    "start_ns",
    "dur_ns",
    "model_id",
    "op_name",
    "op_type",
    "task_type",
    "block_dim",
)


def test_op_summary_ops_and_model_ids(run):
    got = [{c: r[c] for c in OP_COLUMNS} for r in run.rows("op_summary")]
    expected = oracle_prof.op_summary_ops(run.truth)
    assert len(got) == len(expected) > 0
    oracle.assert_same_rows(got, expected, ("device_id", "stream_id", "task_id", "start_ns"))
    # the synth's model is model 1, and each inference has a kernel outside any node
    assert {r["model_id"] for r in got} == {1, oracle_prof.GE_OP_MODEL_ID}


def test_op_statistic_counts_kernels_outside_nodes(run):
    got = run.rows("op_statistic")
    expected = oracle_prof.op_statistic(run.truth)
    oracle.assert_same_rows(got, expected, ("device_id", "op_type", "core_type"))
    assert any(r["op_type"] == "DataPrep_kernel" and r["core_type"] == "AI_CPU" for r in got)
