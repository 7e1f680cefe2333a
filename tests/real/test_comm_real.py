"""Communication per iteration and op on real data (comm_iteration_ops, comm_iteration_links;
docs/formats.md#rule-comm-tasks), against what the exporters wrote beside it.

* msprof 2023 (mindinsight's two-device job): each hccl_<dev>_<model>_<iter>.json holds the tasks
  msprof gave iteration <iter>; profetl places them by its own iteration rule (the step-trace
  iterations of msprof_*.json), and each iteration's row holds exactly that file's tasks, with
  MindInsight's communication cost and wait cost and msprof's transit summed here from the file.
* torch_npu (msinsight's level1 exports): the communication analysis torch_npu wrote beside the
  events (analysis.db's CommAnalyzerBandwidth and CommAnalyzerTime for the database export,
  communication.json for the text export) gives per op the transit size and time per link type
  and the op's elapse time, which profetl's rows equal within the exporter's rounding.

Expected values are read here from the files with json and sqlite3, independent of profetl's
readers and SQL.
"""

from __future__ import annotations

import json
import sqlite3
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

MSPROF_2023 = "mindspore-ai+mindinsight/tests/utils/resource/profiler"
LEVEL1_DB = "Ascend+msinsight/test/data/pytorch/db/level1/rank0_ascend_pt"
LEVEL1_TEXT = "Ascend+msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
TRANSIT = {"Memcpy", "Reduce_Inline"}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return Warehouse(tmp_path_factory.mktemp("wh"))


def _build(wh: Warehouse, dump: Path) -> str:
    with wh.writer():
        [o] = run_roots(wh, [dump])
    assert o.status == "built", o.error
    return o.run_id


def _rows(wh: Warehouse, table: str, run_id: str) -> list[dict]:
    _, t = fetch(wh, table, [run_id])
    return t.to_pylist()


