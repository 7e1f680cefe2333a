"""Whole-dump bad input, through the library and through the command line.

A valid synthetic dump is corrupted one way per case. Every case must end in one of:

* a clean error: the library raises a ``PipelineError`` with a one-line message, and
  ``profetl ingest`` exits non-zero with one ``profetl: error: ...`` line on stderr and
  no traceback; or
* a successful ingest where the problem is a row of ``ingest_issues`` (naming the file,
  and the byte offset where there is one) and the rest of the data is kept.

The dump itself is never modified (every file is hashed before and after).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.errors import PipelineError
from pipeline.jobs.runner import ingest_dump
from pipeline.layouts import HOST_MAGIC
from pipeline.layouts import hiprof as hiprof_layouts
from pipeline.outputs.export import fetch
from pipeline.readers.issues import BYTE_KINDS
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.synth.truth import Truth
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

# 1024-byte slices hold whole host records (256 and 128 bytes), so removing one slice of
# a host stream removes exactly its records; device TLV records still straddle slices.
SLICE_BYTES = 1024
RT = hiprof_layouts.RUNTIME_API.size


# --- helpers --------------------------------------------------------------------------


def tree_digest(root: Path) -> dict[bytes, tuple]:
    """Every entry under root (names as bytes): file content hash, link target, or directory."""
    out: dict[bytes, tuple] = {}
    top = os.fsencode(root)
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, top)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                out[rel] = ("dir",)
            elif os.path.isfile(p):
                with open(p, "rb") as fh:
                    out[rel] = ("file", hashlib.sha256(fh.read()).hexdigest())
            else:
                out[rel] = ("other",)
    return out


def data_slices(dump: Path, stem: str) -> list[Path]:
    """The slice files of one stream, in slice order."""
    files = [
        p
        for p in (dump / "data").iterdir()
        if p.name.startswith(stem + ".slice_") and not p.name.endswith(".done")
    ]
    return sorted(files, key=lambda p: int(p.name.rsplit("_", 1)[1]))


def fsname(parent: Path, raw: bytes) -> Path:
    """A path whose last component is the given raw (maybe non-UTF-8) bytes."""
    return Path(os.fsdecode(os.fsencode(parent) + b"/" + raw))


def runtime_records(names: list[str]) -> bytes:
    a = hiprof_layouts.RUNTIME_API.zeros(len(names))
    a["magic"], a["data_tag"], a["stream_id"] = (
        HOST_MAGIC,
        hiprof_layouts.RUNTIME_API.tag,
        hiprof_layouts.NO_STREAM,
    )
    a["api_name"] = [n.encode() for n in names]
    a["entry"], a["exit"] = 5_000_000_000_000, 5_000_000_001_000
    return a.tobytes()


@dataclass
class Ingested:
    wh: Warehouse
    run_id: str
    truth: Truth

    def rows(self, table: str) -> list[dict]:
        _, t = fetch(self.wh, table, [self.run_id])
        return t.to_pylist()

    @property
    def issues(self) -> list[dict]:
        return self.rows("ingest_issues")

    @property
    def run(self) -> dict:
        return self.wh.run_index().run_record(self.run_id)

    def issues_for(self, source_file: str, kind: str | None = None) -> list[dict]:
        return [
            i for i in self.issues if i["source_file"] == source_file and (kind is None or i["kind"] == kind)
        ]


def n_api(truth: Truth, level: str | None = None) -> int:
    return sum(1 for c in truth.api_calls if level is None or c.level == level)


@pytest.fixture
def dump(tmp_path) -> tuple[Path, Truth]:
    d = tmp_path / "dump"
    truth = generate(d, HiprofConfig(slice_bytes=SLICE_BYTES))
    return d, truth


def ingest_ok(dump_dir: Path, truth: Truth, wh_dir: Path) -> Ingested:
    """Ingest and build through the library; the dump must be unchanged and the run committed."""
    before = tree_digest(dump_dir)
    wh = Warehouse(wh_dir)
    with wh.writer():
        outcome = ingest_dump(wh, dump_dir)
    assert tree_digest(dump_dir) == before, "ingest modified the dump"
    assert outcome.status == "built"
    got = Ingested(wh, outcome.run_id, truth)
    # the runs row agrees with ingest_issues
    issues = got.issues
    assert got.run["issues"] == len(issues)
    assert got.run["bytes_skipped"] == sum(i["byte_length"] or 0 for i in issues if i["kind"] in BYTE_KINDS)
    return got


def cli_ingest(dump_dir: Path, wh_dir: Path):
    before = tree_digest(dump_dir) if dump_dir.is_dir() else None
    result = CliRunner().invoke(app, ["ingest", "--warehouse", str(wh_dir), str(dump_dir)])
    if before is not None:
        assert tree_digest(dump_dir) == before, "ingest modified the dump"
    return result


def assert_no_crash(result) -> None:
    """No uncaught exception: CliRunner keeps it in result.exception instead of printing it."""
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), f"uncaught {type(exc).__name__}: {exc}"
    assert "Traceback" not in result.output


def assert_clean_error(result) -> str:
    assert_no_crash(result)
    assert result.exit_code != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("profetl: error:"), lines[0]
    return lines[0]


# --- the corruptions ------------------------------------------------------------------


def remove_info(d: Path) -> None:
    (d / "info.json.0").unlink()


def info_bytes(raw: bytes) -> Callable[[Path], None]:
    def mutate(d: Path) -> None:
        (d / "info.json.0").write_bytes(raw)

    return mutate


def info_without_platform_version(d: Path) -> None:
    info = json.loads((d / "info.json.0").read_text())
    del info["platform_version"]
    (d / "info.json.0").write_text(json.dumps(info))


def sample_with(**changes) -> Callable[[Path], None]:
    def mutate(d: Path) -> None:
        sample = json.loads((d / "sample.json").read_text())
        sample.update(changes)
        (d / "sample.json").write_text(json.dumps(sample))

    return mutate


def add_empty_slice(d: Path) -> None:
    (d / "data" / "Runtime.api.0.slice_99").write_bytes(b"")


def empty_runtime_stream(d: Path) -> None:
    for p in data_slices(d, "Runtime.api.0"):
        p.write_bytes(b"")


def truncate_last_runtime_slice(d: Path) -> None:
    last = data_slices(d, "Runtime.api.0")[-1]
    last.write_bytes(last.read_bytes()[:-100])


def truncate_last_ts_track_slice(d: Path) -> None:
    last = data_slices(d, "ts_track.data.0")[-1]
    last.write_bytes(last.read_bytes()[:-5])


def directory_for_slice(d: Path) -> None:
    p = d / "data" / "Runtime.api.0.slice_1"
    p.unlink()
    p.mkdir()
    (p / "inner").write_bytes(runtime_records(["INSIDE_DIR"]))


def symlink_to_outside_file(d: Path) -> None:
    outside = d.parent / "outside.bin"
    outside.write_bytes(runtime_records(["OUTSIDE_API"] * 4))
    (d / "data" / "Runtime.api.0.slice_99").symlink_to(outside)


def symlink_to_outside_dir(d: Path) -> None:
    (d.parent / "outside_dir").mkdir()
    (d / "data" / "Runtime.api.0.slice_99").symlink_to(d.parent / "outside_dir")


def dangling_symlink(d: Path) -> None:
    (d / "data" / "Runtime.api.0.slice_99").symlink_to(d.parent / "nowhere")


def symlinked_info_outside(d: Path) -> None:
    """A control file that is a link leaving the dump (not named in the brief's data/ rule, same principle)."""
    outside = d.parent / "outside_info.json"
    info = json.loads((d / "info.json.0").read_text())
    info["platform_version"] = "OUTSIDE_SECRET"
    outside.write_text(json.dumps(info))
    (d / "info.json.0").unlink()
    (d / "info.json.0").symlink_to(outside)


def non_utf8_name_in_data(d: Path) -> None:
    fsname(d / "data", b"junk\xff\xfe.bin").write_bytes(b"not profiling data")


def non_utf8_name_at_root(d: Path) -> None:
    fsname(d, b"notes-\xe9t\xe9.txt").write_bytes(b"latin-1 file name")


def non_utf8_api_name(d: Path) -> None:
    """Record 0 of Runtime.api: the 64-byte name field holds bytes that are not UTF-8."""
    p = data_slices(d, "Runtime.api.0")[0]
    b = bytearray(p.read_bytes())
    name = b"rtMa\xff\xfe\x80lloc"
    b[32 : 32 + 64] = name.ljust(64, b"\0")
    p.write_bytes(bytes(b))


@dataclass
class Case:
    mutate: Callable[[Path], None]
    kind: str | None  # the ingest_issues kind expected (None: no issue at all)
    file: str | Callable[[Path], str] | None = None  # its source_file
    offset: Callable[[Path], int] | None = None  # its byte_offset, where it has one
    api_rows: Callable[[Truth], int] = lambda t: n_api(t)
    check: Callable[[Ingested, Path], None] | None = None


def last_runtime_truncated_at(d: Path) -> int:
    """Offset in the last Runtime.api slice where the record the file ends inside begins."""
    slices = data_slices(d, "Runtime.api.0")
    before = sum(p.stat().st_size for p in slices[:-1])
    total = before + slices[-1].stat().st_size
    return (total // RT) * RT - before


def check_sample_unknown_keys(got: Ingested, d: Path) -> None:
    assert got.issues == []
    assert got.run["metric_set_raw"] == "aicorePipeline"
    assert got.run["pmu_event_ids"] == got.truth.event_ids
    assert "zz_future_option" in json.loads(got.run["metadata_json"])["sample.json"]


def check_pmu_kept(got: Ingested, d: Path) -> None:
    assert len(got.rows("pmu_counters")) > 0


def check_task_states_kept(got: Ingested, d: Path) -> None:
    """ts_track holds task states and step trace records: all but the one cut short are kept."""
    written = len(got.truth.states) + sum(2 for x in got.truth.inferences if x.step is not None)
    kept = len(got.rows("task_states")) + len(got.rows("step_trace"))
    assert kept == written - 1


def check_not_read_outside(got: Ingested, d: Path) -> None:
    names = {r["api_name"] for r in got.rows("api_calls")}
    assert "OUTSIDE_API" not in names and "INSIDE_DIR" not in names


def check_info_outside_not_read(got: Ingested, d: Path) -> None:
    assert got.run["platform_version"] != "OUTSIDE_SECRET", "a control file outside the dump was read"
    assert "OUTSIDE_SECRET" not in got.run["metadata_json"], "text of a file outside the dump was stored"


def check_name_kept(got: Ingested, d: Path) -> None:
    names = [
        r["api_name"]
        for r in got.rows("api_calls")
        if r["api_name"].startswith("rtMa") and r["api_name"] != "rtMalloc"
    ]
    assert len(names) == 1 and names[0].endswith("lloc")


def runtime_slice(n: int) -> str:
    return f"data/Runtime.api.0.slice_{n}"


def last_slice(stem: str) -> Callable[[Path], str]:
    return lambda d: "data/" + data_slices(d, stem)[-1].name


CASES: dict[str, Case] = {
    "missing_info": Case(remove_info, "missing_file", "info.json.0"),
    "info_not_utf8": Case(info_bytes(b"\xff\xfe\x00garbage\x9c"), "bad_metadata", "info.json.0"),
    "info_not_json": Case(info_bytes(b"platform_version = 0\n"), "bad_metadata", "info.json.0"),
    "info_empty": Case(info_bytes(b""), "bad_metadata", "info.json.0"),
    "info_json_array": Case(info_bytes(b'[{"platform_version": "0"}]'), "bad_metadata", "info.json.0"),
    "info_no_platform_version": Case(info_without_platform_version, "bad_metadata", "info.json.0"),
    "sample_unknown_keys": Case(
        sample_with(zz_future_option={"nested": [1, 2]}, another="x"), None, check=check_sample_unknown_keys
    ),
    "sample_bad_event_id": Case(
        sample_with(ai_core_profiling_events="0x8,zz,0x9"),
        "bad_metadata",
        "sample.json",
        check=check_pmu_kept,
    ),
    "sample_event_list_not_text": Case(
        sample_with(ai_core_profiling_events=[8, 9]), "bad_metadata", "sample.json", check=check_pmu_kept
    ),
    "empty_extra_slice": Case(add_empty_slice, None),
    "empty_stream": Case(empty_runtime_stream, None, api_rows=lambda t: n_api(t, "acl")),
    "truncated_host_slice": Case(
        truncate_last_runtime_slice,
        "truncated_record",
        last_slice("Runtime.api.0"),
        offset=last_runtime_truncated_at,
        api_rows=lambda t: n_api(t) - 1,
    ),
    "truncated_device_slice": Case(
        truncate_last_ts_track_slice,
        "truncated_record",
        last_slice("ts_track.data.0"),
        check=check_task_states_kept,
    ),
    "directory_as_slice": Case(
        directory_for_slice,
        "unreadable_file",
        runtime_slice(1),
        api_rows=lambda t: n_api(t) - SLICE_BYTES // RT,
        check=check_not_read_outside,
    ),
    "symlink_to_outside_file": Case(
        symlink_to_outside_file, "unreadable_file", runtime_slice(99), check=check_not_read_outside
    ),
    "symlink_to_outside_dir": Case(symlink_to_outside_dir, "unreadable_file", runtime_slice(99)),
    "dangling_symlink": Case(dangling_symlink, "unreadable_file", runtime_slice(99)),
    "symlinked_control_file_outside": Case(
        symlinked_info_outside, "*", "info.json.0", check=check_info_outside_not_read
    ),
    "non_utf8_file_name_in_data": Case(non_utf8_name_in_data, "unknown_file", "data/junk"),
    "non_utf8_file_name_at_root": Case(non_utf8_name_at_root, None),
    "non_utf8_api_name_field": Case(
        non_utf8_api_name, "*", runtime_slice(0), offset=lambda d: 0, check=check_name_kept
    ),
}


def matching(issues: list[dict], case: Case, d: Path) -> list[dict]:
    """The issues of the case's kind ("*": any kind) naming the case's file."""
    want = case.file(d) if callable(case.file) else case.file

    def file_ok(i):
        if want is None:
            return True
        if want == "data/junk":  # a non-UTF-8 name: any readable rendering of it
            return (i["source_file"] or "").startswith("data/junk")
        return i["source_file"] == want

    return [i for i in issues if (case.kind == "*" or i["kind"] == case.kind) and file_ok(i)]


# --- library --------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_library_ingest_keeps_data_and_lists_the_problem(name, dump, tmp_path):
    case = CASES[name]
    d, truth = dump
    case.mutate(d)
    got = ingest_ok(d, truth, tmp_path / "wh")

    issues = got.issues
    if case.kind is None:
        assert not [i for i in issues if i["kind"] in BYTE_KINDS], issues
    else:
        hits = matching(issues, case, d)
        assert hits, f"no {case.kind} issue for {case.file}: {issues}"
        for i in hits:
            assert i["message"] and "\n" not in i["message"]
            if i["kind"] in BYTE_KINDS and i["kind"] != "unreadable_file":
                assert i["byte_offset"] is not None and i["byte_length"] > 0
        if case.offset is not None:
            want = case.offset(d)
            if case.kind == "*":  # the record holding the bad field, or the field itself
                assert any(
                    i["byte_offset"] is not None and want <= i["byte_offset"] < want + RT for i in hits
                ), hits
            else:
                assert [i["byte_offset"] for i in hits] == [want]
    assert len(got.rows("api_calls")) == case.api_rows(truth)
    if case.check:
        case.check(got, d)


def test_truncated_slice_accounting(dump, tmp_path):
    """The bytes of the record cut short are the only bytes skipped."""
    d, truth = dump
    truncate_last_runtime_slice(d)
    got = ingest_ok(d, truth, tmp_path / "wh")
    last = last_slice("Runtime.api.0")(d)
    [issue] = got.issues_for(last, "truncated_record")
    total = sum(p.stat().st_size for p in data_slices(d, "Runtime.api.0"))
    assert issue["byte_length"] == total % RT
    assert got.run["bytes_skipped"] == total % RT
    # every other record decoded, with its own file and in stream order
    rt = [r for r in got.rows("api_calls") if r["level"] == "runtime"]
    assert [r["seq"] for r in rt] == list(range(total // RT))
    assert rt[-1]["source_file"] == last


def test_directory_slice_keeps_the_other_slices(dump, tmp_path):
    d, truth = dump
    directory_for_slice(d)
    got = ingest_ok(d, truth, tmp_path / "wh")
    per_file = {}
    for r in got.rows("api_calls"):
        per_file[r["source_file"]] = per_file.get(r["source_file"], 0) + 1
    assert runtime_slice(1) not in per_file
    for p in data_slices(d, "Runtime.api.0"):
        if p.is_file():
            assert per_file["data/" + p.name] == p.stat().st_size // RT
    assert got.run["bytes_skipped"] == 0


def test_non_utf8_dump_directory_name(tmp_path):
    """A dump whose own folder name is not UTF-8: ingested, or refused with a clean error."""
    d = fsname(tmp_path, b"dump-\xff")
    truth = generate(d, HiprofConfig(slice_bytes=SLICE_BYTES))
    before = tree_digest(d)
    wh = Warehouse(tmp_path / "wh")
    try:
        with wh.writer():
            outcome = ingest_dump(wh, d)
    except PipelineError as e:
        assert "\n" not in str(e)
    else:
        got = Ingested(wh, outcome.run_id, truth)
        assert len(got.rows("api_calls")) == n_api(truth)
    assert tree_digest(d) == before


@pytest.mark.parametrize("what", ["missing", "empty_dir", "no_data_files", "regular_file", "data_is_symlink"])
def test_library_refuses_what_is_not_a_dump(what, dump, tmp_path):
    d, _ = dump
    target = {
        "missing": lambda: tmp_path / "does-not-exist",
        "empty_dir": lambda: (tmp_path / "empty").mkdir() or tmp_path / "empty",
        "no_data_files": lambda: _only_unknown_data(tmp_path / "notadump"),
        "regular_file": lambda: d / "info.json.0",
        "data_is_symlink": lambda: _data_symlink(tmp_path / "linked", d),
    }[what]()
    wh = Warehouse(tmp_path / "wh")
    with wh.writer(), pytest.raises(PipelineError) as e:
        ingest_dump(wh, target)
    msg = str(e.value)
    assert "\n" not in msg and str(target) in msg
    assert wh.run_index().run_records() == []


def _only_unknown_data(p: Path) -> Path:
    (p / "data").mkdir(parents=True)
    (p / "data" / "readme.txt").write_text("no profiling data here")
    (p / "info.json.0").write_text("{}")
    return p


def _data_symlink(p: Path, real_dump: Path) -> Path:
    p.mkdir()
    (p / "data").symlink_to(real_dump / "data")
    return p


# --- command line ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_cli_ingest_bad_dump(name, dump, tmp_path):
    """Either a clean one-line error or exit 0 with the problem listed; never a traceback."""
    case = CASES[name]
    d, truth = dump
    case.mutate(d)
    result = cli_ingest(d, tmp_path / "wh")
    assert_no_crash(result)
    if result.exit_code != 0:
        assert_clean_error(result)
        return
    wh = Warehouse(tmp_path / "wh")
    [run] = wh.run_index().run_records()
    got = Ingested(wh, run["run_id"], truth)
    if case.kind is not None:
        assert matching(got.issues, case, d)
        assert case.kind == "*" or case.kind in result.stdout
    assert len(got.rows("api_calls")) == case.api_rows(truth)


@pytest.mark.parametrize("what", ["missing", "empty_dir", "regular_file"])
def test_cli_ingest_not_a_dump(what, tmp_path):
    target = {
        "missing": tmp_path / "nope",
        "empty_dir": tmp_path / "empty",
        "regular_file": tmp_path / "file.bin",
    }[what]
    if what == "empty_dir":
        target.mkdir()
    if what == "regular_file":
        target.write_bytes(b"\x5a\x5a" * 10)
    result = cli_ingest(target, tmp_path / "wh")
    line = assert_clean_error(result)
    assert str(target) in line
    assert result.stdout == ""


def test_cli_run_reports_each_bad_root_and_keeps_going(dump, tmp_path):
    """``profetl run`` names each failing root on one line, builds the good dump and exits 1."""
    d, truth = dump
    missing = tmp_path / "nope"
    result = CliRunner().invoke(app, ["run", "--warehouse", str(tmp_path / "wh"), str(missing), str(d)])
    assert_no_crash(result)
    assert result.exit_code == 1
    failed = [line for line in result.stdout.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and str(missing) in failed[0]
    assert "2 dump(s): 1 done, 1 failed" in result.stdout
    [run] = Warehouse(tmp_path / "wh").run_index().run_records()
    assert run["status"] == "built"


def test_cli_run_tells_a_damaged_night_from_a_clean_one(tmp_path):
    """Garbage info.json and a truncated timeline: the dump is still built, but `run` exits
    DATA_LOSS with a summary that says so; a clean night exits 0."""
    from pipeline.errors import ExitCode
    from tests.helpers.warehouse_checks import profetl

    clean, damaged = tmp_path / "clean", tmp_path / "damaged"
    generate(clean, HiprofConfig(inferences=2, seed=7))
    generate(damaged, HiprofConfig(inferences=2, seed=8, start_us=1_767_312_000_000_000))
    (damaged / "info.json.0").write_text("{garbage")
    track = damaged / "data" / "ts_track.data.0.slice_0"
    track.write_bytes(track.read_bytes()[:-37])

    ok = profetl("run", clean, "--warehouse", tmp_path / "wh")
    assert ok.returncode == ExitCode.OK == 0, ok.stderr
    assert "data lost" not in ok.stdout

    night = profetl("run", clean, damaged, "--warehouse", tmp_path / "wh")
    assert night.returncode == ExitCode.DATA_LOSS == 5, night.stdout + night.stderr
    assert "2 dump(s): 2 done, 0 failed, 1 built with data lost" in night.stdout
    [line] = [x for x in night.stdout.splitlines() if str(damaged) in x]
    assert (
        line.startswith("built")
        and "DATA LOST" in line
        and "bad_metadata" in line
        and "truncated_record" in line
    )
    as_json = profetl("run", damaged, "--force", "--json", "--warehouse", tmp_path / "wh")
    assert as_json.returncode == 5
    [d] = json.loads(as_json.stdout)
    assert (
        d["status"] == "built"
        and d["data_lost"]["bad_metadata"] >= 1
        and d["data_lost"]["truncated_record"] >= 1
    )
    # a failed dump still wins: exit 1
    failed = profetl("run", damaged, tmp_path / "nope", "--force", "--warehouse", tmp_path / "wh")
    assert failed.returncode == 1


def test_slice_emptied_under_its_done_marker_is_missing_data(tmp_path):
    d = tmp_path / "dump"
    generate(d, HiprofConfig(inferences=2, seed=9))
    victim = d / "data" / "ts_track.data.0.slice_0"
    declared = int((d / "data" / "ts_track.data.0.slice_0.done").read_text().split(":")[1])
    assert declared > 0
    victim.write_bytes(b"")
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, d)
    [line] = [i for i in o.issues if "missing_data" in i]
    assert "ts_track.data.0.slice_0" in line and f"{declared} bytes are missing" in line
    assert o.losses == {"missing_data": 1}


def test_a_slice_gone_under_its_done_marker_is_a_missing_file(tmp_path):
    """A slice deleted after the collection while its .done marker stays: the run is built
    with the loss named (missing_file, the bytes the marker declares), not as a clean run
    of fewer records."""
    d = tmp_path / "dump"
    generate(d, HiprofConfig(inferences=2, seed=9, slice_bytes=SLICE_BYTES))
    victim = data_slices(d, "Runtime.api.0")[1]
    declared = int((d / "data" / (victim.name + ".done")).read_text().split(":")[1])
    victim.unlink()
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, d)
    assert o.status == "built" and o.losses == {"missing_file": 1}, o.issues
    [line] = [i for i in o.issues if "missing_file" in i]
    assert f"data/{victim.name}" in line and f"slice of {declared} bytes" in line


def test_a_prof_slice_gone_is_lost_unless_aged(tmp_path):
    """PROF_*: a gone slice of a stream that never ages (ts_track) is a loss; a gone slice
    before the first kept one of a stream that ages (the collector deletes the oldest when its
    storage fills, docs/formats.md#aging) is not."""
    from pipeline.synth.prof import ProfConfig
    from pipeline.synth.prof import generate as generate_prof

    d = tmp_path / "prof"
    truth = generate_prof(d, ProfConfig(chip="ascend910b", inferences=3, slice_bytes=256, seed=9))
    data = d / truth.root / "device_0" / "data"
    track = sorted(data.glob("ts_track.data.0.slice_*[0-9]"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    aged = sorted(data.glob("ffts_profile.data.0.slice_*[0-9]"), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    assert len(track) > 1 and len(aged) > 1
    track[1].unlink()  # a slice in the middle of a stream that never ages: lost
    aged[0].unlink()  # the oldest slice of a stream that ages: aged away
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        o = ingest_dump(wh, d / truth.root)
    # (the records after the hole are misaligned and reported as such too: the stream is read
    # as one byte sequence)
    assert o.losses.get("missing_file") == 1, o.issues
    [line] = [i for i in o.issues if "missing_file" in i]
    assert f"device_0/data/{track[1].name}" in line and aged[0].name not in line


def test_a_slice_growing_while_read_is_read_as_measured(tmp_path):
    """Bytes written to a slice after the scan are not read (the ingest ends, bytes decoded
    never exceed the bytes measured) and are reported."""
    from pipeline.readers.issues import IssueLog
    from pipeline.readers.slices import SliceFile, SliceStream

    f = tmp_path / "x.slice_0"
    f.write_bytes(b"a" * 1000)
    stream_file = SliceFile(f, "x.slice_0", 600)  # measured at 600 bytes; 400 written since
    log = IssueLog()
    got = b"".join(data for _, data in SliceStream([stream_file], chunk_bytes=256, log=log).chunks())
    assert got == b"a" * 600
    [issue] = log.issues
    assert issue.kind == "grown_while_read" and issue.byte_offset == 600 and issue.byte_length == 400


def test_an_unreadable_folder_does_not_stop_the_night(tmp_path, monkeypatch):
    """Permission denied on one folder under a root: the other dumps are still processed and the
    failure names that folder (root reads everything, so the denial is simulated)."""
    import pipeline.jobs.dumps as dumps
    from pipeline.jobs.runner import run_roots

    root = tmp_path / "nightly"
    generate(root / "a", HiprofConfig(inferences=1, seed=1))
    generate(root / "c", HiprofConfig(inferences=1, seed=3, start_us=1_767_312_000_000_000))
    locked = root / "b" / "inner"
    locked.mkdir(parents=True)
    real = dumps.detect

    def detect(path):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(locked))
        return real(path)

    monkeypatch.setattr(dumps, "detect", detect)
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        out = run_roots(wh, [root])
    assert sorted(o.status for o in out) == ["built", "built", "failed"]
    [failed] = [o for o in out if o.status == "failed"]
    assert failed.source_path == str(locked) and "Permission denied" in failed.error


def test_an_unreadable_data_folder_is_named_itself(tmp_path, monkeypatch):
    """A result_dir whose data/ cannot be listed (simulated: root reads everything) is reported
    as that folder, not as data/data, the first name looked at inside it."""
    from pipeline.jobs.runner import run_roots

    dump = tmp_path / "dump"
    generate(dump, HiprofConfig(inferences=1, seed=1))
    data = str(dump / "data")
    real_stat, real_listdir, real_scandir = os.stat, os.listdir, os.scandir

    def stat(p, *a, **k):  # a name inside a folder that cannot be searched cannot be looked at
        if not isinstance(p, int) and os.fspath(p).startswith(data + os.sep):
            raise PermissionError(13, "Permission denied", os.fspath(p))
        return real_stat(p, *a, **k)

    def listing(real):
        def call(p="."):
            if os.fspath(p) == data:
                raise PermissionError(13, "Permission denied", os.fspath(p))
            return real(p)

        return call

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "listdir", listing(real_listdir))
    monkeypatch.setattr(os, "scandir", listing(real_scandir))
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        [out] = run_roots(wh, [dump])
    assert out.status == "failed" and out.source_path == data, out
    assert out.error.startswith(f"{data}: cannot be searched for dumps (Permission denied)"), out.error
