"""runs and show over several runs; progress only on a terminal; completion; --json where output is data."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from pipeline.cli import common
from pipeline.cli.main import COMMANDS, app
from tests.helpers.history import build_history

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    return build_history(
        tmp_path_factory.mktemp("feel"), [{"seed": 8, "devices": 2}, {"seed": 9, "devices": 2}]
    )


def test_runs_lists_collection_time_workload_and_filters(two):
    wh, nights = two
    r = invoke("runs", "--warehouse", wh.path, "--json")
    rows = json.loads(r.stdout)
    assert [x["run_id"] for x in rows] == [n.run_id for n in nights]
    assert rows[1]["collected_at"].startswith("2026-01-02T00:00:00")
    assert rows[0]["workload"] == "hiprof_result_dir/Ascend310/resnet50"
    assert "metadata_json" not in rows[0] and rows[0]["status"] == "built" and rows[0]["issues"] == 0
    r = invoke("runs", "--warehouse", wh.path, "--since", "2026-01-02", "--json")
    assert [x["run_id"] for x in json.loads(r.stdout)] == [nights[1].run_id]
    r = invoke("runs", "--warehouse", wh.path)
    assert r.exit_code == 0
    for header in (
        "Run ID",
        "Collected (UTC)",
        "Status",
        "Workload",
        "Chip",
        "Devices",
        "Records",
        "Issues",
        "Source",
    ):
        assert header in r.stdout


def test_runs_on_an_empty_warehouse(tmp_path):
    (tmp_path / "empty").mkdir()
    r = invoke("runs", "--warehouse", tmp_path / "empty")
    assert r.exit_code == 0 and "no runs" in r.stdout
    r = invoke("runs", "--warehouse", tmp_path / "empty", "--json")
    assert json.loads(r.stdout) == []


def test_show_one_device(two):
    wh, nights = two
    r = invoke("show", nights[0].run_id, "task_scheduler", "--device", "1", "--warehouse", wh.path, "--json")
    sections = json.loads(r.stdout)
    assert [s["table"] for s in sections] == ["task_scheduler"] and len(sections) == 1
    r = invoke("show", nights[0].run_id, "task_scheduler", "--device", "1", "--warehouse", wh.path)
    assert "Task Scheduler - device 1" in r.stdout and "device 0" not in r.stdout


def _on_a_terminal(*args) -> tuple[int, str, str]:
    """``profetl ARGS`` as a process whose stderr is a terminal (a pseudo-terminal) and stdout a
    pipe: exit code, stdout, what reached the terminal."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", *map(str, args)], stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    seen = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the process closed its end of the terminal
            break
        if not data:
            break
        seen.append(data)
    out = proc.stdout.read().decode()
    proc.wait()
    os.close(master)
    return proc.returncode, out, b"".join(seen).decode(errors="replace")


def test_progress_bar_only_on_a_terminal(tmp_path):
    from pipeline.synth.hiprof import HiprofConfig, generate

    generate(tmp_path / "d", HiprofConfig())
    r = invoke("run", tmp_path / "d", "--warehouse", tmp_path / "wh")
    assert r.exit_code == 0 and r.stderr == ""  # under cron: only the one-line outcome on stdout
    assert r.stdout.splitlines()[0].startswith("built")
    code, out, terminal = _on_a_terminal("build", "--all", "--warehouse", tmp_path / "wh")
    assert code == 0 and out.startswith("built"), (out, terminal)
    assert "steps" in terminal and "\x1b[" in terminal, (
        terminal
    )  # the bar (build steps done), drawn with terminal controls
    code, out, terminal = _on_a_terminal("build", "--all", "--json", "--warehouse", tmp_path / "wh")
    assert code == 0 and json.loads(out) and "steps" not in terminal, terminal  # --json: no bar


def test_run_id_and_table_completion(two):
    wh, nights = two
    ctx = SimpleNamespace(params={"warehouse": wh.path})
    assert common.complete_run(ctx, "") == ["latest"] + [n.run_id for n in nights]
    assert common.complete_run(ctx, nights[1].run_id[:10]) == [nights[1].run_id]
    assert common.complete_run(SimpleNamespace(params={"warehouse": "/nonexistent"}), "l") == ["latest"]
    assert common.complete_table("task_s") == ["task_scheduler", "task_states"]


