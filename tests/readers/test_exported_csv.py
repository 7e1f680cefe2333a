"""Summary CSVs of exported dumps (kernel_details, op_summary, task_time) into task_runs, task_ops, task_metrics.

Expected rows are worked out by hand from the CSV text written here; the real exports
(the ``real_data`` fixture) are counted with csv.DictReader, independently of the reader.
"""

from __future__ import annotations

import csv
import json
from decimal import ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipeline.readers.exported import csvs
from pipeline.readers.exported import values as export_values
from pipeline.readers.exported.context import ExportContext
from pipeline.readers.exported.csvs import read_summary
from pipeline.readers.exported.reader import read_export
from pipeline.readers.issues import BYTE_KINDS, IssueLog
from pipeline.warehouse.contracts import contract
from pipeline.warehouse.sink import to_table

ALL = frozenset({"task_runs", "task_ops", "task_metrics"})
INT64_MAX = 2**63 - 1


class MemSink:
    """Tables as the Parquet sink would type them, kept in memory."""

    def __init__(self):
        self.parts: dict[str, list[pa.Table]] = {}

    def write(self, table: str, columns: dict) -> None:
        self.parts.setdefault(table, []).append(to_table(contract("raw", table), columns))

    def rows(self, table: str) -> list[dict]:
        parts = self.parts.get(table)
        return pa.concat_tables(parts).to_pylist() if parts else []


def read(path: Path, kind: str, tables=ALL, default_device: int | None = None):
    sink, log = MemSink(), IssueLog()
    ctx = ExportContext(path.parent, sink, log, frozenset(tables), default_device)
    res = read_summary(path, kind, ctx)
    return res, sink, log


def pick(row: dict, *cols: str) -> dict:
    return {c: row[c] for c in cols}


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return p


def assert_bytes_accounted(path: Path, log: IssueLog) -> None:
    assert log.bytes_decoded + log.bytes_skipped() == path.stat().st_size


# -- hand-written files ---------------------------------------------------------------------------

# torch_npu, older header (no OP State / HF32): Block Dim, Start Time(us), Name / Type, no Device_id.
# A BOM, CRLF line ends, a tab-terminated timestamp (bare and quoted), N/A cells, a communication
# op with no stream and task.
KERNEL_DETAILS = (
    "\ufeffStep Id,Model ID,Task ID,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us),"
    "Wait Time(us),Block Dim,Mix Block Dim,Input Shapes,Input Data Types,Input Formats,Output Shapes,"
    "Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,aiv_vec_ratio,"
    "cube_utilization(%)\r\n"
    '1,4294967295,11,2,add_1,Add,AI_VECTOR_CORE,1000000000000000.0015\t,2.5,0,8,0,"""4,4;4,4""",FLOAT;FLOAT,'
    'ND;ND,"""4,4""",FLOAT,ND,N/A,0,0,0.5,N/A\r\n'
    "1,4294967295,N/A,N/A,hcom_allReduce__1_0,hcom_allReduce_,HCCL,1000000000000010,100,0,0,N/A,N/A,N/A,N/A,"
    "N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A\r\n"
    '1,4294967295,12,2,mm_2,MatMul,MIX_AIC,"1000000000000020.25\t",1.0005,N/A,24,48,N/A,N/A,N/A,N/A,N/A,N/A,'
    "3,10.25,1234,0,87.5\r\n"
)

# The same rows under the other header spellings: Op Name / OP Type / Task Type, Task Start Time(us),
# Task Duration(us), Block Num / Mix Block Num, plus OP State and HF32 Eligible.
OP_SUMMARY_OF_SAME = (
    "Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),Task Duration(us),"
    "Task Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
    "Output Shapes,Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,"
    "aiv_vec_ratio,cube_utilization(%)\n"
    '4294967295,11,2,add_1,Add,N/A,AI_VECTOR_CORE,1000000000000000.0015\t,2.5,0,8,0,NO,"""4,4;4,4""",'
    'FLOAT;FLOAT,ND;ND,"""4,4""",FLOAT,ND,N/A,0,0,0.5,N/A\n'
    "4294967295,N/A,N/A,hcom_allReduce__1_0,hcom_allReduce_,N/A,HCCL,1000000000000010,100,0,0,N/A,N/A,N/A,"
    "N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A\n"
    "4294967295,12,2,mm_2,MatMul,N/A,MIX_AIC,1000000000000020.25\t,1.0005,N/A,24,48,NO,N/A,N/A,N/A,N/A,N/A,"
    "N/A,3,10.25,1234,0,87.5\n"
)

