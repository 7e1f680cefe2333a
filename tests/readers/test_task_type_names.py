"""Task type names: a code the run's names cover gets its name, any other code a name made from
the number ("type 7" for device task runs as the STARS/HWTS readers write them, "UNKNOWN_13"
for GE task descriptions), and every record keeps its own, whatever the order of the codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.readers.decode import Batch
from pipeline.readers.hiprof.host import GE_TASK_TYPES, ge_task_ops
from pipeline.readers.issues import IssueLog
from pipeline.readers.prof.device import run_rows
from pipeline.readers.prof.pairing import Runs
from pipeline.readers.slices import SliceFile, SliceStream


def _stream() -> SliceStream:
    return SliceStream([SliceFile(Path("unused"), "device_0/data/x.slice_0", 10_000)])


def test_device_task_runs_name_known_codes_and_number_the_others():
    codes = np.array([0, 2, 7, 0, 3, 7, 1], np.int32)
    n = len(codes)
    ids = np.arange(n, dtype=np.int64)
    runs = Runs(
        stream_id=ids,
        task_id=ids,
        task_type=codes,
        start_syscnt=ids * 10,
        end_syscnt=ids * 10 + 5,
        seq=ids,
        offset=ids * 64,
        orphan_starts=np.zeros(0, np.int64),
    )
    row = run_rows(
        runs, np.zeros(n, np.int32), _stream(), 0, None, ["KERNEL", "EVENT", "MEMCPY"], "stars_soc"
    )
    assert row["task_type_name"].to_pylist() == [
        "KERNEL",
        "MEMCPY",
        "type 7",
        "KERNEL",
        "type 3",
        "type 7",
        "EVENT",
    ]
    assert row["task_type"].tolist() == codes.tolist()


def test_ge_task_descriptions_name_known_codes_and_number_the_others():
    codes = [0, 13, 10, 1, 13, 11]
    records = np.zeros(len(codes), hiprof_layouts.GE_TASK_DESC.dtype)
    records["task_type"] = codes
    records["op_name_kind"] = records["op_type_kind"] = 1  # names as text
    records["op_name"] = b"Add"
    records["op_type"] = b"Add"
    b = Batch(records, np.arange(len(codes), dtype=np.int64) * 256, np.arange(len(codes), dtype=np.int64))
    row = ge_task_ops(b, _stream(), 0, {}, IssueLog())
    # by hand: the GE task types in code order (docs/formats.md#task-types), INVALID last (code 10)
    assert list(GE_TASK_TYPES[[0, 1, 10]]) == ["AI_CORE", "AI_CPU", "INVALID"]
    assert row["task_type"].to_pylist() == [
        "AI_CORE",
        "UNKNOWN_13",
        "INVALID",
        "AI_CPU",
        "UNKNOWN_13",
        "UNKNOWN_11",
    ]
