"""Exports and query outputs stream: rows go out batch by batch, runs in the order asked for,
each run's rows in the order its part file holds them; a retried read rewrites a file from the
start and never repeats rows on standard output.

The expected rows are read from the runs' part files with pyarrow, not through DuckDB."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import QueryFailed
from pipeline.outputs import export, query
from pipeline.outputs.formats import csv_cell, json_value
from tests.helpers.history import build_history
from tests.helpers.warehouse_checks import own_part_file

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

BATCH = 7  # rows per batch in these tests: every run's table spans several batches


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    wh, nights = build_history(
        tmp_path_factory.mktemp("stream"), [{"inferences": 3}, {"inferences": 4, "seed": 5}]
    )
    return wh, [n.run_id for n in nights]


def _expected(wh, table: str, run_ids: list[str]) -> list[dict]:
    rows = []
    for run_id in run_ids:
        run = wh.run_index().run_record(run_id)
        t = pq.read_table(own_part_file(wh, "marts", table, run_id, run["build_id"]))
        first = {"run_id": run_id}
        if len(run_ids) > 1:  # an export of several runs: each run's collection time follows its id
            first["collected_at"] = datetime.fromtimestamp(run["collection_start_us"] / 1e6, UTC)
        rows += [first | r for r in t.to_pylist()]
    return rows


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_of_two_runs_streams_them_in_the_order_asked(two_runs, tmp_path, monkeypatch, fmt):
    wh, run_ids = two_runs
    order = run_ids[::-1]  # not the order of ingestion
    monkeypatch.setattr(export, "BATCH_ROWS", BATCH)
    out = tmp_path / f"op_summary.{fmt}"
    n = export.export(wh, "op_summary", order, fmt, str(out), headers="snake")
    want = _expected(wh, "op_summary", order)
    assert n == len(want) > 4 * BATCH
    names = list(want[0])
    if fmt == "parquet":
        f = pq.ParquetFile(out)
        assert max(f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)) <= BATCH
        assert f.read().to_pylist() == want
    elif fmt == "csv":
        with open(out, newline="", encoding="utf-8") as fh:
            got = list(csv.reader(fh))
        assert got[0] == names
        assert got[1:] == [[csv_cell(r[k]) for k in names] for r in want]
    else:
        got = [json.loads(line) for line in out.read_text().splitlines()]
        assert got == [{k: json_value(v) for k, v in r.items()} for r in want]


def test_query_output_is_written_in_batches(two_runs, tmp_path, monkeypatch):
    wh, run_ids = two_runs
    monkeypatch.setattr(query, "BATCH_ROWS", BATCH)
    out = tmp_path / "q.parquet"
    sql = "select run_id, device_id, start_ns, dur_ns from op_summary order by run_id, device_id, start_ns, dur_ns"
    n = query.query_to(wh, sql, "parquet", str(out))
    f = pq.ParquetFile(out)
    assert f.metadata.num_row_groups > 1
    assert max(f.metadata.row_group(i).num_rows for i in range(f.metadata.num_row_groups)) <= BATCH
    want = sorted(
        (r["run_id"], r["device_id"], r["start_ns"], r["dur_ns"])
        for r in _expected(wh, "op_summary", run_ids)
    )
    assert n == len(want)
    assert [tuple(r.values()) for r in f.read().to_pylist()] == want


def _flaky(schema: pa.Schema):
    """A select whose first read fails after two rows, as when a writer removes a part file
    the views listed; the second read gives all three rows."""
    calls = []

    def select(con):
        calls.append(1)

        def batches():
            yield pa.record_batch([pa.array([1, 2])], schema=schema)
            if len(calls) == 1:
                raise duckdb.IOException("part file gone")
            yield pa.record_batch([pa.array([3])], schema=schema)

        return schema, batches()

    return select


def test_a_retried_read_rewrites_the_file_from_the_start(two_runs, tmp_path):
    wh, _ = two_runs
    schema = pa.schema([("x", pa.int64())])
    out = tmp_path / "x.csv"
    assert query.write_consistent(wh, _flaky(schema), "csv", str(out)) == 3
    assert out.read_text() == "x\n1\n2\n3\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.csv"]  # no temporary file left


def test_standard_output_is_not_written_twice(two_runs, capsys):
    wh, _ = two_runs
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(QueryFailed, match="run the command again"):
        query.write_consistent(wh, _flaky(schema), "csv", "-")
    assert capsys.readouterr().out == "x\n1\n2\n"  # what was written stays; nothing is repeated


def test_show_reads_the_head_of_a_table_not_all_of_it(two_runs, monkeypatch):
    from pipeline.outputs import sections

    wh, run_ids = two_runs
    run_id = run_ids[1]
    rows = [r for r in _expected(wh, "op_summary", [run_id])]
    devices = sorted({r["device_id"] for r in rows})
    monkeypatch.setattr(export, "BATCH_ROWS", BATCH)
    read = []

    def counting(con, sql, ids):
        schema, batches = export.stream_runs(con, sql, ids)
        return schema, (read.append(b.num_rows) or b for b in batches)

    monkeypatch.setattr(sections, "stream_runs", counting)
    got = sections.sections(wh, run_id, "op_summary", limit=2, hide_empty_columns=False)
    assert [s.total_rows for s in got] == [sum(r["device_id"] == d for r in rows) for d in devices]
    for section, d in zip(got, devices):
        head = [r for r in rows if r["device_id"] == d][:2]
        assert section.rows == [
            [sections.cell(r[k]) for k in r if k not in ("run_id", "device_id")] for r in head
        ]
    assert sum(read) < len(rows)  # stopped once every device had its rows


def test_query_keeps_the_head_and_counts_the_rest(two_runs, monkeypatch):
    wh, run_ids = two_runs
    monkeypatch.setattr(query, "BATCH_ROWS", BATCH)
    want = sorted((r["run_id"], r["start_ns"], r["dur_ns"]) for r in _expected(wh, "op_summary", run_ids))
    sql = "select run_id, start_ns, dur_ns from op_summary order by all"
    head = query.query(wh, sql, limit=10)
    assert head.total_rows == len(want) and head.rows == want[:10]
    every = query.query(wh, sql)
    assert every.total_rows == len(want) and every.rows == want


def test_query_table_says_how_many_rows_it_left_out(two_runs):
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    wh, run_ids = two_runs
    n = len(_expected(wh, "op_summary", run_ids))
    r = CliRunner().invoke(
        app, ["query", "select start_ns from op_summary", "--limit", "5", "-w", str(wh.path)]
    )
    assert r.exit_code == 0, r.output
    assert f"{n - 5} more row(s)" in " ".join(r.stdout.split())
    assert sum(1 for line in r.stdout.splitlines() if line.strip("│ ").isdigit()) == 5
