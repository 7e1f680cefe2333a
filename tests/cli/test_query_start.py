"""`profetl query` starts light: what a query process loads, checked in real processes.

Structural, not timed: a query of the tables goes through DuckDB alone (Arrow, numpy and
pandas are for other outputs), rich loads only to print a table, and `query --help` loads
neither DuckDB nor Arrow (bench/warehouse.py times the commands)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.cli.query import FORMATS
from pipeline.outputs.formats import ROW_FORMATS
from pipeline.outputs.query import named_views

REPO = Path(__file__).resolve().parents[2]
WATCHED = ("pyarrow", "pandas", "numpy", "rich", "duckdb")


def _run(*args: str) -> tuple[list[str], str]:
    """The WATCHED modules a real ``profetl ARGS`` process had loaded when it exited, and its
    standard output."""
    code = (
        "import atexit, json, sys; "
        f"atexit.register(lambda: print(json.dumps(sorted(m for m in {WATCHED!r} if m in sys.modules)), file=sys.stderr)); "
        f"sys.argv = ['profetl', *{list(args)!r}]; "
        "from pipeline.cli.main import main; main()"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stderr.strip().splitlines()[-1]), p.stdout


@pytest.mark.slow
def test_importing_the_query_command_loads_no_library():
    code = f"import json, sys; import pipeline.cli.query; print(json.dumps(sorted(m for m in {WATCHED!r} if m in sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    assert json.loads(out) == []
    assert _run("query", "--help")[0] == []


@pytest.mark.slow
def test_a_query_of_the_tables_loads_no_arrow(synth_run, tmp_path):
    run = synth_run(seed=3)
    wh = str(run.wh.path)
    files = sorted((run.wh.path / "raw" / "task_states").glob("*.parquet"))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)

    loaded, out = _run("query", "select count(*) as n from task_states", "-w", wh)
    assert loaded == ["duckdb", "rich"]
    assert f" {rows} " in out

    loaded, out = _run("query", "select count(*) as n from task_states", "-f", "csv", "-w", wh)
    assert "rich" not in loaded
    assert out.splitlines() == ["n", str(rows)]

    (tmp_path / "empty").mkdir()  # a warehouse folder with no runs yet
    assert _run("query", "select 1", "-w", str(tmp_path / "empty"))[0] == ["duckdb", "rich"]
    # the commit records (the runs view) are read by Arrow, as before
    loaded, out = _run("query", "select count(*) from task_states join runs using (run_id)", "-w", wh)
    assert "pyarrow" in loaded and f" {rows} " in out

    # a table whose name the query builds is not among the views it names: it runs again with all
    from pipeline.outputs.query import query

    assert query(run.wh, "select count(*) from query_table('task_' || 'states')").rows == [(rows,)]


def test_a_query_gets_the_views_it_names_or_every_one():
    assert named_views('select * from OP_SUMMARY o join "runs" r using (run_id)') == {"op_summary", "runs"}
    assert named_views("select * from query_table('task_states')") == {"task_states"}
    every = named_views("select table_name from information_schema.tables")
    assert {"op_summary", "task_states", "runs"} <= every
    assert named_views("select 1") == set()


def test_the_query_formats_are_the_row_formats_and_table():
    assert FORMATS == ("table",) + ROW_FORMATS


def test_rows_are_the_values_arrow_gives_whatever_the_types(tmp_path):
    """Rows of plain types come from DuckDB without Arrow, the others through Arrow: either
    way each value is the one Arrow gives (what `query` showed before), the head is kept and
    the rest counted."""
    import duckdb

    from pipeline.outputs.query import query
    from pipeline.warehouse.store import Warehouse

    wh = Warehouse(tmp_path / "wh")
    plain = (
        "select i, i::DOUBLE / 3 AS d, 'x' || i AS s, i % 2 = 0 AS b, 1.25::DECIMAL(10,3) AS m, DATE '2024-01-02' AS day,"
        " make_timestamptz(1700000000000000 + i) AS t, [i, NULL] AS l, {'k': i} AS st, NULL AS n from range(2500) r(i)"
    )
    other = "select INTERVAL (i) DAY AS iv, MAP {'a': i} AS mp, TIMESTAMP_NS '2024-01-02 03:04:05.123456789' AS ns from range(3) r(i)"
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for sql, n in ((plain, 2500), (other, 3)):
        want = [tuple(r.values()) for r in con.sql(sql).to_arrow_table().to_pylist()]
        every = query(wh, sql)
        assert every.rows == want and every.total_rows == n
        head = query(wh, sql, limit=2)
        assert head.rows == want[:2] and head.total_rows == n
        assert head.columns == con.sql(sql).columns