# Worked out by hand. start 1000000000000000.0015 us = ...0001.5 ns -> ...0002 (half away from zero);
# 2.5 us = 2500 ns; 1000000000000020.25 us = ...20250 ns; 1.0005 us = 1000.5 ns -> 1001 ns.
RUNS = [
    {
        "device_id": 3,
        "seq": 0,
        "stream_id": 2,
        "task_id": 11,
        "start_ns": 1000000000000000002,
        "end_ns": 1000000000000002502,
        "task_type_name": "AI_VECTOR_CORE",
        "context_id": None,
        "model_id": 4294967295,
    },
    {
        "device_id": 3,
        "seq": 2,
        "stream_id": 2,
        "task_id": 12,
        "start_ns": 1000000000000020250,
        "end_ns": 1000000000000021251,
        "task_type_name": "MIX_AIC",
        "context_id": 3,
        "model_id": 4294967295,
    },
]
OPS = [
    {
        "device_id": 3,
        "seq": 0,
        "source": "export",
        "stream_id": 2,
        "task_id": 11,
        "start_ns": 1000000000000000002,
        "op_name": "add_1",
        "op_type": "Add",
        "task_type": "AI_VECTOR_CORE",
        "accelerator_core": "AI_VECTOR_CORE",
        "block_dim": 8,
        "mix_block_dim": 0,
        "op_state": None,
        "context_id": None,
        "model_id": 4294967295,
        "input_shapes": "4,4;4,4",
        "input_data_types": "FLOAT;FLOAT",
        "input_formats": "ND;ND",
        "output_shapes": "4,4",
        "output_data_types": "FLOAT",
        "output_formats": "ND",
    },
    {
        "device_id": 3,
        "seq": 2,
        "source": "export",
        "stream_id": 2,
        "task_id": 12,
        "start_ns": 1000000000000020250,
        "op_name": "mm_2",
        "op_type": "MatMul",
        "task_type": "MIX_AIC",
        "accelerator_core": "MIX_AIC",
        "block_dim": 24,
        "mix_block_dim": 48,
        "op_state": None,
        "context_id": 3,
        "model_id": 4294967295,
        "input_shapes": None,
        "input_data_types": None,
        "input_formats": None,
        "output_shapes": None,
        "output_data_types": None,
        "output_formats": None,
    },
]
METRICS = {  # (seq, metric) -> (label, value)
    (0, "aicore_time_us"): ("aicore_time(us)", 0.0),
    (0, "aic_total_cycles"): ("aic_total_cycles", 0.0),
    (0, "aiv_vec_ratio"): ("aiv_vec_ratio", 0.5),
    (0, "cube_utilization_pct"): ("cube_utilization(%)", None),
    (2, "aicore_time_us"): ("aicore_time(us)", 10.25),
    (2, "aic_total_cycles"): ("aic_total_cycles", 1234.0),
    (2, "aiv_vec_ratio"): ("aiv_vec_ratio", 0.0),
    (2, "cube_utilization_pct"): ("cube_utilization(%)", 87.5),
}
METRIC_KEYS = {0: (2, 11, 1000000000000000002, None), 2: (2, 12, 1000000000000020250, 3)}


@pytest.mark.parametrize(
    "name,kind,text",
    [
        ("kernel_details.csv", "kernel_details", KERNEL_DETAILS),
        ("op_summary_20260601142441.csv", "op_summary", OP_SUMMARY_OF_SAME),
    ],
)
def test_both_header_variants_give_the_hand_worked_rows(tmp_path, name, kind, text):
    p = write(tmp_path, name, text)
    res, sink, log = read(p, kind, default_device=3)

    runs = sink.rows("task_runs")
    assert [pick(r, *RUNS[0]) for r in runs] == RUNS
    assert {r["source"] for r in runs} == {kind} and {r["source_file"] for r in runs} == {name}
    ops = sink.rows("task_ops")
    assert [pick(r, *OPS[0]) for r in ops] == OPS
    got = {(m["seq"], m["metric"]): (m["label"], m["value"]) for m in sink.rows("task_metrics")}
    assert got == METRICS
    for m in sink.rows("task_metrics"):
        assert (m["stream_id"], m["task_id"], m["start_ns"], m["context_id"]) == METRIC_KEYS[m["seq"]]
        assert m["device_id"] == 3

    assert res.rows == {"task_runs": 2, "task_ops": 2, "task_metrics": 8}
    assert res.devices == {3}
    assert res.start_ns == 1000000000000000002
    # the communication row: one counted issue, nothing silently dropped
    [issue] = log.issues
    assert issue.kind == "no_task_key" and issue.count == 1 and "hcom_allReduce__1_0" in issue.message
    assert_bytes_accounted(p, log)