DATA_COMMANDS = {
    "run",
    "ingest",
    "build",
    "runs",
    "drop",
    "check",
    "show",
    "synth",
    "report",
    "site",
}  # --format table|json
FORMAT_COMMANDS = {"export", "query"}  # --format csv|json|parquet
TWO_JSONS = {"compare", "trend"}  # --json: the whole result; --format json: its rows as JSON lines
JSON_ITSELF = {"timeline"}  # the output is a JSON trace


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_data_command_offers_json(name):
    assert name in DATA_COMMANDS | FORMAT_COMMANDS | TWO_JSONS | JSON_ITSELF, (
        f"decide how {name} prints data as JSON"
    )
    help_text = invoke(name, "--help").stdout
    if name not in JSON_ITSELF:  # both spellings on every command
        assert "--json" in help_text and "--format" in help_text and "json" in help_text


def test_json_and_format_json_are_one_option(tmp_path):
    """Every command that prints a table or JSON takes --format json and --json alike, with the
    same output; --json with another --format is a usage error."""
    wh = tmp_path / "wh"
    tiny = ["--layout", "hiprof", "--devices", "1", "--inferences", "1", "--tasks", "2"]
    a = invoke("synth", *tiny, tmp_path / "d", "--json")
    b = invoke("synth", *tiny, tmp_path / "e", "--format", "json")
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert json.loads(a.stdout) | {"out": ""} == json.loads(b.stdout) | {"out": ""}
    assert invoke("run", tmp_path / "d", "-w", wh).exit_code == 0
    run_id = json.loads(invoke("runs", "-w", wh, "--json").stdout)[0]["run_id"]
    same = [
        ["run", tmp_path / "d"],
        ["ingest", tmp_path / "d"],
        ["build"],
        ["runs"],
        ["check"],
        ["show", "latest", "task_scheduler"],
        ["report", "--out", tmp_path / "r.html"],
        ["query", "select 1 as x, 'a' as y"],
        ["export", "task_scheduler"],
    ]
    for args in same:
        by_flag = invoke(*args, "-w", wh, "--json")
        by_format = invoke(*args, "-w", wh, "--format", "json")
        assert by_flag.exit_code == by_format.exit_code == 0, (args, by_flag.output, by_format.output)
        assert by_flag.stdout == by_format.stdout and by_flag.stdout.strip(), args
        parsed = (
            [json.loads(line) for line in by_flag.stdout.splitlines()]
            if args[0] in FORMAT_COMMANDS
            else json.loads(by_flag.stdout)
        )  # JSON lines, or one JSON document
        assert isinstance(parsed, (list, dict)), args
    assert json.loads(invoke("query", "select 1 as x", "-w", wh, "--json").stdout) == {"x": 1}
    dropped = invoke("drop", run_id, "-w", wh, "--json")
    assert invoke("run", tmp_path / "d", "-w", wh).exit_code == 0
    assert dropped.stdout == invoke("drop", run_id, "-w", wh, "--format", "json").stdout != ""
    for args in (
        ["runs", "--json", "--format", "table"],
        ["query", "select 1", "--json", "--format", "csv"],
        ["export", "task_scheduler", "--json", "-f", "parquet"],
        ["runs", "--format", "csv"],
    ):
        r = invoke(*args, "-w", wh)
        assert r.exit_code == 2, (args, r.output)
        assert _one_error_line(r), args


def test_build_json_says_where_the_time_went(tmp_path):
    """Every staging, intermediate and mart SQL file is a step of its own in `build --json` (the benchmark
    prints the slowest ones, and the one where the build's memory peaked), and the steps
    account for no more than the whole build."""
    from pipeline.jobs.transforms import sql_files
    from pipeline.synth.hiprof import HiprofConfig, generate

    generate(tmp_path / "d", HiprofConfig())
    assert invoke("ingest", tmp_path / "d", "--warehouse", tmp_path / "wh").exit_code == 0
    r = invoke("build", "--warehouse", tmp_path / "wh", "--json")
    assert r.exit_code == 0, r.output
    (built,) = json.loads(r.stdout)
    steps = built["seconds_by_step"]
    expected = [
        f"{layer}/{f.name}" for layer in ("staging", "intermediate", "marts") for f in sql_files(layer)
    ]
    assert sorted(steps) == sorted(expected)
    assert all(s >= 0 for s in steps.values())
    assert sum(steps.values()) <= built["seconds"]
    # and where the memory peaked: the process's high-water mark after each step, in step order
    import resource

    marks = built["max_rss_bytes_by_step"]
    assert list(marks) == expected
    values = list(marks.values())
    assert values[0] > 0 and values == sorted(values)
    # no more than this process's peak as getrusage says it, but for the pages Linux has not
    # added to the process's count yet (a few hundred KiB a thread: the mark is kept lazily)
    slack = 4 * 2**20
    assert values[-1] <= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 + slack


