"""`profetl check [--repair]` (issue 42): every file the index names is verified (present, size,
hash, readable, schema), files no run owns are listed, runs are said whole or damaged; --repair
restores a missing or foreign index from its kept versions and drops only the runs named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.warehouse.commit_records import RECORDS
from pipeline.warehouse.layout import is_group
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import part_file_of, recorded_files

pytestmark = pytest.mark.slow  # ingests and builds dumps


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def base(sample_nights):
    """Three runs at test sizes of compaction: the first two in a group, the third alone (built
    once per test process: tests/helpers/nights.py)."""
    built = sample_nights(3, small_groups=True)
    idx = Warehouse(built.wh).run_index().rows_by_run_id()
    groups = {v["raw_part"] for v in idx.values() if is_group(v["raw_part"])}
    assert len(groups) == 1 and len(idx) == 3
    return built.wh


@pytest.fixture
def wh(base, tmp_path):
    shutil.copytree(base, tmp_path / "wh")
    return Warehouse(tmp_path / "wh")


def _group(wh: Warehouse) -> tuple[str, list[str], str]:
    """(the group, its runs, the run alone)."""
    idx = wh.run_index().rows_by_run_id()
    group = next(v["raw_part"] for v in idx.values() if is_group(v["raw_part"]))
    members = sorted(k for k, v in idx.items() if v["raw_part"] == group)
    alone = next(k for k in idx if k not in members)
    return group, members, alone


def _check(wh: Warehouse, *extra) -> tuple[int, dict]:
    r = _cli("check", "-w", wh.path, "--json", *extra)
    return r.exit_code, json.loads(r.stdout)


def _listed_runs(wh: Warehouse) -> list[str]:
    r = _cli("runs", "-w", wh.path, "--json")
    assert r.exit_code == 0, r.output
    return sorted(x["run_id"] for x in json.loads(r.stdout))


def _query_counts(wh: Warehouse) -> dict:
    out = {}
    for t in ("api_calls", "task_runs", "op_summary", "task_scheduler"):
        r = _cli("query", f"select count(*) as n from {t}", "-w", wh.path, "--json")
        assert r.exit_code == 0, r.output
        out[t] = json.loads(r.stdout.splitlines()[0])["n"]
    return out


def _part_files(wh: Warehouse) -> set[Path]:
    """The table files of both layers (not the parts' commit records)."""
    return {
        f
        for layer in ("raw", "marts")
        for f in (wh.path / layer).rglob("*.parquet")
        if f.parent.name != RECORDS
    }


def _records(wh: Warehouse) -> set[Path]:
    return {f for layer in ("raw", "marts") for f in (wh.path / layer / RECORDS).glob("*.parquet")}


def test_a_whole_warehouse_is_whole(wh):
    code, rep = _check(wh)
    assert code == 0 and rep["whole"]
    assert len(rep["runs"]) == 3 and all(r["whole"] for r in rep["runs"])
    recorded = {e["file"] for e in recorded_files(wh)}
    assert rep["files_checked"] == len(recorded) == len(_part_files(wh))
    assert rep["unowned"] == [] and rep["damaged_files"] == []
    r = _cli("check", "-w", wh.path)
    assert r.exit_code == 0 and r.stdout.splitlines()[-1].startswith("whole:")


@pytest.mark.parametrize("how", ["deleted", "part file copied over it", "commit record copied over it"])
def test_a_lost_index_is_named_and_repair_restores_it_from_its_kept_versions(wh, how):
    runs, counts = _listed_runs(wh), _query_counts(wh)
    files = {f: f.read_bytes() for f in _part_files(wh)}
    # a commit record has the index's columns (the rows of one part): it is refused all the same
    foreign = next(iter(sorted(_records(wh) if "record" in how else files)))
    foreign_bytes = foreign.read_bytes()
    if how == "deleted":
        wh.index_file.unlink()
    else:
        shutil.copyfile(foreign, wh.index_file)
    r = _cli("check", "-w", wh.path)
    assert r.exit_code == 1
    assert "runs/runs.parquet" in r.stdout.splitlines()[0]
    assert ("missing" if how == "deleted" else "cannot be read") in r.stdout.splitlines()[0]
    assert _cli("runs", "-w", wh.path).exit_code == 1  # every other command stops

    r = _cli("check", "--repair", "-w", wh.path)
    assert r.exit_code == 0, r.output
    newest = wh.index_versions()[-1]
    assert f"from runs/_history/{newest.name}" in r.stdout
    assert _listed_runs(wh) == runs and _query_counts(wh) == counts
    assert {f: f.read_bytes() for f in _part_files(wh)} == files  # nothing deleted or changed
    assert _check(wh)[0] == 0
    if how != "deleted":  # the foreign file is kept aside, not lost
        assert (wh.path / "runs" / "_runs.parquet.damaged").read_bytes() == foreign_bytes
    # a reader of the folder (Hive, Trino: docs/cluster.md#trino) skips names starting with "_" or
    # "."; what it reads is the index alone
    assert [f.name for f in (wh.path / "runs").iterdir() if f.name[0] not in "_."] == ["runs.parquet"]


def test_repair_skips_a_kept_version_that_cannot_restore(wh):
    _, _, alone = _group(wh)
    with wh.writer():  # one more commit: the two newest versions name the same files
        wh.held_writer().commit_run(wh.run_index().run_record(alone))
    runs, versions = _listed_runs(wh), wh.index_versions()
    wh.index_file.unlink()
    versions[-1].write_bytes(versions[-1].read_bytes()[:50])  # the newest kept version damaged too
    r = _cli("check", "--repair", "-w", wh.path)
    assert r.exit_code == 0, r.output
    assert f"from runs/_history/{versions[-2].name}" in r.stdout and _listed_runs(wh) == runs


def _runs_json(wh: Warehouse) -> list[dict]:
    r = _cli("runs", "-w", wh.path, "--json")
    assert r.exit_code == 0, r.output
    return sorted(json.loads(r.stdout), key=lambda x: x["run_id"])


def test_repair_rebuilds_the_index_from_the_commit_records_when_no_version_is_kept(wh):
    group, members, alone = _group(wh)
    # the run alone built again: a new mart part, whose record is newer than its raw part's
    old_mart = wh.run_index().index_row(alone)["mart_part"]
    r = _cli("build", alone, "-w", wh.path)
    assert r.exit_code == 0, r.output
    assert Warehouse(wh.path).run_index().index_row(alone)["mart_part"] != old_mart
    before, counts = _runs_json(wh), _query_counts(wh)
    files = {f: f.read_bytes() for f in _part_files(wh)}
    recorded = sorted((e["file"], e["size"], e["sha256"]) for e in recorded_files(wh))
    assert recorded  # (none would make the comparison after the rebuild check nothing)
    shutil.rmtree(wh.path / "runs")  # the index and every kept version of it
    assert _cli("runs", "-w", wh.path).exit_code == 1
    r = _cli("check", "--repair", "-w", wh.path)
    assert r.exit_code == 0, r.output
    assert "rebuilt    runs/runs.parquet from the commit records of 3 run(s)" in r.stdout
    assert _runs_json(wh) == before and _query_counts(wh) == counts
    assert sorted((e["file"], e["size"], e["sha256"]) for e in recorded_files(wh)) == recorded
    assert {f: f.read_bytes() for f in _part_files(wh)} == files
    code, rep = _check(wh)  # every file against the size and hash its record kept
    assert code == 0 and rep["whole"] and rep["unowned"] == []
    assert wh.index_versions()  # and a kept version of the rebuilt index


def test_repair_rebuilds_the_runs_whose_parts_are_whole_and_names_the_rest(wh):
    group, members, alone = _group(wh)
    f = part_file_of(wh, "raw", "api_calls", group)
    f.unlink()  # one file of the group gone with the index and its versions
    shutil.rmtree(wh.path / "runs")
    r = _cli("check", "--repair", "-w", wh.path)
    assert r.exit_code == 0, r.output
    assert "from the commit records of 1 run(s)" in r.stdout
    assert f"not rebuilt raw/{group}: {f.relative_to(wh.path).as_posix()} is missing" in r.stdout
    assert _listed_runs(wh) == [alone]
    _, rep = _check(wh)  # the group's other files are nobody's now: listed, not deleted
    assert part_file_of(wh, "raw", "task_runs", group).relative_to(wh.path).as_posix() in rep["unowned"]
    assert part_file_of(wh, "raw", "task_runs", group).exists()


def test_repair_with_neither_a_kept_version_nor_a_commit_record_changes_nothing(wh):
    shutil.rmtree(wh.path / "runs")
    for f in _records(wh):
        f.unlink()
    before = sorted(p for p in wh.path.rglob("*"))
    r = _cli("check", "--repair", "-w", wh.path)
    assert r.exit_code == 1
    assert "nor can the part files' commit records rebuild it (0 commit record(s))" in r.stderr
    assert "nothing was changed" in r.stderr and "(none is kept)" in r.stderr
    assert sorted(p for p in wh.path.rglob("*")) == before


def test_a_truncated_part_file_is_named_with_both_sizes_and_only_its_runs_are_damaged(wh):
    group, members, alone = _group(wh)
    f = part_file_of(wh, "raw", "api_calls", group)
    recorded = f.stat().st_size
    f.write_bytes(f.read_bytes()[: recorded // 2])
    r = _cli("check", "-w", wh.path)
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    rel = f.relative_to(wh.path).as_posix()
    assert f"damaged    {rel}: size {recorded // 2} bytes, {recorded} recorded" in lines
    assert lines[-1].startswith("DAMAGED:")
    _, rep = _check(wh)
    assert {r["run_id"]: r["whole"] for r in rep["runs"]} == {
        members[0]: False,
        members[1]: False,
        alone: True,
    }


def test_changed_bytes_of_the_same_size_differ_from_the_recorded_hash(wh):
    _, _, alone = _group(wh)
    f = part_file_of(wh, "raw", "api_calls", wh.run_index().index_row(alone)["raw_part"])
    data = bytearray(f.read_bytes())
    data[len(data) // 3] ^= 0x01
    f.write_bytes(bytes(data))
    code, rep = _check(wh)
    assert code == 1
    assert [(d["file"], d["problem"]) for d in rep["damaged_files"]] == [
        (f.relative_to(wh.path).as_posix(), "content differs from its recorded SHA-256 (same size)")
    ]
    assert [r["run_id"] for r in rep["runs"] if not r["whole"]] == [alone]


def test_a_group_missing_one_tables_file_is_named(wh):
    group, members, _ = _group(wh)
    f = part_file_of(wh, "marts", "op_summary", wh.run_index().index_row(members[0])["mart_part"])
    f.unlink()
    code, rep = _check(wh)
    assert code == 1
    assert [(d["file"], d["problem"]) for d in rep["damaged_files"]] == [
        (f.relative_to(wh.path).as_posix(), "missing")
    ]
    assert sorted(r["run_id"] for r in rep["runs"] if not r["whole"]) == members


def test_a_file_no_run_owns_is_listed_and_not_damage(wh):
    stray = wh.path / "raw" / "api_calls" / "part-20200101T000000-deadbeef.parquet"
    shutil.copyfile(next(iter(sorted((wh.path / "raw" / "api_calls").iterdir()))), stray)
    (wh.path / ".tmp").mkdir()
    (wh.path / ".tmp" / "x.parquet").write_bytes(b"x")  # scratch space: not listed
    code, rep = _check(wh)
    assert code == 0 and rep["unowned"] == ["raw/api_calls/part-20200101T000000-deadbeef.parquet"]
    r = _cli("check", "--repair", "-w", wh.path)  # reported, not deleted
    assert r.exit_code == 0 and stray.exists()


def test_repair_drop_drops_only_the_run_named_and_deletes_no_other_committed_file(wh):
    group, members, alone = _group(wh)
    f = part_file_of(wh, "raw", "api_calls", wh.run_index().index_row(alone)["raw_part"])
    f.write_bytes(f.read_bytes()[:100])
    others = {e["file"] for e in recorded_files(wh)} - {
        e["file"]
        for e in recorded_files(wh)
        if e["file"].split("/")[-1].split(".")[0][len("part-") :]
        in (wh.run_index().index_row(alone)["raw_part"], wh.run_index().index_row(alone)["mart_part"])
    }
    r = _cli("check", "--repair", "-w", wh.path)  # no --drop: nothing dropped, damage still reported
    assert r.exit_code == 1 and _listed_runs(wh) == sorted(members + [alone]) and f.exists()
    r = _cli("check", "--repair", "--drop", alone, "-w", wh.path)
    assert r.exit_code == 0, r.output
    assert f"dropped    {alone}" in r.stdout
    assert _listed_runs(wh) == members
    assert others  # (none would pass the line below unchecked)
    assert all((wh.path / o).exists() for o in others)  # the group's files are all kept
    assert not f.exists()


def test_drop_without_repair_is_a_usage_error(wh):
    r = _cli("check", "--drop", "x", "-w", wh.path)
    assert r.exit_code == 2


def test_repair_waits_for_no_live_writer(wh):
    with wh.writer():
        r = _cli("check", "--repair", "-w", wh.path)
    assert r.exit_code == 3
