"""A scalar tensor's empty shape is a shape (""), not "no shape" (NULL); and timeline
durations finer than a ns are rounded to whole ns, each by at most half a ns, so an op's
total differs from the exact sum by at most half a ns per execution
(docs/formats.md#export-values).

Expected values are worked out by hand (and with Python's decimal module) from the text
written here.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_db import ROWS, STRINGS, build
from tests.readers.test_exported_db import run as read_db
from tests.readers.test_exported_totals import export, read

KERNEL = (
    "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim,"
    "Input Shapes,Input Data Types,Output Shapes,Output Data Types\n"
    # a scalar input and a scalar output: the exporter's doubled quotes around nothing
    '1,4294967295,11,2,mul_1,Mul,AI_CORE,1000000000000000,2.5,8,"""""",FLOAT,"""""",FLOAT\n'
    # two inputs, the second a scalar; an output shape the exporter did not know
    '1,4294967295,12,2,add_2,Add,AI_CORE,1000000000000010,1,8,"""4,4;""",FLOAT;FLOAT,N/A,FLOAT\n'
    # no shape at all: an empty cell
    "1,4294967295,13,2,cast_3,Cast,AI_CORE,1000000000000020,1,8,,FLOAT,,INT32\n"
)


def test_an_empty_shape_in_a_csv_is_kept_as_an_empty_string(tmp_path):
    _meta, sink, _log = read(export(tmp_path, {"kernel_details.csv": KERNEL}))
    assert [(r["op_name"], r["input_shapes"], r["output_shapes"]) for r in sink.rows("task_ops")] == [
        ("mul_1", "", ""),
        ("add_2", "4,4;", None),
        ("cast_3", None, None),
    ]


def test_an_empty_shape_in_a_database_is_kept_as_an_empty_string(tmp_path):
    strings = [*STRINGS, '""']
    scalar = len(STRINGS)
    first = list(ROWS["COMPUTE_TASK_INFO"][0])
    first[8] = scalar  # inputShapes: a scalar; outputShapes stays '"16,8"'
    db = build(
        tmp_path / "msprof_0.db",
        rows={
            "STRING_IDS": list(enumerate(strings)),
            "COMPUTE_TASK_INFO": [tuple(first), ROWS["COMPUTE_TASK_INFO"][1]],
        },
    )
    _res, sink, _log = read_db(db)
    got = {r["op_name"]: (r["input_shapes"], r["output_shapes"]) for r in sink.rows("task_ops")}
    assert got["MatMul_1"] == ("", "16,8")
    assert got["Add_2"] == (None, None)  # N/A: no shape known


# --- sub-ns durations ---------------------------------------------------------------------------

N_KERNELS = 1000
# durations in us with digits below the ns: 0.4, 0.5 (half: away from zero) and 0.0625 ns
FRACTIONS = ["1.0004", "2.0005", "3.0000625", "53.7410625"]


def _trace() -> list[dict]:
    events = [{"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "Ascend Hardware"}}]
    for i in range(N_KERNELS):
        dur = FRACTIONS[i % len(FRACTIONS)]
        events.append(
            {
                "ph": "X",
                "name": "k",
                "pid": 9,
                "tid": 1,
                "ts": f"1000000000{i:06d}.000",
                "dur": dur,
                "args": {"Task Id": i, "Stream Id": 1, "Task Type": "AI_CORE"},
            }  # fmt: skip
        )
    return events


def _kernels(n: int) -> str:
    head = "Step Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),Block Dim\n"
    return head + "".join(f"1,4294967295,{i},1,k,K,AI_CORE,1000000000{i:06d}.000,1,1\n" for i in range(n))


@pytest.mark.slow
def test_sub_ns_durations_round_each_to_the_ns_and_the_total_within_half_a_ns_each(tmp_path):
    d = export(tmp_path, {"trace_view.json": json.dumps(_trace()), "kernel_details.csv": _kernels(N_KERNELS)})
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [o] = run_roots(wh, [d])
    assert o.status == "built", o.error
    exact = [Decimal(FRACTIONS[i % len(FRACTIONS)]) * 1000 for i in range(N_KERNELS)]  # ns
    rounded = [int(x.quantize(Decimal(1), rounding=ROUND_HALF_UP)) for x in exact]
    ops = fetch(wh, "op_summary", [o.run_id])[1].to_pylist()
    assert [r["dur_ns"] for r in sorted(ops, key=lambda r: r["task_id"])] == rounded
    [stat] = fetch(wh, "op_statistic", [o.run_id])[1].to_pylist()
    assert stat["count"] == N_KERNELS and stat["total_ns"] == sum(rounded)
    drift = abs(Decimal(stat["total_ns"]) - sum(exact))
    # 250 x (-0.4 + 0.5 - 0.0625 - 0.0625) ns = -6.25 ns here; at most 0.5 ns per execution always
    assert drift == Decimal("6.25") and drift <= Decimal(N_KERNELS) / 2