def test_run_json_says_where_the_time_went(tmp_path):
    """`run --json` gives each dump's ingest (rows by table, seconds) and its build as `build
    --json` does (the benchmark times `profetl run` and splits it by these); a dump not read
    again has neither."""
    from pipeline.jobs.transforms import sql_files
    from pipeline.synth.hiprof import HiprofConfig, generate

    generate(tmp_path / "d", HiprofConfig())
    r = invoke("run", tmp_path / "d", "--warehouse", tmp_path / "wh", "--json")
    assert r.exit_code == 0, r.output
    (done,) = json.loads(r.stdout)
    (row,) = json.loads(invoke("runs", "--warehouse", tmp_path / "wh", "--json").stdout)
    assert done["ingest"]["seconds"] == row["ingest_seconds"] > 0
    assert done["build"]["seconds"] == row["build_seconds"] > 0
    assert sum(done["ingest"]["rows"][t] for t in ("api_calls", "task_runs")) > 0
    assert (
        sum(n for t, n in done["ingest"]["rows"].items() if t not in ("devices", "ingest_issues"))
        == row["records_decoded"]
    )
    expected = [
        f"{layer}/{f.name}" for layer in ("staging", "intermediate", "marts") for f in sql_files(layer)
    ]
    assert list(done["build"]["seconds_by_step"]) == expected == list(done["build"]["max_rss_bytes_by_step"])
    assert done["build"]["rows"]["op_summary"] > 0
    again = json.loads(invoke("run", tmp_path / "d", "--warehouse", tmp_path / "wh", "--json").stdout)
    assert [(d["status"], d["ingest"], d["build"]) for d in again] == [("unchanged", None, None)]