def test_only_the_tables_asked_for(tmp_path):
    """A timeline supplies task_runs: kernel_details is asked for task_ops and task_metrics only."""
    p = write(tmp_path, "kernel_details.csv", KERNEL_DETAILS)
    res, sink, _ = read(p, "kernel_details", tables={"task_ops", "task_metrics"}, default_device=3)
    assert sink.rows("task_runs") == [] and "task_runs" not in res.rows
    assert len(sink.rows("task_ops")) == 2 and len(sink.rows("task_metrics")) == 8


def test_no_device_anywhere_is_device_0_with_a_note(tmp_path):
    p = write(tmp_path, "kernel_details.csv", KERNEL_DETAILS)
    res, sink, _ = read(p, "kernel_details")
    assert {r["device_id"] for r in sink.rows("task_runs")} == {0}
    assert any("device 0 assumed" in n for n in res.notes)


# msprof's merged op_summary: Device_id, Block Num, context 4294967295 (= none), memory metric
# units, and a metric cell that is not a number.
OP_SUMMARY_MSPROF = (
    "Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,OP State,Task Type,Task Start Time(us),"
    "Task Duration(us),Task Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,Input Shapes,"
    "Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID,"
    "aic_total_cycles,main_mem_read_bw(GB/s),read_main_memory_datas(KB),l2 bw\n"
    "1,1,7,5,conv_0,Conv2D,static,AI_CORE,1782291497409494.490\t,7.840,0,2,N/A,NO,N/A,N/A,N/A,N/A,N/A,N/A,"
    "4294967295,26227,1.5,N/A,2\n"
    '1,1,8,5,relu_0,Relu,static,MIX_AIV,1782291497409503.1239\t,0.0001,0,4,8,NO,"""1,2""",FLOAT16,NC1HWC0,'
    '"""1,2""",FLOAT16,NC1HWC0,2,100,N/A,3.25,x\n'
)


def test_msprof_op_summary(tmp_path):
    p = write(tmp_path, "op_summary_1_2_20260601142441.csv", OP_SUMMARY_MSPROF)
    res, sink, log = read(p, "op_summary", default_device=9)  # the column wins over the default
    runs = sink.rows("task_runs")
    # 1782291497409503.1239 us = ...503123.9 ns -> ...503124; 0.0001 us = 0.1 ns -> 0
    assert [
        pick(
            r,
            "device_id",
            "stream_id",
            "task_id",
            "start_ns",
            "end_ns",
            "context_id",
            "model_id",
            "task_type_name",
        )
        for r in runs
    ] == [
        {
            "device_id": 1,
            "stream_id": 5,
            "task_id": 7,
            "start_ns": 1782291497409494490,
            "end_ns": 1782291497409502330,
            "context_id": None,
            "model_id": 1,
            "task_type_name": "AI_CORE",
        },
        {
            "device_id": 1,
            "stream_id": 5,
            "task_id": 8,
            "start_ns": 1782291497409503124,
            "end_ns": 1782291497409503124,
            "context_id": 2,
            "model_id": 1,
            "task_type_name": "MIX_AIV",
        },
    ]
    ops = sink.rows("task_ops")
    assert [
        pick(
            o,
            "op_name",
            "op_type",
            "op_state",
            "block_dim",
            "mix_block_dim",
            "input_shapes",
            "output_formats",
        )
        for o in ops
    ] == [
        {
            "op_name": "conv_0",
            "op_type": "Conv2D",
            "op_state": "static",
            "block_dim": 2,
            "mix_block_dim": None,
            "input_shapes": None,
            "output_formats": None,
        },
        {
            "op_name": "relu_0",
            "op_type": "Relu",
            "op_state": "static",
            "block_dim": 4,
            "mix_block_dim": 8,
            "input_shapes": "1,2",
            "output_formats": "NC1HWC0",
        },
    ]
    got = {(m["seq"], m["metric"]): (m["label"], m["value"]) for m in sink.rows("task_metrics")}
    assert got == {
        (0, "aic_total_cycles"): ("aic_total_cycles", 26227.0),
        (0, "main_mem_read_bw_gbps"): ("main_mem_read_bw(GB/s)", 1.5),
        (0, "read_main_memory_datas_kb"): ("read_main_memory_datas(KB)", None),
        (0, "l2_bw"): ("l2 bw", 2.0),
        (1, "aic_total_cycles"): ("aic_total_cycles", 100.0),
        (1, "main_mem_read_bw_gbps"): ("main_mem_read_bw(GB/s)", None),
        (1, "read_main_memory_datas_kb"): ("read_main_memory_datas(KB)", 3.25),
        (1, "l2_bw"): ("l2 bw", None),
    }
    assert res.devices == {1}
    [issue] = log.issues
    assert issue.kind == "bad_value" and "'l2 bw'" in issue.message and issue.count == 1
    assert_bytes_accounted(p, log)