def _ns(us: Decimal) -> int:
    """Microseconds in integer ns, half away from zero (values here are never negative)."""
    return int((us * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_each_iteration_holds_the_tasks_of_its_hccl_file(real_data, warehouse):
    profs = sorted((real_data / MSPROF_2023).glob("PROF_*"))
    assert len(profs) == 2, f"{real_data / MSPROF_2023}: {profs}"
    for prof in profs:
        run_id = _build(warehouse, prof)
        got = {
            (r["device_id"], r["model_id"], r["iteration_id"]): r
            for r in _rows(warehouse, "comm_iteration_ops", run_id)
        }
        files = sorted(prof.glob("device_*/timeline/hccl_*_*_*.json"))
        assert len(files) == 10 and len(got) == 10
        for f in files:
            device, model, iteration = (int(x) for x in f.stem.split("_")[1:])
            events = [e for e in json.loads(f.read_text(), parse_float=Decimal) if e.get("ph") == "X"]
            tasks = [e for e in events if "task type" in e.get("args", {})]
            [op] = [e for e in events if "task type" not in e.get("args", {})]
            r = got[(device, model, iteration)]
            assert r["op_name"] == op["name"] and r["op_count"] == 1, f.name
            assert r["op_ns"] == _ns(op["dur"]), f.name
            assert r["task_count"] == len(tasks), f.name
            # MindInsight: communication cost = every task but Notify_Wait, wait cost = Notify_Wait
            assert r["communication_ns"] == sum(_ns(e["dur"]) for e in tasks if e["name"] != "Notify_Wait"), (
                f.name
            )
            assert r["wait_ns"] == sum(_ns(e["dur"]) for e in tasks if e["name"] == "Notify_Wait"), f.name
            # msprof: transit = Memcpy / Reduce_Inline over SDMA, not on the chip
            transit = [
                e
                for e in tasks
                if e["args"]["task type"] in TRANSIT
                and e["args"]["transport type"] == "SDMA"
                and e["args"]["link type"] != "ON_CHIP"
            ]
            assert r["transit_ns"] == sum(_ns(e["dur"]) for e in transit), f.name
            assert r["transit_bytes"] == sum(int(e["args"]["size(Byte)"]) for e in transit), f.name
            # the iteration is the one step_trace_summary numbers so
            assert r["step_id"] == iteration, f.name


def _check_bandwidth(links: list[dict], ops: list[dict], expected: dict[str, dict]) -> None:
    """``expected``: op name -> {link type: (transit size MB, transit time ms), "elapse": ms}."""
    by_op = {r["op_name"]: r for r in ops}
    assert expected  # (an export read as holding no ops would pass the comparison unchecked)
    assert set(by_op) == set(expected)
    for op, want in expected.items():
        for kind, (size_mb, time_ms, count) in want["links"].items():
            mine = [
                r
                for r in links
                if r["op_name"] == op
                and r["transport_type"] == "SDMA"
                and r["link_type"] != "ON_CHIP"
                and (kind == "SDMA" or r["link_type"] == kind)
            ]
            assert sum(r["transfer_bytes"] for r in mine) == round(size_mb * 1e6), (op, kind)
            # torch_npu sums float microseconds; profetl whole ns: 1 ns per transit task at most
            assert abs(sum(r["transfer_ns"] for r in mine) - time_ms * 1e6) <= count, (op, kind)
        assert by_op[op]["transit_bytes"] == round(want["links"]["SDMA"][0] * 1e6), op
        assert abs(by_op[op]["op_ns"] - want["elapse"] * 1e6) <= 1, op


def test_transit_per_link_type_and_elapse_equal_torch_npus_analysis_database(real_data, warehouse):
    folder = real_data / LEVEL1_DB
    run_id = _build(warehouse, folder)
    analysis = folder / "ASCEND_PROFILER_OUTPUT" / "analysis.db"
    con = sqlite3.connect(f"file:{analysis}?immutable=1", uri=True)
    try:
        band = con.execute(
            "SELECT hccl_op_name, transport_type, transit_size, transit_time, sum(count) "
            "FROM CommAnalyzerBandwidth GROUP BY 1, 2, 3, 4"
        ).fetchall()
        elapse = dict(con.execute("SELECT hccl_op_name, elapse_time FROM CommAnalyzerTime").fetchall())
    finally:
        con.close()
    expected: dict[str, dict] = {op: {"links": {}, "elapse": ms} for op, ms in elapse.items()}
    for op, kind, size, time, count in band:
        expected[op]["links"][kind] = (size, time, count or 0)
    for want in expected.values():  # SDMA holds every link type's transits
        hccs = want["links"].get("HCCS", (0, 0, 0))
        want["links"]["SDMA"] = (want["links"]["SDMA"][0], want["links"]["SDMA"][1], hccs[2])
    _check_bandwidth(
        _rows(warehouse, "comm_iteration_links", run_id),
        _rows(warehouse, "comm_iteration_ops", run_id),
        expected,
    )


def test_transit_per_link_type_and_elapse_equal_torch_npus_communication_json(real_data, warehouse):
    folder = real_data / LEVEL1_TEXT
    run_id = _build(warehouse, folder)
    data = json.loads((folder / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
    expected: dict[str, dict] = {}
    for step in data.values():
        for kind in ("collective", "p2p"):
            for name, op in step.get(kind, {}).items():
                if name == "Total Op Info":  # the sum of the ops above
                    continue
                links = {}
                for link, info in op["Communication Bandwidth Info"].items():
                    count = sum(n for n, _ in info.get("Size Distribution", {}).values())
                    links[link] = (info["Transit Size(MB)"], info["Transit Time(ms)"], count)
                links["SDMA"] = (*links["SDMA"][:2], links["HCCS"][2] + links["PCIE"][2] + links["SIO"][2])
                expected[name.split("@")[0]] = {
                    "links": {k: v for k, v in links.items() if k != "RDMA"},
                    "elapse": op["Communication Time Info"]["Elapse Time(ms)"],
                }
    _check_bandwidth(
        _rows(warehouse, "comm_iteration_links", run_id),
        _rows(warehouse, "comm_iteration_ops", run_id),
        expected,
    )