def test_starting_the_command_line_loads_no_decoder():
    """The whole CLI (help, completion) imports no decoder of the layout generations and no
    metadata models (pydantic): they load only when a dump is read (``profetl build`` or
    ``runs`` need none of them)."""
    import subprocess
    import sys

    code = (
        "import sys; from pipeline.cli.main import app; "
        "print(sorted(m for m in sys.modules if m.startswith('pipeline.readers.') and m.endswith('.reader')"
        " or m in ('pipeline.readers.metadata', 'pydantic')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


HEAVY = (
    "duckdb",
    "pipeline.jobs.build",
    "pipeline.synth.prof",
    "pipeline.analysis.compare",
    "pipeline.outputs.trace",
    "pipeline.readers.prof.reader",
    "pipeline.outputs.sections",
)


def _loaded_by(*args: str) -> list[str]:
    """The HEAVY modules a real ``profetl ARGS`` process had loaded when it exited."""
    import subprocess
    import sys

    code = (
        "import atexit, json, sys; "
        f"atexit.register(lambda: print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)); "
        f"sys.argv = ['profetl', *{list(args)!r}]; "
        "from pipeline.cli.main import main; main()"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stderr.strip().splitlines()[-1])


def test_a_command_loads_only_what_it_runs(tmp_path):
    """Ingesting loads no DuckDB and no build; building loads no decoder; neither loads another
    command's library, and `run` loads the report code only for --show (each start is 0.05-0.1 s
    shorter, bench/)."""
    from pipeline.synth.prof import ProfConfig, generate

    dump, wh = tmp_path / "dump", str(tmp_path / "wh")
    truth = generate(dump, ProfConfig(chip="ascend910b", inferences=2, tasks=4))
    root = str(dump / truth.root if truth.root else dump)
    assert _loaded_by("ingest", root, "-w", wh) == ["pipeline.readers.prof.reader"]
    assert _loaded_by("build", "-w", wh) == ["duckdb", "pipeline.jobs.build"]
    assert _loaded_by("ingest", "--help") == []
    assert _loaded_by("run", root, "-w", str(tmp_path / "wh2")) == [
        "duckdb",
        "pipeline.jobs.build",
        "pipeline.readers.prof.reader",
    ]
    assert "pipeline.outputs.sections" in _loaded_by("run", root, "-w", str(tmp_path / "wh2"), "--show")


def test_a_reader_that_goes_away_from_show_stops_it_quietly(tmp_path):
    """`profetl show --limit 0 | head`: the tables go out through rich, which on its own exits
    1 when the pipe closes; profetl's rule is still no message and 141."""
    import subprocess
    import sys

    from pipeline.errors import ExitCode
    from pipeline.synth.hiprof import HiprofConfig, generate

    generate(tmp_path / "d", HiprofConfig(inferences=40, tasks=20))
    assert invoke("run", tmp_path / "d", "--warehouse", tmp_path / "wh").exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline.cli", "show", "--limit", "0", "-w", str(tmp_path / "wh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.read(4) == b"Run "
    proc.stdout.close()  # hundreds of kilobytes of tables are still to come
    assert proc.wait(timeout=120) == ExitCode.PIPE_CLOSED == 141
    assert proc.stderr.read() == b""


def test_a_reader_that_goes_away_stops_the_output_quietly(tmp_path):
    """`profetl query ... | head`: once the pipe closes, no error line and no traceback, and the
    exit code of a tool stopped by SIGPIPE (141)."""
    import subprocess
    import sys

    from pipeline.errors import ExitCode

    (tmp_path / "wh").mkdir()  # a warehouse (with no runs): query asks for one
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "query",
            "select * from range(3000000)",
            "-w",
            str(tmp_path / "wh"),
            "--format",
            "csv",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.read(6) == b"range\n"
    proc.stdout.close()  # the reader goes away long before the rows end
    assert proc.wait(timeout=120) == ExitCode.PIPE_CLOSED == 141
    assert proc.stderr.read() == b""


def _process(tmp_path, *args: str):
    """A real profetl process (``main()``, as the ``profetl`` script runs it) with a module-level
    object whose finaliser reports the interpreter's teardown, and an ``atexit`` function."""
    import subprocess
    import sys

    code = (
        "import atexit, sys\n"
        "class Teardown:\n"
        "    def __del__(self): sys.stderr.write('teardown ran\\n')\n"
        "witness = Teardown()\n"
        "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n"
        f"sys.argv = ['profetl', *{list(args)!r}]\n"
        "from pipeline.cli.main import main\n"
        "main()\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)


def test_a_process_ends_without_teardown_but_with_its_output_atexit_and_exit_code(tmp_path):
    """profetl ends its process once the command is done, skipping the interpreter's teardown of
    DuckDB, Arrow and the rest (0.1-0.2 s of every command, bench/): the teardown witness never
    speaks. What an exit owes is still done: all of a large output reaches the pipe, atexit
    functions run, and error exit codes are the command's."""
    (tmp_path / "wh").mkdir()  # a warehouse (with no runs): query asks for one
    ok = _process(tmp_path, "query", "select * from range(200000)", "-w", "wh", "--format", "csv")
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0] == "range" and lines[1:] == [str(i) for i in range(200000)]
    assert ok.stderr.splitlines() == ["atexit ran"]

    bad = _process(tmp_path, "query", "select nothing_here", "-w", "wh")
    in_process = invoke("query", "select nothing_here", "-w", tmp_path / "wh")
    assert bad.returncode == in_process.exit_code != 0, bad.stderr
    err = bad.stderr.splitlines()
    assert len(err) == 2 and err[0].startswith("profetl: error:") and err[1] == "atexit ran"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
@pytest.mark.parametrize("args", [["runs"], ["runs", "--json"], ["query", "select 1"], ["--help"]])
def test_output_to_a_full_disk_is_one_line_and_failed(tmp_path, args):
    """Standard output on a full disk: one line naming why, exit 1, no traceback, whether the
    command printed inside its error handling (query) or outside it (runs, help)."""
    import subprocess
    import sys

    from pipeline.errors import ExitCode

    (tmp_path / "wh").mkdir()
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipeline.cli",
                *args,
                *(["-w", str(tmp_path / "wh")] if args != ["--help"] else []),
            ],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert p.returncode == ExitCode.FAILED, p.stderr
    assert p.stderr.splitlines() == ["profetl: error: No space left on device"]