def test_task_time_csv(tmp_path):
    p = write(
        tmp_path,
        "task_time_20260624165820.csv",
        "Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)\n"
        "0,N/A,PROFILING_ENABLE,49,3,0.020,1782291497402908.910\t,1782291497402908.930\t\n"
        "2,k1,AI_CORE,47,0,7.840,1782291497409494.490\t,1782291497409502.330\t\n",
    )
    res, sink, log = read(p, "task_time_csv")
    assert [
        pick(r, "device_id", "stream_id", "task_id", "start_ns", "end_ns", "task_type_name", "source")
        for r in sink.rows("task_runs")
    ] == [
        {
            "device_id": 0,
            "stream_id": 49,
            "task_id": 3,
            "start_ns": 1782291497402908910,
            "end_ns": 1782291497402908930,
            "task_type_name": "PROFILING_ENABLE",
            "source": "task_time_csv",
        },
        {
            "device_id": 2,
            "stream_id": 47,
            "task_id": 0,
            "start_ns": 1782291497409494490,
            "end_ns": 1782291497409502330,
            "task_type_name": "AI_CORE",
            "source": "task_time_csv",
        },
    ]
    assert [(o["op_name"], o["op_type"], o["task_type"]) for o in sink.rows("task_ops")] == [
        (None, None, "PROFILING_ENABLE"),
        ("k1", None, "AI_CORE"),
    ]
    assert sink.rows("task_metrics") == [] and res.devices == {0, 2} and not log.issues


# -- damaged files ----------------------------------------------------------------------------------

HEADER = "Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)\n"
ROW_A = "0,a,AI_CORE,1,1,1.000,100.000\t,101.000\t\n"
ROW_B = "0,b,AI_CORE,1,2,1.000,200.000\t,201.000\t\n"


def test_missing_required_column_is_one_issue(tmp_path):
    p = write(
        tmp_path,
        "op_summary_20260601142441.csv",
        "Device_id,Model ID,Task ID,Op Name,OP Type,Task Type,Task Duration(us)\n0,1,2,x,X,AI_CORE,1.0\n",
    )
    res, sink, log = read(p, "op_summary")
    [issue] = log.issues
    assert issue.kind == "unreadable_file" and "Stream ID" in issue.message and "Start Time" in issue.message
    assert sink.parts == {} and res.rows == {}
    assert_bytes_accounted(p, log)


@pytest.mark.parametrize("two_pass", [False, True])
def test_ragged_row_is_skipped_with_its_byte_offset(tmp_path, monkeypatch, two_pass):
    if two_pass:  # a large file: checked in a first pass, converted batch by batch in a second
        monkeypatch.setattr(csvs, "_IN_MEMORY", 0)
        monkeypatch.setattr(csvs, "_BLOCK", 128)
    ragged = "0,bad,AI_CORE,1,9,1.000\n"
    text = HEADER + ROW_A + ragged + ROW_B + ROW_A.replace(",1,1,", ",1,3,") * 5
    p = write(tmp_path, "task_time_1.csv", text)
    _res, sink, log = read(p, "task_time_csv")
    [issue] = log.issues
    assert issue.kind == "bad_text_line"
    assert issue.byte_offset == len(HEADER + ROW_A) and issue.byte_length == len(ragged)
    # seq is the row's index in the file: the skipped row keeps its number
    assert [(r["task_id"], r["seq"]) for r in sink.rows("task_runs")] == [(1, 0), (2, 2)] + [
        (3, i) for i in range(3, 8)
    ]
    assert_bytes_accounted(p, log)


