"""Every build audits each mart's declared grain (its contract's ``grain``): the grain's
columns are columns of the table, no two rows share a key, and no grain column is NULL unless
the contract lets it be (``grain_nullable``); a mart that breaks it fails the build with an
error naming the table and the key."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pipeline.jobs.build as build_module
from pipeline.errors import GrainViolated, TransformFailed
from pipeline.jobs.build import check_grain, connect
from pipeline.jobs.runner import ingest_dump
from pipeline.synth.hiprof import HiprofConfig
from pipeline.synth.hiprof import generate as generate_hiprof
from pipeline.synth.prof import ProfConfig
from pipeline.synth.prof import generate as generate_prof
from pipeline.warehouse.contracts import contract, contracts
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


@pytest.mark.parametrize("name", sorted(contracts("marts")))
def test_declared_grain_is_columns_of_the_table(name):
    c = contract("marts", name)
    assert c.grain.split(",")[0].strip() == "run_id", "every mart's grain starts with its partition"
    assert c.grain_columns, f"{name} declares no grain"
    assert set(c.grain_columns) <= set(c.column_names), (
        f"{name}: {set(c.grain_columns) - set(c.column_names)}"
    )
    assert set(c.grain_nullable_columns) <= set(c.grain_columns)


def _dump(tmp_path, layout: str):
    out = tmp_path / "dump"
    if layout == "hiprof":
        generate_hiprof(out, HiprofConfig())
        return out
    truth = generate_prof(out, ProfConfig(chip=layout))
    return out / truth.root if truth.root else out


def _with_grain(monkeypatch, name: str, **changes) -> None:
    """The build sees mart ``name``'s contract with ``changes`` (a test-only contract)."""
    real = build_module.contract

    def patched(layer, table):
        c = real(layer, table)
        return dataclasses.replace(c, **changes) if (layer, table) == ("marts", name) else c

    monkeypatch.setattr(build_module, "contract", patched)


def _ingest(tmp_path, dump):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        return ingest_dump(wh, dump)


@pytest.mark.parametrize("layout", ["hiprof", "ascend910a", "ascend310p", "ascend910b"])
def test_every_mart_keeps_its_grain_on_synthetic_runs(tmp_path, layout):
    """Each layout builds (the audit ran on every mart); the parts are audited once more here,
    and the audits had rows to check: most marts have rows, and every grain column that may not
    be NULL has values in the rows of its mart."""
    outcome = _ingest(tmp_path, _dump(tmp_path, layout))
    assert outcome.status == "built", outcome.error
    con = connect(tmp_path)
    audited, with_rows = 0, 0
    for name in contracts("marts"):
        parts = list((tmp_path / "wh" / "marts" / name).rglob("*.parquet"))
        for part in parts:
            check_grain(con, name, part)
            audited += 1
        rows = outcome.build.rows_by_mart[name]
        if rows:
            with_rows += 1
            c = contract("marts", name)
            strict = [k for k in c.grain_columns if k not in c.grain_nullable_columns]
            files = [str(p) for p in parts]
            counts = con.execute(
                f"select {', '.join(f'count({k})' for k in strict)} from read_parquet({files})"
            ).fetchone()
            assert list(counts) == [rows] * len(strict), name
    con.close()
    assert audited >= len(contracts("marts")) - 1  # ai_core_samples is empty for task-based runs
    # the marts a default synthetic dump fills (the others need sampling-mode PMU, training,
    # AI CPU or communication records): 11 of the 17
    assert with_rows >= 11


def test_a_key_held_by_two_rows_fails_the_build(tmp_path, monkeypatch):
    # op_summary without its time columns: the executions of one task share (device, stream, task)
    _with_grain(monkeypatch, "op_summary", grain="run_id, device_id, stream_id, task_id", grain_nullable="")
    with pytest.raises(GrainViolated) as e:
        _ingest(tmp_path, _dump(tmp_path, "ascend910b"))
    assert e.value.table == "op_summary"
    assert set(e.value.key) == {"device_id", "stream_id", "task_id"}
    assert "op_summary" in str(e.value) and "rows share the grain key" in str(e.value)
    assert isinstance(e.value, TransformFailed)


def test_a_null_grain_column_fails_the_build_unless_declared(tmp_path, monkeypatch):
    # raw runs have no FFTS+ context: context_id is NULL in every op_summary row
    _with_grain(monkeypatch, "op_summary", grain_nullable="")
    with pytest.raises(GrainViolated, match=r"mart op_summary: grain column\(s\) context_id NULL") as e:
        _ingest(tmp_path, _dump(tmp_path, "hiprof"))
    assert e.value.key["context_id"] is None


def test_a_grain_column_the_table_lacks_fails_the_build(tmp_path, monkeypatch):
    # the grain ai_core_metrics declared before it had the column
    _with_grain(monkeypatch, "ai_core_metrics", grain="run_id, device_id, record_seq")
    with pytest.raises(
        GrainViolated, match="mart ai_core_metrics: grain column.s. record_seq .* not columns"
    ):
        _ingest(tmp_path, _dump(tmp_path, "hiprof"))


def test_check_grain_on_hand_made_rows(tmp_path):
    """The audit alone, on rows written by hand: unique keys pass (NULL a value where
    allowed), a repeated key and a forbidden NULL are reported with the key."""
    con = connect(tmp_path)
    c = contract("marts", "topdown_inference")
    cols = {f.name: [] for f in c.schema}

    def write(rows):
        table = pa.Table.from_pylist([dict(zip(cols, r)) for r in rows], schema=c.schema)
        path = tmp_path / f"t{len(list(tmp_path.glob('t*.parquet')))}.parquet"
        pq.write_table(table, path)
        return path

    ok = write(
        [
            (0, 1, "ACL", "aclmdlExecute", 10, 5),
            (0, 1, "Runtime", None, 11, 3),
            (0, 1, "Task Scheduler", None, 12, 2),
            (0, 2, "Runtime", None, 20, 3),
        ]
    )
    check_grain(con, "topdown_inference", ok)
    twice = write([(0, 1, "Runtime", None, 11, 3), (0, 1, "Runtime", None, 12, 4)])
    with pytest.raises(GrainViolated, match="2 rows share") as e:
        check_grain(con, "topdown_inference", twice)
    assert e.value.key == {"device_id": 0, "infer_id": 1, "module_name": "Runtime", "api_name": None}
    no_module = write([(0, 1, None, "Input", 11, 3)])
    with pytest.raises(GrainViolated, match=r"module_name NULL"):
        check_grain(con, "topdown_inference", no_module)
    con.close()