# --- messages a newcomer can act on -----------------------------------------------------------


def _one_error_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profetl: error: "), r.output
    return lines[0]


def test_a_missing_dump_is_a_usage_error_named_once(tmp_path):
    """A path that is not there, and nothing else, is a usage error (exit 2, as the README's exit
    codes say), found before any work: no warehouse is made. (Beside a root that is there it
    fails as a root and the others go on: test_bad_input.py.)"""
    missing = tmp_path / "nope"
    for args in (["run", missing], ["run", missing, tmp_path / "nope2"], ["ingest", missing]):
        r = invoke(*args, "--warehouse", tmp_path / "wh")
        assert r.exit_code == 2, (args, r.output)
        assert _one_error_line(r) == f"profetl: error: {missing}: does not exist", args
        assert r.stdout == "", args
        assert not (tmp_path / "wh").exists(), args


def test_a_warehouse_that_is_a_file_is_refused_by_name(tmp_path, two):
    wh, _ = two
    afile = tmp_path / "warehouse.txt"
    afile.write_text("not a warehouse")
    for args in (
        ["run", tmp_path],
        ["build", "--all"],
        ["runs"],
        ["show"],
        ["export", "task_scheduler"],
        ["query", "select 1"],
    ):
        r = invoke(*args, "--warehouse", afile)
        assert r.exit_code == 2, (args, r.output)
        assert _one_error_line(r) == (
            f"profetl: error: the warehouse {afile} is a file, not a folder; "
            "--warehouse (-w) or $PROFETL_WAREHOUSE names the warehouse folder"
        ), args
    assert afile.read_text() == "not a warehouse"


@pytest.mark.parametrize(
    "args",
    [["runs"], ["runs", "--json"], ["show"], ["export", "task_scheduler"], ["build"], ["build", "--all"]],
)
def test_a_missing_warehouse_is_an_error_not_an_empty_one(tmp_path, args):
    missing = tmp_path / "typo"
    r = invoke(*args, "--warehouse", missing)
    assert r.exit_code == 2, r.output
    assert (
        f"no warehouse at {missing}: `profetl run DUMP... --warehouse {missing}` makes one"
        in _one_error_line(r)
    )
    assert not missing.exists()


def test_export_does_not_create_the_folder_of_out(tmp_path, two):
    wh, _ = two
    out = tmp_path / "missing_dir" / "x.csv"
    r = invoke("export", "task_scheduler", "--warehouse", wh.path, "--out", out)
    assert r.exit_code == 2, r.output
    assert f"{tmp_path / 'missing_dir'} does not exist" in _one_error_line(r)
    assert not (tmp_path / "missing_dir").exists()
    r = invoke("query", "select 1", "--format", "csv", "--warehouse", wh.path, "--out", out)
    assert r.exit_code == 2 and not (tmp_path / "missing_dir").exists(), r.output
    (tmp_path / "afile").write_text("")
    r = invoke("export", "task_scheduler", "--warehouse", wh.path, "--out", tmp_path / "afile" / "x.csv")
    assert r.exit_code == 2 and f"{tmp_path / 'afile'} is not a folder" in _one_error_line(r)


def test_show_of_a_table_name_says_the_run_comes_first(two):
    wh, _ = two
    r = invoke("show", "task_scheduler", "--warehouse", wh.path)
    assert r.exit_code == 2
    assert _one_error_line(r) == (
        "profetl: error: 'task_scheduler' is a table, not a run: the run comes first, "
        "e.g. profetl show latest task_scheduler"
    )


@pytest.mark.parametrize("n", ["0", "-1"])
def test_runs_last_takes_one_or_more(two, n):
    wh, nights = two
    r = invoke("runs", "--last", n, "--warehouse", wh.path)
    assert (
        r.exit_code == 2 and _one_error_line(r) == f"profetl: error: --last {n}: takes a number of runs >= 1"
    )
    r = invoke("trend", "task_scheduler:avg_ns", "--last", n, "--warehouse", wh.path)
    assert r.exit_code == 2, r.output
    r = invoke("runs", "--last", "1", "--warehouse", wh.path, "--json")
    assert [x["run_id"] for x in json.loads(r.stdout)] == [nights[-1].run_id]