def test_truncated_file(tmp_path):
    text = HEADER + ROW_A + ROW_B[:17]  # cut inside the last row
    p = write(tmp_path, "task_time_2.csv", text)
    _res, sink, log = read(p, "task_time_csv")
    [issue] = log.issues
    assert (
        issue.kind == "bad_text_line" and issue.byte_offset == len(HEADER + ROW_A) and issue.byte_length == 17
    )
    assert [r["task_id"] for r in sink.rows("task_runs")] == [1]
    assert_bytes_accounted(p, log)


def test_unterminated_quote(tmp_path):
    bad = '0,"never closed,AI_CORE,1,3,1.000,300.000,301.000\n'
    p = write(tmp_path, "task_time_3.csv", HEADER + ROW_A + bad + ROW_B)
    _res, sink, log = read(p, "task_time_csv")
    assert [i.kind for i in log.issues] == ["bad_text_line"]
    assert log.issues[0].byte_offset == len(HEADER + ROW_A)
    assert [r["task_id"] for r in sink.rows("task_runs")] == [1]
    assert_bytes_accounted(p, log)


@pytest.mark.parametrize("content", [b"", b"\n", b"\x00\x01\x02garbage\xff\n\x00"])
def test_unreadable_files_are_reported_not_raised(tmp_path, content):
    p = write(tmp_path, "task_time_4.csv", content)
    res, sink, log = read(p, "task_time_csv")
    assert res is not None and sink.parts == {}
    assert [i.kind for i in log.issues] == ["unreadable_file"]
    assert_bytes_accounted(p, log)


def test_header_only_file_is_empty_not_an_issue(tmp_path):
    p = write(tmp_path, "task_time_5.csv", HEADER)
    res, _sink, log = read(p, "task_time_csv")
    assert res.rows == {} and not log.issues
    assert_bytes_accounted(p, log)


def test_through_read_export_bytes_add_up(tmp_path):
    """reader.py counts the file in data_bytes once; decoded + skipped equals it."""
    rank = tmp_path / "host_1_ascend_pt"
    out = rank / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (rank / "profiler_info_5.json").write_text(json.dumps({"rank_id": 5}))
    (out / "kernel_details.csv").write_text(KERNEL_DETAILS + "1,2,3\n")
    sink, log = MemSink(), IssueLog()
    meta = read_export(rank, sink, log)
    assert meta.data_bytes == (out / "kernel_details.csv").stat().st_size
    assert log.bytes_decoded + log.bytes_skipped() == meta.data_bytes
    assert {r["device_id"] for r in sink.rows("task_ops")} == {5}
    assert {i.kind for i in log.issues if i.kind in BYTE_KINDS} == {"bad_text_line"}


# -- exact microseconds -----------------------------------------------------------------------------


@st.composite
def decimal_text(draw):
    sign = draw(st.sampled_from(["", "-", "+"]))
    whole = draw(st.text("0123456789", max_size=16))
    frac = draw(st.text("0123456789", max_size=9))
    dot = draw(st.booleans()) or not whole
    if not whole and not frac:
        whole = "0"
    tail = draw(st.sampled_from(["", "\t", " "]))
    return sign + whole + ("." + frac if dot else "") + tail


@settings(max_examples=400)
@given(st.lists(decimal_text(), min_size=1, max_size=20))
@example(["27.0805", "9223372036854775.807", "9223372036854775.8075", "-0.0005", "1736408883704643.212\t"])
def test_us_to_ns_is_exact(texts):
    got, bad = export_values.us_to_ns(texts)
    with localcontext() as c:
        c.prec = 60
        want = [int((Decimal(t.strip()) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP)) for t in texts]
    for w, g, b in zip(want, got.to_pylist(), bad.to_pylist()):
        if abs(w) > INT64_MAX:
            assert g is None and b
        else:
            assert g == w and not b


@settings(max_examples=200)
@given(st.lists(st.integers(min_value=-(2**70), max_value=2**70), min_size=1, max_size=20))
def test_to_int_is_exact_or_null(ints):
    got, bad = export_values.to_int([str(i) for i in ints])
    for i, g, b in zip(ints, got.to_pylist(), bad.to_pylist()):
        if -INT64_MAX <= i <= INT64_MAX:
            assert g == i and not b
        else:
            assert g is None and b


