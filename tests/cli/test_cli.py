"""The command line over the library: every command documented, outputs equal the library's."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer.main
from typer.testing import CliRunner

from pipeline.cli.main import COMMANDS, app
from pipeline.outputs.export import fetch

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args, input=None):
    return runner.invoke(app, [str(a) for a in args], input=input)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A warehouse with one two-device synthetic run, made through the CLI."""
    d = tmp_path_factory.mktemp("cli")
    dump, wh = d / "dump", d / "wh"
    r = invoke("synth", "--layout", "hiprof", "--devices", "2", "--drop-complete", "1", dump)
    assert r.exit_code == 0, r.output
    r = invoke("run", dump, "--warehouse", wh)
    assert r.exit_code == 0, r.output
    return dump, wh


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_with_example_and_is_in_readme(name):
    r = invoke(name, "--help")
    assert r.exit_code == 0
    assert "Example:" in r.output, f"{name} --help has no example"
    readme = (REPO / "README.md").read_text()
    assert f"profetl {name}" in readme, f"README does not document `profetl {name}`"


def test_readme_names_the_commands_without_warehouse():
    """README's sentence on the options every command shares names the commands that lack
    --warehouse (a command added without it has to be named there too)."""
    group = typer.main.get_command(app)
    ctx = group.context_class(group)
    without = [
        n for n in COMMANDS if not any("--warehouse" in p.opts for p in group.get_command(ctx, n).params)
    ]
    assert without, "every command takes --warehouse: say so in README.md and drop this exception"
    readme = " ".join((REPO / "README.md").read_text().split())
    names = " and ".join(f"`{n}`" for n in without)
    assert f"Every command but {names} " in readme and "takes `--warehouse/-w`" in readme


def test_ingest_help_names_every_layout_generation():
    help_text = " ".join(invoke("ingest", "--help").stdout.split())
    for layout in ("result_dir", "PROF_*", "exported"):
        assert layout in help_text, f"ingest --help does not name {layout}"


@pytest.mark.slow
def test_run_twice_is_a_no_op(built):
    dump, wh = built
    r = invoke("run", dump, "--warehouse", wh, "--json")
    assert r.exit_code == 0
    assert [o["status"] for o in json.loads(r.stdout)] == ["unchanged"]


@pytest.mark.slow
def test_runs_json_lists_the_run(built):
    _, wh = built
    r = invoke("runs", "--warehouse", wh, "--json")
    runs = json.loads(r.stdout)
    assert len(runs) == 1 and runs[0]["status"] == "built" and runs[0]["devices"] == [0, 1]
    assert "task_scheduler" in runs[0]["tables_filled"]


@pytest.mark.slow
def test_show_prints_the_five_views(built):
    _, wh = built
    r = invoke("show", "latest", "--warehouse", wh)
    assert r.exit_code == 0, r.output
    for title in ("Runtime API calls", "Task Scheduler", "AI Core metrics", "AscendCL API", "top-down"):
        assert f"{title}" in r.stdout
    for header in ("Stream ID", "Time(%)", "Waiting(ns)", "Pending(ns)", "aicore_time(us)", "Infer ID"):
        assert header in r.stdout


@pytest.mark.slow
def test_export_csv_equals_library_rows(built, tmp_path):
    _, wh = built
    out = tmp_path / "ts.csv"
    r = invoke(
        "export", "task_scheduler", "--run", "latest", "--format", "csv", "--out", out, "--warehouse", wh
    )
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    from pipeline.warehouse.store import Warehouse

    w = Warehouse(wh)
    _, t = fetch(w, "task_scheduler", [w.run_index().resolve_run("latest")["run_id"]])
    lib = t.to_pylist()
    assert len(rows) == len(lib)
    assert list(rows[0])[:3] == ["Device", "Time(%)", "Time(ns)"]
    for got, exp in zip(rows, lib):
        assert int(got["Time(ns)"]) == exp["time_ns"] and int(got["Task ID"]) == exp["task_id"]
        assert got["Op Name"] == (exp["op_name"] or "")


@pytest.mark.slow
def test_export_parquet_keeps_contract_types(built, tmp_path):
    _, wh = built
    out = tmp_path / "ai.parquet"
    r = invoke("export", "ai_core_metrics", "--format", "parquet", "--out", out, "--warehouse", wh)
    assert r.exit_code == 0, r.output
    schema = pq.read_schema(out)
    assert str(schema.field("aicore_time_us").type) == "double"
    assert str(schema.field("task_id").type) == "int32"


@pytest.mark.slow
def test_export_to_stdout_and_snake_headers(built):
    _, wh = built
    r = invoke("export", "acl_api", "--headers", "snake", "--out", "-", "--warehouse", wh)
    assert r.stdout.splitlines()[0] == "device_id,api_name,api_type,start_ns,dur_us,pid,tid"


@pytest.mark.slow
def test_query_with_parameter_and_formats(built):
    _, wh = built
    sql = "select device_id, count(*) as n from task_states where device_id = $dev group by 1"
    r = invoke("query", sql, "--param", "dev=1", "--format", "json", "--warehouse", wh)
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert rows and rows[0]["device_id"] == 1
    r = invoke("query", "-", "--format", "csv", "--warehouse", wh, input="select count(*) as n from runs")
    assert r.stdout.splitlines() == ["n", "1"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "nope"], "no run 'nope'"),
        (["export", "no_such_table"], "no table named 'no_such_table'"),
        (["query", "select * from missing_table"], "missing_table"),
        (["export", "acl_api", "--format", "xlsx"], "format 'xlsx'"),
    ],
)
@pytest.mark.slow
def test_errors_are_one_line(built, args, message):
    _, wh = built
    r = invoke(*args, "--warehouse", wh)
    assert r.exit_code != 0
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.output


