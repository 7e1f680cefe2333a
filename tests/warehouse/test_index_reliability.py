"""The run index is no single point of total loss (issue 42): a missing index or a Parquet file
of another kind in its place stops every command and deletes nothing; the index records each
committed part file's size and hash, readers check the sizes; the last versions of the index
are kept beside it and restore it."""

from __future__ import annotations

import inspect
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.errors import DamagedIndex, MissingIndex, PartSizeMismatch
from pipeline.jobs.runner import run_roots
from pipeline.outputs.query import query
from pipeline.warehouse.commit_records import RECORDS
from pipeline.warehouse.index import FORMAT_KEY, INDEX_FORMAT, read_index_version, version_files
from pipeline.warehouse.layout import is_group, shard_count
from pipeline.warehouse.store import Warehouse
from pipeline.warehouse.views import connect
from pipeline.warehouse.writer import KEEP_VERSIONS
from tests.helpers.nights import night
from tests.helpers.warehouse_checks import (
    assert_recorded,
    counts,
    drop_run,
    part_files,
    profetl,
    recorded_files,
)

pytestmark = pytest.mark.slow  # ingests and builds whole dumps, starts profetl processes


@pytest.fixture
def two_runs(sample_nights, tmp_path):
    """A warehouse of two runs (built once per test process: tests/helpers/nights.py, copied
    here), the dumps and the run ids."""
    built = sample_nights(2)
    return built.copy(tmp_path / "wh"), built.dumps, built.run_ids


def _state(wh: Path) -> dict:
    """Every part file with its modification time and size: what a sweep or drop would change."""
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in part_files(wh)}


def _every_command(wh: Path, dump: Path, run_id: str, tmp_path: Path) -> list[tuple]:
    return [
        ("runs",),
        ("runs", "--json"),
        ("query", "select count(*) from task_states"),
        ("query", "select count(*) from runs"),
        ("run", dump),
        ("run", dump, "--force"),
        ("drop", run_id),
        ("build", run_id),
        ("show", run_id),
        ("report", run_id, "--out", tmp_path / "r.html"),
    ]