# -- real exports -------------------------------------------------------------------------------------

IMAGINATIONHH = "hicann+oam-tools/experiment/task-book/msprof_tool_experience_imaginationhh/perf-data"
BOARD = (
    "hicann+oam-tools/experiment/task-book/msprof_experience_weixin_63089733/perf-data/"
    "20260624_matmul_basic_api_board/mindstudio_profiler_output"
)
REAL = [
    (
        "Ascend+msinsight/test/data/pytorch/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
        "kernel_details",
    ),
    (f"{IMAGINATIONHH}/*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv", "kernel_details"),
    (f"{IMAGINATIONHH}/*_ascend_pt/PROF_000001_*/mindstudio_profiler_output/op_summary_*.csv", "op_summary"),
    (
        f"{IMAGINATIONHH}/*_ascend_pt/PROF_000001_*/mindstudio_profiler_output/task_time_*.csv",
        "task_time_csv",
    ),
    (f"{BOARD}/op_summary_*.csv", "op_summary"),
    (f"{BOARD}/task_time_*.csv", "task_time_csv"),
    ("Ascend+msinsight/server/src/test/test_data/test_kernel_parse/op_summary_1.csv", "op_summary"),
    (
        "Ascend+msinsight/server/src/test/test_data/test_rank_0/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
        "kernel_details",
    ),
    (
        "Ascend+msprof-analyze/test/ut/advisor/advisor_backend/compute_advice/kernel_details.csv",
        "kernel_details",
    ),
    ("Ascend+msprof-analyze/test/ut/advisor/compute_advice/data/kernel_details.csv", "kernel_details"),
]


def real_file(root: Path, pattern: str) -> Path:
    found = sorted(root.glob(pattern))
    if not found:
        pytest.skip(f"{pattern} not in the real data folder")
    return found[0]