@pytest.mark.slow
def test_run_on_a_folder_without_dumps_fails_cleanly(tmp_path):
    (tmp_path / "empty").mkdir()
    r = invoke("run", tmp_path / "empty", "--warehouse", tmp_path / "wh")
    assert r.exit_code == 1
    assert "no dump found" in r.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "option", [("--memory-limit", "12"), ("--memory-limit", "lots"), ("--threads", "-1")]
)
def test_bad_build_settings_are_a_usage_error_before_any_work(built, tmp_path, option):
    dump, _ = built
    wh = tmp_path / "wh"
    r = invoke("run", dump, "--warehouse", wh, *option)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and option[1] in lines[0], r.stderr
    assert invoke("runs", "--warehouse", wh, "--json").stdout.strip() == "[]"  # nothing was ingested


@pytest.mark.slow
@pytest.mark.parametrize(
    "option", [("--memory-limit", "12"), ("--memory-limit", "lots"), ("--threads", "-1")]
)
def test_bad_settings_given_to_build_are_a_usage_error(built, tmp_path, option):
    """`build` checks the settings only when DuckDB refuses them: still one line, exit 2, run left ingested."""
    dump, _ = built
    wh = tmp_path / "wh"
    assert invoke("ingest", dump, "--warehouse", wh).exit_code == 0
    r = invoke("build", "--all", "--warehouse", wh, *option)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and option[1] in lines[0], r.stderr
    assert [run["status"] for run in json.loads(invoke("runs", "--warehouse", wh, "--json").stdout)] == [
        "ingested"
    ]


@pytest.mark.slow
def test_a_build_out_of_memory_names_the_limit_and_the_options(built, tmp_path):
    """DuckDB's own hints name its SQL settings; the one line says which profetl options to change,
    and the run is left ingested, not half built."""
    dump, _ = built
    wh = tmp_path / "wh"
    assert invoke("ingest", dump, "--warehouse", wh).exit_code == 0
    r = invoke("build", "--all", "--warehouse", wh, "--memory-limit", "2MB")
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Out of Memory" in lines[0] and "sql/" in lines[0], lines[0]
    assert (
        "memory limit is 1.9 MiB" in lines[0] and "--memory-limit" in lines[0] and "--threads" in lines[0]
    ), lines[0]
    runs = json.loads(invoke("runs", "--warehouse", wh, "--json").stdout)
    assert [r["status"] for r in runs] == ["ingested"]


@pytest.mark.slow
def test_timeline_takes_the_memory_limit_and_threads(built, tmp_path):
    _, wh = built
    r = invoke("timeline", "--warehouse", wh, "--memory-limit", "2MB", "--out", tmp_path / "t.json")
    assert r.exit_code == 1 and "memory limit is 1.9 MiB" in r.stderr, r.output
    assert not (tmp_path / "t.json").exists()
    r = invoke(
        "timeline",
        "--warehouse",
        wh,
        "--memory-limit",
        "64MB",
        "--threads",
        "1",
        "--out",
        tmp_path / "t.json",
    )
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


@pytest.mark.parametrize(
    "memory, limit",
    [
        (8 * 2**30, "320MB"),  # 1/32 is 268 MB: the floor
        (24_000_000_000, "750MB"),  # 1/32
        (128 * 2**30, "2000MB"),  # 1/32 is 4.3 GB: the cap
        (None, "320MB"),  # memory unknown: the floor
    ],
)
def test_default_memory_limit_is_a_share_of_the_machine(monkeypatch, memory, limit):
    from pipeline import limits

    monkeypatch.setattr(limits, "machine_memory", lambda: memory)
    assert limits.default_memory_limit() == limit
    assert limits.memory_limit(None) == limit and limits.memory_limit("1GB") == "1GB"


def test_a_container_limit_below_the_machine_counts(monkeypatch, tmp_path):
    from pipeline import limits

    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    (tmp_path / "low").write_text("1000000000\n")
    (tmp_path / "unlimited").write_text("max\n")
    monkeypatch.setattr(
        limits, "_cgroup_limit_files", lambda: [str(tmp_path / "unlimited"), str(tmp_path / "low")]
    )
    assert limits.machine_memory() == min(1_000_000_000, physical)
    monkeypatch.setattr(
        limits, "_cgroup_limit_files", lambda: [str(tmp_path / "unlimited"), str(tmp_path / "none")]
    )
    assert limits.machine_memory() == physical


@pytest.mark.slow
def test_run_says_the_memory_limit_it_chose_for_the_machine(built, tmp_path, monkeypatch):
    """Without --memory-limit a build takes 1/32 of the machine's memory: 500 MB of a 16 GB
    machine (DuckDB shows it as 476.8 MiB), said in run's output and in every build's JSON."""
    from pipeline import limits
    from pipeline.jobs.build import connect

    monkeypatch.setattr(limits, "machine_memory", lambda: 16_000_000_000)
    dump, _ = built
    r = invoke("run", dump, "--warehouse", tmp_path / "wh")
    assert r.exit_code == 0, r.output
    assert "DuckDB memory limit 500MB (1/32 of this machine's 14.9 GiB)" in r.stdout, r.stdout
    r = invoke("build", "--all", "--warehouse", tmp_path / "wh", "--json")
    assert [b["memory_limit"] for b in json.loads(r.stdout)] == ["500MB"], r.stdout
    r = invoke("build", "--all", "--warehouse", tmp_path / "wh", "--memory-limit", "1GB")
    assert "DuckDB memory limit 1GB (--memory-limit)" in r.stdout, r.stdout
    con = connect(tmp_path)
    assert con.execute("select current_setting('memory_limit')").fetchone()[0] == "476.8 MiB"
    con.close()
