"""Command-line inputs that once ended in an internal error, the wrong exit code or a silent
empty answer: each is now a one-line error naming what is wrong, with exit code 2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.errors import ExitCode

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"

pytestmark = pytest.mark.slow  # ingests and builds the sample dump


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    """A warehouse of the sample run, built, and one of it ingested only."""
    from pipeline.synth.hiprof import HiprofConfig, generate

    base = tmp_path_factory.mktemp("inputs")
    generate(
        base / "other", HiprofConfig(inferences=1, seed=5, start_us=1_767_312_000_000_000)
    )  # for compare
    assert _invoke("run", SAMPLE, base / "other", "-w", base / "wh").exit_code == 0
    assert _invoke("ingest", SAMPLE / "resnet50_2dev", "-w", base / "ingested").exit_code == 0
    return base


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _usage_error(r, *needles: str) -> str:
    """The one-line error of exit code 2, holding every needle."""
    assert r.exit_code == ExitCode.USAGE, (r.exit_code, r.output)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profetl: error: "), r.stderr
    assert "internal error" not in lines[0] and all(n in lines[0] for n in needles), lines[0]
    return lines[0]


WRITERS = {
    "export": ["export", "task_scheduler", "--format", "csv"],
    "query": ["query", "select 1 as x", "--format", "csv"],
    "compare": ["compare", "latest", "--against", "20260101T000000-36f674aa", "--format", "csv"],
    "trend": ["trend", "run:aicore_time", "--format", "csv"],
    "timeline": ["timeline", "latest"],
    "report": ["report", "latest"],
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_an_empty_or_folder_out_is_a_usage_error(wh, command, tmp_path):
    """--out '' (it raised ValueError: an empty name) and --out naming a folder (the error
    named a hidden temporary file)."""
    args = [*WRITERS[command], "-w", wh / "wh"]
    _usage_error(_invoke(*args, "--out", ""), "--out ''", "name of a file")
    (tmp_path / "folder").mkdir()
    _usage_error(_invoke(*args, "--out", tmp_path / "folder"), f"{tmp_path / 'folder'}: it is a folder")
    assert list((tmp_path / "folder").iterdir()) == []


def test_site_refuses_an_empty_out(wh, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (it wrote the site into the current folder)
    _usage_error(_invoke("site", "--out", "", "-w", wh / "wh"), "--out ''")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("age", ["1000000d", "99999999h", "99999999999999999999999w"])
def test_an_age_before_year_one_is_a_usage_error(wh, age):
    """--since of an age older than the calendar (it raised OverflowError)."""
    _usage_error(_invoke("runs", "--since", age, "-w", wh / "wh"), repr(age), "an age of at most")


def test_query_of_a_file_not_utf8_or_missing_and_of_no_warehouse(wh, tmp_path):
    bad = tmp_path / "bad.sql"
    bad.write_bytes(b"select \xff 1")
    _usage_error(_invoke("query", f"@{bad}", "-w", wh / "wh"), str(bad), "byte offset 7")
    _usage_error(_invoke("query", f"@{tmp_path / 'none.sql'}", "-w", wh / "wh"), "cannot read")
    # no warehouse there: an error as every other reader gives, not an answer of no tables
    _usage_error(_invoke("query", "select 1", "-w", tmp_path / "nowh"), "no warehouse at")


@pytest.mark.parametrize("limit, needle", [("1KB", "too small for DuckDB"), ("-1GB", "positive size")])
def test_a_memory_limit_duckdb_cannot_use_is_a_usage_error(wh, limit, needle, tmp_path):
    """1KB (DuckDB's OutOfMemoryException was an internal error) and -1GB (DuckDB took it as
    its own default, 80 % of the memory, silently)."""
    shutil.copytree(wh / "wh", tmp_path / "wh")
    _usage_error(
        _invoke("build", "--all", "--memory-limit", limit, "-w", tmp_path / "wh"), repr(limit), needle
    )


def test_a_mart_of_a_run_not_built_is_an_error_not_an_empty_table(wh, tmp_path):
    """show and export of an ingested run's marts said nothing and showed or wrote no rows;
    its raw tables are there and export as before."""
    msg = "is ingested but not built: `profetl build "
    _usage_error(_invoke("show", "latest", "task_scheduler", "-w", wh / "ingested"), msg)
    _usage_error(_invoke("show", "latest", "-w", wh / "ingested"), msg)
    _usage_error(_invoke("export", "op_summary", "--out", tmp_path / "o.csv", "-w", wh / "ingested"), msg)
    r = _invoke("export", "task_states", "--out", tmp_path / "s.csv", "-w", wh / "ingested")
    assert r.exit_code == 0 and len((tmp_path / "s.csv").read_text().splitlines()) > 100, r.output


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--slice-bytes", "-1"], "--slice-bytes -1: give 1 or more"),  # it wrote a dump of no slices
        (["--devices", "-1"], "--devices -1: give 1 or more"),  # it wrote a dump of no devices
        (["--devices", "0"], "--devices 0: give 1 or more"),
        (["--drop-complete", "-1"], "--drop-complete -1: give 0 or more"),
        (["--devices", "100000"], "--devices 100000: at most 64"),  # it wrote GBs until killed
    ],
)
def test_synth_refuses_counts_no_dump_has(args, needle, tmp_path):
    _usage_error(_invoke("synth", *args, tmp_path / "d"), needle)
    assert not (tmp_path / "d").exists()


def test_synth_checks_its_truth_file_before_writing_the_dump(tmp_path):
    """--truth naming a folder failed after the dump was written, so the same command then
    failed on the half-made dump's folder."""
    _usage_error(_invoke("synth", "--truth", tmp_path, tmp_path / "d"), "it is a folder")
    assert not (tmp_path / "d").exists()


