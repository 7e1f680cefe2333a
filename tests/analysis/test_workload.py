"""The workload rule (pipeline/workload.py) on values worked out by hand."""

from __future__ import annotations

from pipeline.workload import workload_of


def _values(table_values: dict[tuple[str, str], list[str]]):
    return lambda table, column: table_values.get((table, column), [])


def test_models_name_the_workload():
    run = {"layout": "prof", "chip": "Ascend910B"}
    got = workload_of(run, _values({("inferences", "model_name"): ["bert", "resnet50"]}))
    assert got == "prof/Ascend910B/bert+resnet50"


def test_without_models_the_op_names_hash_names_it():
    # md5("AddN,MatMul") begins 212e9790, computed outside the code under test
    run = {"layout": "hiprof", "chip": None}
    got = workload_of(run, _values({("task_ops", "op_name"): ["AddN", "MatMul"]}))
    assert got == "hiprof/unknown-chip/ops-212e9790"


def test_a_run_without_models_or_ops_is_empty_and_a_missing_layout_is_left_out():
    assert workload_of({"chip": "Ascend310P"}, _values({})) == "Ascend310P/empty"