def test_an_empty_time_window_says_what_it_resolved_to(two):
    from datetime import datetime, timedelta

    wh, _ = two
    r = invoke(
        "export",
        "task_scheduler",
        "--since",
        "2030-01-01",
        "--until",
        "2031-01-01T08:00+08:00",
        "--warehouse",
        wh.path,
    )
    assert r.exit_code == 2
    line = _one_error_line(r)
    assert (
        "(collected at or after 2030-01-01 00:00:00 UTC; collected before 2031-01-01 00:00:00 UTC)" in line
        and "its 2 run(s) were collected from 2026-01-01 00:00:00 UTC to 2026-01-02 00:00:00 UTC" in line
    ), line
    r = invoke("runs", "--since", "30d", "--warehouse", wh.path)
    line = _one_error_line(r)
    m = re.search(r"collected at or after (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", line)
    assert m, line
    since = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert abs(since - (datetime.now(UTC) - timedelta(days=30))) < timedelta(minutes=1)


def test_query_params_are_integers_decimals_or_text_and_text_can_be_forced(two):
    from pipeline.cli.query import _params

    assert _params(
        [
            "a=42",
            "b=-7",
            "c=1.5",
            "d=2e-3",
            "e=nan",
            "f=1_000",
            "g=inf",
            "h=0x10",
            "i= 1",
            "j=",
            "k:=007",
            "l:=1.5",
            "m=a=b",
        ]
    ) == {
        "a": 42,
        "b": -7,
        "c": 1.5,
        "d": 0.002,
        "e": "nan",
        "f": "1_000",
        "g": "inf",
        "h": "0x10",
        "i": " 1",
        "j": "",
        "k": "007",
        "l": "1.5",
        "m": "a=b",
    }
    wh, _ = two
    r = invoke(
        "query",
        "select typeof($n) n, typeof($x) x, typeof($y) y, typeof($z) z, $z as zv",
        "-p",
        "n=1000",
        "-p",
        "x=nan",
        "-p",
        "y=1_000",
        "-p",
        "z:=007",
        "-f",
        "json",
        "--warehouse",
        wh.path,
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == {
        "n": "INTEGER",
        "x": "VARCHAR",
        "y": "VARCHAR",
        "z": "VARCHAR",
        "zv": "007",
    }
    for bad in ("=1", ":=1", "noequals"):
        r = invoke("query", "select 1", "-p", bad, "--warehouse", wh.path)
        assert r.exit_code == 2 and "NAME=VALUE or NAME:=VALUE" in _one_error_line(r), bad


def test_commands_leave_no_empty_folders_in_the_warehouse(tmp_path):
    from pipeline.synth.hiprof import HiprofConfig, generate

    generate(tmp_path / "d", HiprofConfig())
    wh = tmp_path / "wh"
    for args in (
        ["run", tmp_path / "d"],
        ["ingest", "--force", tmp_path / "d"],
        ["build", "--all"],
        ["build", "latest"],
        ["export", "task_scheduler", "--out", tmp_path / "x.csv"],
        ["timeline", "--out", tmp_path / "t.json"],
    ):
        r = invoke(*args, "--warehouse", wh)
        assert r.exit_code == 0, (args, r.output)
        assert not (wh / ".tmp").exists(), args
    r = invoke("build", "--all", "--memory-limit", "2MB", "--warehouse", wh)  # a build that fails
    assert r.exit_code == 1, r.output
    assert not (wh / ".tmp").exists()


def test_the_peak_memory_a_build_reports_is_its_own_not_its_parents():
    """A process started by one that held 400 MB: the build's peak (max_rss_bytes_by_step) is
    what it used, not the parent's high-water mark that getrusage carries across the exec."""
    import subprocess
    import sys

    held = bytearray(400_000_000)
    held[::4096] = b"\x01" * len(held[::4096])  # resident, not only reserved
    code = "from pipeline.jobs.build import max_rss_bytes; print(max_rss_bytes())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    del held
    assert int(p.stdout) < 300_000_000, p.stdout