def _one_line_error(p, *needles: str) -> str:
    assert p.returncode == 1, (p.args, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr.lower(), p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# --- 1. a missing index ------------------------------------------------------------------


def test_a_missing_index_stops_every_command_and_sweeps_nothing(two_runs, tmp_path):
    wh, dumps, (victim, _) = two_runs
    wh.index_file.unlink()
    leftover = wh.path / "raw" / "task_states" / "part-leftover.parquet"  # what a sweep would remove
    leftover.write_bytes(b"x")
    before = _state(wh.path)
    n = sum(1 for p in before if p.parent.name != RECORDS)  # table files (with the leftover), not records
    for args in _every_command(wh.path, dumps[0], victim, tmp_path):
        p = profetl(*args, "--warehouse", wh.path)
        line = _one_line_error(p, str(wh.index_file), "is missing", f"{n} part file(s)", "history")
        assert "check --repair" in line
    assert _state(wh.path) == before  # nothing swept, compacted, dropped or written
    assert not wh.index_file.exists()
    with pytest.raises(MissingIndex):
        query(Warehouse(wh.path), "select count(*) from task_states")
    with pytest.raises(MissingIndex):
        Warehouse(wh.path).run_index().run_records()


def test_an_empty_new_warehouse_is_no_damage_and_a_first_run_killed_before_its_commit_is_swept(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()  # an empty folder
    p = profetl("runs", "--warehouse", wh)
    assert p.returncode == 0, p.stderr
    dump = night(tmp_path / "dumps", 0)
    # the first run of a new warehouse, killed with its raw files in place, before any commit
    p = profetl("run", dump, "--warehouse", wh, env={"PROFETL_CRASH_AT": "raw_moved"})
    assert p.returncode != 0
    assert any(part_files(wh)) and (wh / "runs" / "runs.parquet").exists()  # the new warehouse's empty index
    again = profetl("run", dump, "--warehouse", wh)
    assert again.returncode == 0, again.stderr
    assert counts(wh)["task_states"] > 0
    assert len(part_files(wh)) == len({f.parent for f in part_files(wh)})  # the dead writer's files swept


# --- 2. an index that is valid Parquet of another schema ---------------------------------------


def test_a_part_file_copied_over_the_index_is_refused_by_every_command(two_runs, tmp_path):
    wh, dumps, (victim, _) = two_runs
    shutil.copyfile(next((wh.path / "raw" / "task_states").glob("part-*.parquet")), wh.index_file)
    bad = wh.index_file.read_bytes()
    before = _state(wh.path)
    for args in _every_command(wh.path, dumps[0], victim, tmp_path):
        p = profetl(*args, "--warehouse", wh.path)
        _one_line_error(p, str(wh.index_file), "cannot be read", "not a run index")
    assert _state(wh.path) == before
    assert wh.index_file.read_bytes() == bad


def _rewrite_index(wh: Warehouse, table: pa.Table, metadata: dict | None) -> None:
    pq.write_table(table.replace_schema_metadata(metadata), wh.index_file)


def test_an_index_of_a_newer_format_or_with_a_wrong_column_type_is_refused(two_runs):
    wh, _, _ = two_runs
    t = pq.read_table(wh.index_file)
    _rewrite_index(wh, t, {FORMAT_KEY: str(INDEX_FORMAT + 1).encode()})
    for read in (
        lambda w: w.run_index().run_records(),
        lambda w: query(w, "select count(*) from task_states"),
    ):
        with pytest.raises(DamagedIndex, match="newer profetl"):
            read(Warehouse(wh.path))
    i = t.column_names.index("raw_part")
    _rewrite_index(wh, t.set_column(i, "raw_part", pa.array([1] * t.num_rows, pa.int64())), None)
    for read in (
        lambda w: w.run_index().run_records(),
        lambda w: query(w, "select count(*) from task_states"),
    ):
        with pytest.raises(DamagedIndex, match="raw_part is not of the index's type"):
            read(Warehouse(wh.path))


def test_an_index_written_before_formats_and_sizes_still_opens_and_commits(two_runs):
    """An older profetl's index: no format key, no ``files`` column."""
    wh, dumps, (a, b) = two_runs
    expected = counts(wh.path)
    t = pq.read_table(wh.index_file).drop_columns(["files"])
    _rewrite_index(wh, t, None)
    old = Warehouse(wh.path)
    assert sorted(r["run_id"] for r in old.run_index().run_records()) == sorted([a, b])
    assert counts(wh.path) == expected
    assert query(old, "select count(*) from task_states").rows == [(expected["task_states"],)]
    with old.writer():
        (o,) = run_roots(old, [dumps[0]], force=True)
    assert o.status == "built"
    assert counts(wh.path) == expected
    # the new run's files are recorded, the other run's (committed before sizes were) are not
    listed = {e["file"] for e in recorded_files(Warehouse(wh.path))}
    assert listed and all(e.startswith(("raw/", "marts/")) for e in listed)
    assert {Path(f).name.split(".")[0] for f in listed} == {
        f"part-{old.run_index().rows_by_run_id()[a]['raw_part']}",
        f"part-{old.run_index().rows_by_run_id()[a]['mart_part']}",
    }


# --- 4. sizes and hashes of what was committed ---------------------------------------------


def test_every_committed_file_has_its_size_and_hash_in_the_index(two_runs):
    wh, dumps, (a, _) = two_runs
    assert_recorded(Warehouse(wh.path))
    with wh.writer():  # a rebuild: new marts, the raw files as they were
        from pipeline.jobs.runner import rebuild

        rebuild(wh, wh.run_index().run_record(a))
    assert_recorded(Warehouse(wh.path))


def test_sizes_and_hashes_of_group_files_after_compaction_replace_and_drop(tmp_path, small_groups):
    wh = Warehouse(tmp_path / "wh")
    dumps = []
    for i in range(5):
        dumps.append(night(tmp_path / "dumps", i))
        with wh.writer():
            run_roots(wh, [dumps[-1]])
    idx = wh.run_index().rows_by_run_id()
    grouped = [r for r in idx.values() if is_group(r["raw_part"])]
    assert grouped
    assert_recorded(Warehouse(wh.path))
    with wh.writer():  # a run leaves its group: the group is written again
        run_roots(wh, [dumps[0]], force=True)
    assert_recorded(Warehouse(wh.path))
    with wh.writer():
        drop_run(wh, grouped[-1]["run_id"])
    assert_recorded(Warehouse(wh.path))


def test_the_shards_of_a_run_read_in_threads_are_recorded(tmp_path):
    dump = night(tmp_path / "dumps", 0)
    p = profetl("run", dump, "--read-threads", "2", "--warehouse", tmp_path / "wh")
    assert p.returncode == 0, p.stderr
    wh = Warehouse(tmp_path / "wh")
    assert shard_count(wh.run_index().run_records()[0]["ingest_id"]) == 2
    assert_recorded(wh)


@pytest.mark.parametrize("damage", ["truncated", "extended"])
def test_a_reader_fails_naming_a_part_file_whose_size_changed(two_runs, damage):
    wh, _, (a, _) = two_runs
    (f,) = wh.run_index().files_of_run("raw", "task_states", wh.run_index().run_record(a))
    recorded = f.stat().st_size
    data = f.read_bytes()
    f.write_bytes(data[:-100] if damage == "truncated" else data + b"\0" * 100)
    actual = f.stat().st_size
    reads = (
        lambda w: query(w, "select count(*) from task_states"),  # the placing columns, by DuckDB
        lambda w: connect(w).close(),  # the whole index, by Arrow
        lambda w: connect(w, [a], records=False).close(),  # one run's placing
        lambda w: connect(w, [a]).close(),
    )
    for read in reads:
        with pytest.raises(PartSizeMismatch) as e:
            read(Warehouse(wh.path))
        assert (
            str(f) in str(e.value) and f"{recorded} bytes" in str(e.value) and f"has {actual}" in str(e.value)
        )
    p = profetl("query", "select count(*) from task_states", "--warehouse", wh.path)
    _one_line_error(p, str(f), str(recorded), str(actual))
    # a table it does not hold still reads
    assert query(Warehouse(wh.path), "select count(*) from op_summary").rows[0][0] > 0


# --- kept versions of the index ---------------------------------------------------------------


def test_the_last_versions_of_the_index_are_kept_and_restore_a_deleted_index(two_runs, tmp_path):
    wh, dumps, (a, b) = two_runs
    expected = counts(wh.path)
    for _ in range(KEEP_VERSIONS + 1):  # more commits than versions kept
        with wh.writer():
            wh.held_writer().commit_run(wh.run_index().run_record(a))
    versions = wh.index_versions()
    assert len(versions) == KEEP_VERSIONS
    assert versions[-1].read_bytes() == wh.index_file.read_bytes()
    for v in versions:  # every kept version reads as an index and names files that exist
        t = read_index_version(v)
        assert sorted(t.column("run_id").to_pylist()) == sorted([a, b])
        entries = version_files(t)
        assert entries, v  # (a version naming no files would pass the line below unchecked)
        assert all((wh.path / e["file"]).stat().st_size == e["size"] for e in entries)
    with wh.writer():  # a writer's sweep keeps them
        pass
    assert wh.index_versions() == versions
    before = _state(wh.path)
    wh.index_file.unlink()
    p = profetl("run", dumps[0], "--warehouse", wh.path)
    assert p.returncode == 1 and _state(wh.path) == before
    shutil.copyfile(wh.index_versions()[-1], wh.index_file)  # the recovery the error points at
    restored = Warehouse(wh.path)
    assert sorted(restored.run_index().run_ids()) == sorted([a, b])
    assert counts(wh.path) == expected
    p = profetl("run", *dumps, "--warehouse", wh.path)
    assert p.returncode == 0, p.stderr
    assert _state(wh.path) == before  # unchanged dumps: nothing read again, nothing swept


# --- the exit of a command that read the index ---------------------------------------------


def test_the_index_is_decoded_from_its_bytes_in_the_reading_thread(two_runs, monkeypatch):
    """A snapshot holds the index file's bytes; Arrow's thread pool, decoding from them, lets
    go of them only after the read has returned, and needs the interpreter's lock to do so. A
    command that exits in that moment was aborted by the C++ runtime ("terminate called without
    an active exception", exit 134; how often: docs/architecture.md#reliability, "Exit"), too
    rarely to catch by repeating it here. No read of a snapshot may hand its bytes to the
    pool: each asks for no threads, whether by keyword or by position."""
    wh, _, run_ids = two_runs
    reads = []
    read = pq.ParquetFile.read

    def spied(self, *args, **kwargs):
        asked = inspect.signature(read).bind(self, *args, **kwargs).arguments
        reads.append(asked.get("use_threads", True))
        return read(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", spied)
    snap = Warehouse(wh.path).run_index()
    assert sorted(snap.run_ids()) == sorted(run_ids)
    assert {r["run_id"] for r in snap.run_records()} == set(run_ids)
    assert snap.index_table().num_rows == 2
    assert reads and not any(reads), reads