def dict_rows(p: Path) -> list[dict]:
    with open(p, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("pattern,kind", REAL)
def test_real_csv_rows_all_accounted(real_data, pattern, kind):
    p = real_file(real_data, pattern)
    rows = dict_rows(p)
    res, sink, log = read(p, kind, default_device=0)
    stream_col = "Stream ID" if "Stream ID" in rows[0] else "stream_id"
    no_stream = sum(1 for r in rows if r[stream_col] == "N/A")
    ragged = sum(1 for r in rows if None in r.values() or None in r)  # fewer or more cells than the header
    written = len(sink.rows("task_runs"))
    counted = {i.kind: i.count for i in log.issues}
    assert written + counted.get("no_task_key", 0) + counted.get("bad_text_line", 0) == len(rows)
    assert counted.get("no_task_key", 0) == no_stream - sum(
        1 for r in rows if r[stream_col] == "N/A" and (None in r.values() or None in r)
    )
    assert counted.get("bad_text_line", 0) == ragged
    assert set(counted) <= {"no_task_key", "bad_text_line"}
    assert len(sink.rows("task_ops")) == written
    n_metrics = len(sink.rows("task_metrics"))
    if kind == "task_time_csv":
        assert n_metrics == 0
    else:
        header = list(rows[0])
        assert n_metrics == written * (len(header) - header.index("Context ID") - 1)
    assert_bytes_accounted(p, log)
    starts = [r["start_ns"] for r in sink.rows("task_runs")]
    assert res.start_ns == min(starts)


def test_real_level1_first_kernel(real_data):
    p = real_file(real_data, REAL[0][0])
    _, sink, _ = read(p, "kernel_details", default_device=0)
    run = sink.rows("task_runs")[0]
    # 1736408883704643.212 us, 53.741 us
    assert (run["stream_id"], run["task_id"], run["start_ns"], run["end_ns"]) == (
        2,
        11051,
        1736408883704643212,
        1736408883704643212 + 53741,
    )
    op = sink.rows("task_ops")[0]
    assert (
        op["op_name"],
        op["op_type"],
        op["op_state"],
        op["accelerator_core"],
        op["block_dim"],
        op["input_shapes"],
        op["output_formats"],
    ) == ("trans_TransData_0", "TransData", "dynamic", "AI_VECTOR_CORE", 32, "32,3,224,224", "NC1HWC0")
    m = {r["metric"]: r["value"] for r in sink.rows("task_metrics") if r["seq"] == 0}
    assert m["aiv_time_us"] == 50.522 and m["aiv_total_cycles"] == 2910056 and m["cube_utilization_pct"] == 0


def test_real_variant_header_op_summary(real_data):
    """msinsight's op_summary_1.csv: Start Time(us) with Task Duration(us), Block Dim, Op Name."""
    p = real_file(real_data, REAL[6][0])
    _, sink, _log = read(p, "op_summary", default_device=0)
    run = sink.rows("task_runs")[0]
    assert (run["stream_id"], run["task_id"], run["start_ns"], run["end_ns"]) == (
        16,
        2451,
        1695115378713661000,
        1695115378713661000 + 496851,
    )  # 496.8508 us -> 496850.8 ns
    op = sink.rows("task_ops")[0]
    assert (op["op_name"], op["block_dim"], op["mix_block_dim"], op["input_shapes"]) == (
        "ZerosLike",
        48,
        0,
        "232138240",
    )


def test_real_kernel_details_and_op_summary_agree(real_data):
    """One run exported by torch_npu and msprof: the same executions, ops and metric values."""
    kd = real_file(real_data, REAL[1][0])
    os_ = real_file(real_data, REAL[2][0])
    tt = real_file(real_data, REAL[3][0])
    _, a, _ = read(kd, "kernel_details", default_device=0)
    _, b, _ = read(os_, "op_summary", default_device=0)
    _, c, _ = read(tt, "task_time_csv", default_device=0)

    def by_key(rows, *extra):
        return {
            (r["device_id"], r["stream_id"], r["task_id"], r["start_ns"], *(r[e] for e in extra)): {
                k: v for k, v in r.items() if k not in ("source_file", "seq", "source")
            }
            for r in rows
        }

    for table in ("task_runs", "task_ops"):
        assert by_key(a.rows(table)) == by_key(b.rows(table))
    assert by_key(a.rows("task_metrics"), "metric") == by_key(b.rows("task_metrics"), "metric")
    runs_a, runs_c = by_key(a.rows("task_runs")), by_key(c.rows("task_runs"))
    # task_time holds every execution kernel_details does, with the same end, plus the
    # profiling switch tasks kernel_details leaves out
    assert runs_a and set(runs_a) <= set(runs_c)  # (no rows would pass the comparisons unchecked)
    assert all(runs_c[k]["end_ns"] == runs_a[k]["end_ns"] for k in runs_a)
    assert {runs_c[k]["task_type_name"] for k in set(runs_c) - set(runs_a)} <= {
        "PROFILING_ENABLE",
        "PROFILING_DISABLE",
    }


def test_a_task_time_row_that_is_not_utf8_is_read_and_reported(tmp_path):
    p = write(
        tmp_path, "task_time_4.csv", HEADER.encode() + ROW_A.encode() + b"0,\xff\xfe,AI_CORE,1,2,1,2,3\n"
    )
    _res, sink, log = read(p, "task_time_csv")
    assert [r["task_id"] for r in sink.rows("task_runs")] == [1, 2]
    assert [i.kind for i in log.issues] == ["bad_value"] and "data row 2" in log.issues[0].message
    assert_bytes_accounted(p, log)


def test_a_row_that_is_not_utf8_costs_only_itself(tmp_path):
    """One kernel_details row with bytes that are not UTF-8 (here in its name): every row is
    still read, the bad one reported with its row and column, the bytes replaced."""
    rows = KERNEL_DETAILS.encode("utf-8").split(b"\r\n")
    header, good = rows[0], rows[1]
    many = [good.replace(b"add_1", f"add_{i}".encode()) for i in range(300)]
    many[150] = good.replace(b"add_1", b"add_\xff\xfe")
    p = write(tmp_path, "kernel_details.csv", b"\r\n".join([header, *many]) + b"\r\n")
    res, sink, log = read(p, "kernel_details")
    ops = sink.rows("task_ops")
    assert len(ops) == 300
    assert sum("\ufffd" in (r.get("op_name") or "") for r in ops) == 1
    [issue] = [i for i in log.issues if "UTF-8" in i.message]
    assert issue.kind == "bad_value" and "data row 151" in issue.message and "Name" in issue.message
    assert_bytes_accounted(p, log)