def test_threads_beyond_the_cap_are_refused_before_any_work(wh, tmp_path):
    """--threads 100000: DuckDB started every thread and the build ran for minutes."""
    _usage_error(_invoke("build", "--all", "--threads", "100000", "-w", wh / "wh"), "at most 1024")


def test_a_split_export_warns_of_parts_an_earlier_split_left(wh, tmp_path):
    """--max-rows 1 then --max-rows 2 into one name: the parts the second export did not write
    are named in a warning (a reader of name-*.csv would take their rows too)."""
    out = tmp_path / "m.csv"
    first = _invoke("export", "task_scheduler", "--max-rows", "1", "--out", out, "-w", wh / "wh")
    assert first.exit_code == 0 and "warning" not in first.stderr, first.output
    rows = len(list(tmp_path.glob("m-*.csv")))
    assert rows > 2  # (one file per row)
    second = _invoke("export", "task_scheduler", "--max-rows", "2", "--out", out, "-w", wh / "wh")
    written = -(-rows // 2)
    assert second.exit_code == 0, second.output
    assert f"{rows - written} file(s) from an earlier export" in second.stderr
    assert f"m-{written + 1:04d}.csv to m-{rows:04d}.csv" in second.stderr


@pytest.mark.parametrize(
    "args, needles",
    [
        (["bogus"], ["No such command 'bogus'", "(see `profetl --help`)"]),
        (["runs", "--bogus"], ["No such option: --bogus", "(see `profetl runs --help`)"]),
        (["show", "--limit", "abc"], ["'--limit'", "(see `profetl show --help`)"]),
        (["run"], ["Missing argument", "(see `profetl run --help`)"]),
    ],
)
def test_a_command_line_the_parser_refuses_is_one_line(args, needles):
    """Click's usage block (Usage, Try, a blank line, Error) was four lines on standard error."""
    _usage_error(_invoke(*args), *needles)


def test_profetl_alone_still_shows_the_help():
    r = _invoke()
    assert r.output.startswith("Usage: profetl [OPTIONS] COMMAND") and "synth" in r.output
