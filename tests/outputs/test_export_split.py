"""CSV exports and the spreadsheet row limit: a warning when a file has more rows than a sheet
opens, and --max-rows N splitting the rows into numbered files, each with the header, written
all at once or not at all. The limit is patched down (formats.SPREADSHEET_ROWS) so that a small
run crosses it; row counts come from the events the generator wrote."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.errors import UsageError
from pipeline.jobs.runner import ingest_dump
from pipeline.outputs import formats
from pipeline.outputs.export import export_table
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import fail_on_call

pytestmark = pytest.mark.slow  # ingests and builds a whole dump (docs/testing.md)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    truth = generate(root / "dump", HiprofConfig(devices=2, seed=11))
    wh = Warehouse(root / "wh")
    with wh.writer():
        o = ingest_dump(wh, root / "dump")
    assert o.status == "built", o.error
    # op_summary: one row per complete task instance
    return wh, o.run_id, sum(i.complete_ns is not None for i in truth.instances)


def read(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_max_rows_splits_into_numbered_files_with_the_header(run, tmp_path):
    wh, run_id, n = run
    whole = tmp_path / "whole.csv"
    assert export_table(wh, "op_summary", [run_id], "csv", str(whole)).rows == n
    rows = read(whole)
    assert len(rows) == n + 1 and n > 20
    done = export_table(wh, "op_summary", [run_id], "csv", str(tmp_path / "op.csv"), max_rows=7)
    k = -(-n // 7)
    names = [f"op-{i:04d}.csv" for i in range(1, k + 1)]
    assert [p.name for p, _ in done.files] == names and done.rows == n and done.warnings == []
    assert sorted(p.name for p in tmp_path.glob("op-*.csv")) == names
    got = []
    for i, name in enumerate(names):
        part = read(tmp_path / name)
        assert part[0] == rows[0]
        assert len(part) - 1 == (7 if i < k - 1 else n - 7 * (k - 1)) == done.files[i][1]
        got += part[1:]
    assert got == rows[1:]  # the files one after another are the whole export
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_csv_past_the_spreadsheet_limit_is_written_with_a_warning(run, tmp_path, monkeypatch):
    wh, run_id, n = run
    monkeypatch.setattr(formats, "SPREADSHEET_ROWS", n)  # n rows and a header: one line too many
    out = tmp_path / "big.csv"
    done = export_table(wh, "op_summary", [run_id], "csv", str(out))
    assert len(read(out)) == n + 1  # written whole all the same
    (warning,) = done.warnings
    assert str(out) in warning and f"{n:,} rows" in warning and "drops the last 1 rows" in warning
    assert f"--max-rows {n - 1}" in warning
    # split into files a sheet opens whole: no warning; files one row too long: one warning each
    assert (
        export_table(wh, "op_summary", [run_id], "csv", str(tmp_path / "s.csv"), max_rows=n - 1).warnings
        == []
    )
    monkeypatch.setattr(formats, "SPREADSHEET_ROWS", n // 2)
    done = export_table(wh, "op_summary", [run_id], "csv", str(tmp_path / "t.csv"), max_rows=n // 2)
    assert len(done.warnings) == sum(rows == n // 2 for _, rows in done.files) >= 2
    # under the limit, or not CSV: no warning
    monkeypatch.setattr(formats, "SPREADSHEET_ROWS", n + 1)
    assert export_table(wh, "op_summary", [run_id], "csv", str(out)).warnings == []
    monkeypatch.setattr(formats, "SPREADSHEET_ROWS", 2)
    assert export_table(wh, "op_summary", [run_id], "json", str(tmp_path / "x.json")).warnings == []


def test_the_command_prints_the_warning_on_stderr(run, tmp_path, monkeypatch):
    wh, run_id, n = run
    monkeypatch.setattr(formats, "SPREADSHEET_ROWS", 10)
    out = tmp_path / "op.csv"
    r = CliRunner().invoke(
        app, ["export", "op_summary", "--run", run_id, "--out", str(out), "-w", str(wh.path)]
    )
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith("profetl: warning: ") and "--max-rows 9" in r.stderr
    r = CliRunner().invoke(
        app,
        ["export", "op_summary", "--run", run_id, "--max-rows", "9", "--out", str(out), "-w", str(wh.path)],
    )
    assert r.exit_code == 0, r.output
    assert "warning" not in r.stderr and f"wrote {n} row(s)" in r.stderr
    assert len(list(tmp_path.glob("op-*.csv"))) == -(-n // 9)
    r = CliRunner().invoke(app, ["export", "op_summary", "--run", run_id, "-w", str(wh.path)])
    assert r.exit_code == 0 and "warning" in r.stderr  # standard output is warned about too
    for args in (
        ["--max-rows", "9"],
        ["--max-rows", "0", "--out", str(out)],
        ["--max-rows", "9", "--format", "json", "--out", str(out)],
    ):
        r = CliRunner().invoke(app, ["export", "op_summary", "--run", run_id, *args, "-w", str(wh.path)])
        assert r.exit_code == 2 and "--max-rows" in r.stderr, (args, r.output)


def test_a_split_that_fails_leaves_no_file(run, tmp_path, monkeypatch):
    wh, run_id, _ = run
    fail_on_call(monkeypatch, formats, "_csv_records")
    with pytest.raises(OSError):
        export_table(wh, "op_summary", [run_id], "csv", str(tmp_path / "op.csv"), max_rows=5)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UsageError):
        export_table(wh, "op_summary", [run_id], "csv", str(tmp_path / "missing" / "op.csv"), max_rows=5)
