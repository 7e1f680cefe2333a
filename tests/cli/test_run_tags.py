"""`profetl run --tag` / `ingest --tag` and a dump's profetl-tags.toml (docs/formats.md#tags):
the tags recorded with the run, shown by `runs --json`, `query` and `export`; a bad tag or tags
file is one line naming it, exit 2, nothing ingested."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.errors import ExitCode

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def dump(tmp_path, small_dumps):
    d = tmp_path / "dump"
    shutil.copytree(small_dumps / "hiprof", d)
    return d


def _runs(wh) -> list[dict]:
    r = invoke("runs", "--json", "-w", wh)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _one_line_error(r, *words):
    assert r.exit_code == ExitCode.USAGE, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1, r.output
    assert "Traceback" not in r.output
    for w in words:
        assert w in lines[0], r.output


def test_tags_from_the_command_line_and_the_file_cli_winning(tmp_path, dump):
    (dump / "profetl-tags.toml").write_text('commit = "from-file"\n"team.build" = "nightly-1841"\n')
    wh = tmp_path / "wh"
    r = invoke("run", dump, "-w", wh, "--tag", "commit=3f2a9c1", "--tag", "model_version=v=7")
    assert r.exit_code == 0, r.output
    assert "profetl-tags.toml" not in r.output  # not a file of the dump: no issue names it
    (run,) = _runs(wh)
    assert run["tags"] == {"commit": "3f2a9c1", "model_version": "v=7", "team.build": "nightly-1841"}
    # the versions a synthetic result_dir records: none of CANN or framework
    assert run["cann_version"] is None and run["framework_version"] is None

    r = invoke("query", "-w", wh, "-f", "json", "select tags, tags['commit'] as c, cann_version from runs")
    assert r.exit_code == 0, r.output
    row = json.loads(r.output.splitlines()[0])
    assert row == {"tags": run["tags"], "c": "3f2a9c1", "cann_version": None}

    r = invoke("export", "runs", "-w", wh, "-f", "csv", "--headers", "snake")
    assert r.exit_code == 0, r.output
    (exported,) = list(csv.DictReader(io.StringIO(r.output)))
    assert json.loads(exported["tags"]) == run["tags"]

    r = invoke("runs", "-w", wh)
    assert r.exit_code == 0, r.output
    assert "commit=3f2a9c1" in r.output


def test_ingest_takes_tags_and_a_rerun_with_other_tags_records_them_without_reading(tmp_path, dump):
    wh = tmp_path / "wh"
    r = invoke("ingest", dump, "-w", wh, "--tag", "build=1", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["tags"] == {"build": "1"}
    (first,) = _runs(wh)
    assert first["tags"] == {"build": "1"}

    # the same content, other tags: not read again, the run recorded again with them
    r = invoke("ingest", dump, "-w", wh, "--tag", "build=2")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("retagged")
    (second,) = _runs(wh)
    assert second["tags"] == {"build": "2"}
    assert second["ingest_id"] == first["ingest_id"]  # nothing read again

    # the same tags again: unchanged, nothing committed
    r = invoke("ingest", dump, "-w", wh, "--tag", "build=2")
    assert r.output.startswith("unchanged"), r.output

    # a tags file added later is not a change of the dump's content
    (dump / "profetl-tags.toml").write_text('owner = "perf-team"\n')
    r = invoke("run", dump, "-w", wh)
    assert r.exit_code == 0, r.output
    (third,) = _runs(wh)
    assert third["tags"] == {"owner": "perf-team"}
    assert third["ingest_id"] == first["ingest_id"]
    assert third["fingerprint"] == first["fingerprint"]


def test_no_tags_is_an_empty_map(tmp_path, dump):
    wh = tmp_path / "wh"
    assert invoke("run", dump, "-w", wh).exit_code == 0
    assert _runs(wh)[0]["tags"] == {}


@pytest.mark.parametrize(
    ("tag", "words"),
    [
        ("commit", ["--tag 'commit'", "KEY=VALUE"]),
        ("=3f2a", ["--tag '=3f2a'", "key"]),
        ("bad key=1", ["--tag 'bad key=1'", "key"]),
        ("-x=1", ["--tag '-x=1'", "key"]),
    ],
)
@pytest.mark.parametrize("command", ["run", "ingest"])
def test_a_malformed_tag_is_one_line_and_exit_2(tmp_path, dump, command, tag, words):
    wh = tmp_path / "wh"
    r = invoke(command, dump, "-w", wh, "--tag", "ok=1", f"--tag={tag}")
    _one_line_error(r, *words)
    assert not (wh / "runs" / "runs.parquet").exists()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("commit = \n", "not TOML"),
        ("commit = 7\n", "'commit' is int"),
        ('[team]\nbuild = "1"\n', "'team' is a table"),
        ('"bad key" = "1"\n', "key"),
        (b'commit = "\xff"\n', "UTF-8"),
    ],
)
@pytest.mark.parametrize("command", ["run", "ingest"])
def test_an_invalid_tags_file_is_one_line_naming_it_and_exit_2(tmp_path, dump, command, text, why):
    f = dump / "profetl-tags.toml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    wh = tmp_path / "wh"
    r = invoke(command, dump, "-w", wh, "--tag", "commit=1")
    _one_line_error(r, str(f), why)
    assert not (wh / "runs" / "runs.parquet").exists() or not _runs(wh)


def test_run_checks_every_tags_file_before_reading_any_dump(tmp_path, small_dumps):
    root = tmp_path / "root"
    shutil.copytree(small_dumps / "hiprof", root / "a")
    shutil.copytree(small_dumps / "hiprof", root / "b")
    (root / "b" / "data" / "extra.bin").write_bytes(b"\0" * 8)  # another dump's content
    (root / "b" / "profetl-tags.toml").write_text("x = [1]\n")
    wh = tmp_path / "wh"
    r = invoke("run", root, "-w", wh)
    _one_line_error(r, str(root / "b" / "profetl-tags.toml"))
    assert not (wh / "runs" / "runs.parquet").exists() or not _runs(wh)


def test_runs_recorded_before_tags_and_versions_read_null_until_run_again(tmp_path, small_dumps):
    """An index written by a profetl that kept neither (the columns absent) reads NULL tags and
    versions; the next run of the unchanged dump records both without reading it again."""
    import pyarrow.parquet as pq

    d = tmp_path / "dump"
    shutil.copytree(small_dumps / "prof", d)
    (dump,) = d.glob("PROF_*")
    for p in sorted(dump.rglob("info.json*")):
        if not p.name.endswith(".done"):
            first, sep, rest = p.read_text().partition("\n")
            info = json.loads(first)
            info["cannVersion"] = "8.0.RC3"
            p.write_text(json.dumps(info) + sep + rest)
    wh = tmp_path / "wh"
    assert invoke("run", dump, "-w", wh).exit_code == 0
    index = wh / "runs" / "runs.parquet"
    t = pq.read_table(index)
    old = t.drop_columns(["tags", "cann_version", "driver_version", "framework_version"])
    pq.write_table(old.replace_schema_metadata(t.schema.metadata), index)

    (run,) = _runs(wh)
    assert run["tags"] is None and run["cann_version"] is None and run["driver_version"] is None
    r = invoke("query", "-w", wh, "-f", "json", "select tags, cann_version from runs")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"tags": None, "cann_version": None}

    r = invoke("run", dump, "-w", wh, "--tag", "commit=1")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("retagged"), r.output
    (again,) = _runs(wh)
    assert again["tags"] == {"commit": "1"} and again["cann_version"] == "8.0.RC3"
    assert again["ingest_id"] == run["ingest_id"]


def _exported_dump(tmp_path):
    from tests.readers.test_exported_comm_ops import TRACE
    from tests.readers.test_exported_totals import export

    return export(tmp_path / "export", {"trace_view.json": json.dumps(TRACE)})


@pytest.mark.parametrize("layout", ["hiprof", "prof", "export"])
def test_the_tags_file_is_no_unknown_file_of_any_layout(tmp_path, small_dumps, layout):
    """The tags file is the jobs' to read: no reader reports it as a file it does not know."""
    if layout == "export":
        d = _exported_dump(tmp_path)
    else:
        src = small_dumps / layout
        # the dump's root: a PROF_* tree's own folder, a result_dir
        src = next(src.glob("PROF_*"), src)
        d = tmp_path / src.name
        shutil.copytree(src, d)
    (d / "profetl-tags.toml").write_text('commit = "3f2a9c1"\n')
    wh = tmp_path / "wh"
    assert invoke("run", d, "-w", wh).exit_code in (ExitCode.OK, ExitCode.DATA_LOSS)
    assert _runs(wh)[0]["tags"] == {"commit": "3f2a9c1"}
    r = invoke("query", "-w", wh, "-f", "json", "select source_file, kind from ingest_issues")
    assert r.exit_code == 0, r.output
    named = [json.loads(x)["source_file"] for x in r.output.splitlines() if x.strip()]
    assert not [f for f in named if f and f.endswith("profetl-tags.toml")], named
