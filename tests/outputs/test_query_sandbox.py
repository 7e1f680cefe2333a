"""`profetl query` cannot write, install or load anything, whatever the statement; with
--confine it cannot read outside the warehouse either."""

from __future__ import annotations

import pytest

from pipeline.errors import QueryFailed
from pipeline.jobs.runner import run_roots
from pipeline.outputs.query import query
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import connect
from tests.helpers.warehouse_checks import profetl


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    base = tmp_path_factory.mktemp("sandbox")
    generate(base / "dump", HiprofConfig(inferences=1, seed=3))
    w = Warehouse(base / "wh")
    with w.writer():
        [o] = run_roots(w, [base / "dump"])
    assert o.status == "built"
    (base / "outside.txt").write_text("name\nsecret\n")
    return w


def _files(root):
    return sorted(p for p in root.rglob("*") if p.is_file())


# statements that write a file, fetch or load code, or change the settings: each refused
ATTACKS = [
    "EXPLAIN ANALYZE COPY (select 42) TO '{target}'",
    "explain analyse copy (select 42) to '{target}' (format parquet)",
    "EXPLAIN /* c */ ANALYZE (FORMAT json) COPY (select 42) TO '{target}'",
    "EXPLAIN ANALYZE INSTALL httpfs",
    "EXPLAIN ANALYZE LOAD httpfs",
    "EXPLAIN EXPLAIN ANALYZE COPY (select 42) TO '{target}'",
    "COPY (select 42) TO '{target}'",
    "INSTALL httpfs",
    "ATTACH '{target}' AS x",
    "EXPLAIN ANALYZE ATTACH '{target}' AS x",
    "SET enable_external_access = true",
    "select 1; COPY (select 42) TO '{target}'",
    "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
]


@pytest.mark.parametrize("sql", ATTACKS)
def test_writing_statements_are_refused(wh, sql, tmp_path):
    record = wh.index_file
    before = {p: p.read_bytes() for p in _files(wh.path)}
    for target in (record, tmp_path / "x.csv"):
        with pytest.raises(QueryFailed):
            query(wh, sql.format(target=target))
        assert not (tmp_path / "x.csv").exists()
    assert {p: p.read_bytes() for p in _files(wh.path)} == before


@pytest.mark.parametrize(
    "sql",
    [
        "select count(*) from read_csv('https://example.com/x.csv')",  # would fetch httpfs and the URL
        "select * from 's3://bucket/x.parquet'",
        "select count(*) from read_json('https://example.com/x.json')",
    ],
)
def test_network_reads_are_refused(wh, sql):
    with pytest.raises(QueryFailed, match="disabled by configuration|Permission"):
        query(wh, sql)


def test_the_engine_refuses_what_the_statement_check_might_miss(wh, tmp_path):
    """The connection itself, without the statement check: no install, load, URL or SET."""
    con = connect(wh, sandbox=True)
    try:
        for sql in (
            "INSTALL httpfs FROM 'http://127.0.0.1:9/'",
            "LOAD httpfs",
            "SET enable_external_access = true",
            "SET allowed_directories = ['/']",
            "SET lock_configuration = false",
            "select * from read_text('http://127.0.0.1:9/x')",
        ):
            with pytest.raises(Exception, match="disabled|locked|Permission"):
                con.execute(sql)
    finally:
        con.close()
    confined = connect(wh, sandbox=True, confine=True)
    try:
        with pytest.raises(Exception, match="disabled"):
            confined.execute(f"COPY (select 1) TO '{tmp_path / 'y.csv'}'")
        with pytest.raises(Exception, match="disabled|Permission"):
            confined.execute("INSTALL httpfs")
        assert not (tmp_path / "y.csv").exists()
    finally:
        confined.close()


def test_explain_of_a_select_still_works(wh):
    assert query(wh, "EXPLAIN ANALYZE select count(*) from task_states").total_rows >= 1
    assert query(wh, "explain select 1").total_rows >= 1


@pytest.mark.parametrize("reader", ["read_text('{f}')", "read_blob('{f}')", "read_csv('{f}')", "glob('{f}')"])
def test_confine_keeps_file_readers_in_the_warehouse(wh, reader):
    outside = wh.path.parent / "outside.txt"
    sql = f"select count(*) from {reader.format(f=outside)}"
    assert query(wh, sql).rows == [(1,)]  # by default the user's own files can be read
    with pytest.raises(QueryFailed, match="disabled by configuration"):
        query(wh, sql, confine=True)
    for escape in (wh.path / ".." / "outside.txt", "/etc/hostname"):
        with pytest.raises(QueryFailed, match="disabled by configuration"):
            query(wh, f"select count(*) from {reader.format(f=escape)}", confine=True)
    inside = wh.index_file
    if not reader.startswith("read_csv"):
        assert query(wh, f"select count(*) from {reader.format(f=inside)}", confine=True).rows == [(1,)]
    # the warehouse's own views still read under confinement
    assert query(wh, "select count(*) > 0 from task_states", confine=True).rows == [(True,)]


def test_cli_confine_option_and_env(wh):
    outside = wh.path.parent / "outside.txt"
    sql = f"select * from read_text('{outside}')"
    assert profetl("query", sql, "-w", wh.path, "-f", "csv").returncode == 0
    for extra, env in ((["--confine"], None), ([], {"PROFETL_QUERY_CONFINE": "1"})):
        p = profetl("query", sql, "-w", wh.path, "-f", "csv", *extra, env=env)
        assert p.returncode == 1 and "disabled by configuration" in p.stderr and "Traceback" not in p.stderr
    p = profetl("query", "EXPLAIN ANALYZE COPY (select 42) TO 'x.csv'", "-w", wh.path)
    assert p.returncode == 1 and "not EXPLAIN COPY" in p.stderr
