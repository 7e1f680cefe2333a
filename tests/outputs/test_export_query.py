"""export and query over several runs: selection by time and device, formats, run metadata joins."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipeline.analysis.selection import RunSelection, parse_when, select_runs
from pipeline.cli.main import app
from pipeline.outputs.export import fetch
from pipeline.outputs.formats import csv_cell
from pipeline.warehouse.contracts import contract
from tests.helpers.history import build_history

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

runner = CliRunner()


def invoke(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """Three nights (2026-01-01, -02, -03), two devices each."""
    return build_history(tmp_path_factory.mktemp("exq"), [{"seed": s, "devices": 2} for s in (5, 6, 7)])


def test_runs_view_has_metadata_to_join(three):
    wh, nights = three
    r = invoke(
        "query",
        "select run_id, collected_at, workload, chip, devices from runs order by run_id",
        "--format",
        "json",
        "--warehouse",
        wh.path,
    )
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [x["run_id"] for x in rows] == sorted(n.run_id for n in nights)
    assert rows[0]["collected_at"] == "2026-01-01T00:00:00+00:00"
    assert rows[0]["workload"] == "hiprof_result_dir/Ascend310/resnet50" and rows[0]["devices"] == [0, 1]
    sql = (
        "select r.collected_at::date as day, count(*) as n from task_states t join runs r using (run_id) "
        "where t.device_id = $dev and r.collected_at >= $since::timestamptz group by 1 order by 1"
    )
    r = invoke("query", sql, "-p", "dev=1", "-p", "since=2026-01-02", "-f", "csv", "--warehouse", wh.path)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == "day,n" and [x.split(",")[0] for x in lines[1:]] == ["2026-01-02", "2026-01-03"]
    counts = [sum(1 for s in n.truth.states if s.device_id == 1) for n in nights[1:]]
    assert [int(x.split(",")[1]) for x in lines[1:]] == counts


def test_query_parquet_file_and_sql_from_a_file(three, tmp_path):
    wh, _ = three
    sql_file = tmp_path / "q.sql"
    sql_file.write_text("select run_id, op_name, avg_ns from task_scheduler where avg_ns > $min order by all")
    out = tmp_path / "q.parquet"
    r = invoke(
        "query", f"@{sql_file}", "-p", "min=0.5", "--format", "parquet", "--out", out, "--warehouse", wh.path
    )
    assert r.exit_code == 0, r.output
    t = pq.read_table(out)
    assert t.column_names == ["run_id", "op_name", "avg_ns"] and t.num_rows > 0
    assert t.schema.field("avg_ns").type == pa.float64()
    r = invoke("query", "select 1", "--format", "parquet", "--warehouse", wh.path)
    assert r.exit_code == 0 and r.stdout_bytes.startswith(b"PAR1")
    r = invoke("query", "select 1", "--format", "table", "--out", out, "--warehouse", wh.path)
    assert r.exit_code == 2


def test_export_since_until_and_device(three, tmp_path):
    wh, nights = three
    out = tmp_path / "ts.csv"
    r = invoke(
        "export",
        "task_scheduler",
        "--since",
        "2026-01-02",
        "--until",
        "2026-01-03T12:00",
        "--device",
        "1",
        "--out",
        out,
        "--warehouse",
        wh.path,
    )
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0])[:4] == ["Run ID", "Collected (UTC)", "Device", "Time(%)"]
    assert {x["Collected (UTC)"] for x in rows} == {"2026-01-02T00:00:00+00:00", "2026-01-03T00:00:00+00:00"}
    assert {x["Run ID"] for x in rows} == {nights[1].run_id, nights[2].run_id}
    assert {x["Device"] for x in rows} == {"1"}
    _, lib = fetch(wh, "task_scheduler", [nights[1].run_id, nights[2].run_id], devices=[1])
    assert len(rows) == lib.num_rows
    assert [int(x["Time(ns)"]) for x in rows] == lib.column("time_ns").to_pylist()


def test_export_parquet_to_stdout_and_json_lines(three):
    wh, nights = three
    r = invoke(
        "export",
        "acl_api",
        "--run",
        nights[0].run_id,
        "--format",
        "parquet",
        "--out",
        "-",
        "--warehouse",
        wh.path,
    )
    assert r.exit_code == 0, r.output
    t = pq.read_table(pa.BufferReader(r.stdout_bytes))
    assert t.schema.equals(pa.schema([f for f in contract("marts", "acl_api").schema]))
    r = invoke("export", "acl_api", "--run", nights[0].run_id, "--format", "json", "--warehouse", wh.path)
    first = json.loads(r.stdout.splitlines()[0])
    assert set(first) == {c.name for c in contract("marts", "acl_api").columns}


def test_csv_cells_are_numbers_or_safe_text(three):
    """Every cell is empty, a number, or text a spreadsheet will not evaluate."""
    wh, nights = three
    for table in (
        "task_scheduler",
        "ai_core_metrics",
        "runtime_api_summary",
        "acl_api",
        "topdown_inference",
        "api_calls",
    ):
        r = invoke("export", table, "--run", nights[0].run_id, "--warehouse", wh.path)
        assert r.exit_code == 0, r.output
        c = contract("marts", table) if table != "api_calls" else contract("raw", table)
        numeric = {col.display or col.name for col in c.columns if col.type in ("int32", "int64", "float64")}
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        assert rows, table  # (no rows would pass the checks below unchecked)
        numbers = 0
        for row in rows:
            for header, value in row.items():
                assert not value.startswith(("=", "+", "@", "\t", "\r")), (table, header, value)
                if header in numeric and value:
                    float(value)  # a number a spreadsheet parses, not text
                    assert value.strip() == value and "'" not in value
                    numbers += 1
        assert numbers, table  # the headers are the contract's display names: numbers were checked
    assert csv_cell(float("nan")) == "" and csv_cell(12345678.0) == "12345678"


def test_selection_forms(three):
    wh, nights = three
    assert [r["run_id"] for r in select_runs(wh, RunSelection())] == [
        wh.run_index().resolve_run("latest")["run_id"]
    ]
    assert len(select_runs(wh, RunSelection(), default_latest=False)) == 3
    assert [r["run_id"] for r in select_runs(wh, RunSelection(last=2))] == [n.run_id for n in nights[1:]]
    assert [r["run_id"] for r in select_runs(wh, RunSelection(runs=[nights[0].run_id[:17]]))] == [
        nights[0].run_id
    ]
    now = parse_when("2026-01-10T00:00")
    assert parse_when("7d", now=now) == parse_when("2026-01-03")
    assert parse_when("yesterday", now=now) == parse_when("2026-01-09")
    assert parse_when("2026-01-03T01:00+01:00") == parse_when("2026-01-03T00:00")
    r = invoke("export", "acl_api", "--since", "last tuesday", "--warehouse", wh.path)
    assert r.exit_code == 2 and "is not a time" in r.stderr


def test_connect_can_open_only_some_views(three):
    from pipeline.warehouse.views import connect

    wh, nights = three
    con = connect(wh, tables={"acl_api"})
    try:
        views = {r[0] for r in con.sql("select view_name from duckdb_views() where not internal").fetchall()}
        # the runs view reads the index only (workload is kept there), no other table
        assert views == {"_run_records", "runs", "acl_api"}
        assert con.sql("select count(*) from runs").fetchall() == [(len(nights),)]
    finally:
        con.close()
