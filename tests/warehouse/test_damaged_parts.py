"""A part file that is truncated or missing: every writer names it, says what it can still do,
and writes nothing it could not read (docs/architecture.md#commit)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.warehouse.layout import is_group, part_of
from pipeline.warehouse.store import Warehouse
from tests.helpers.nights import compaction_at_test_sizes, night
from tests.helpers.warehouse_checks import assert_consistent, part_file_of

pytestmark = pytest.mark.slow


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _files(wh: Warehouse) -> dict[Path, str]:
    """Every part file's content hash (the index aside: a command that commits replaces it)."""
    return {
        f: hashlib.sha256(f.read_bytes()).hexdigest()
        for layer in ("raw", "marts")
        for f in (wh.path / layer).rglob("*.parquet")
    }


def _one_line_error(r, name: str) -> None:
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("profetl: error: ") for line in lines), r.stderr
    assert name in r.stderr, r.stderr


@pytest.fixture
def grouped(sample_nights, tmp_path):
    """Three nights at test sizes of compaction (built once per test process:
    tests/helpers/nights.py), copied here: the first two runs in a group, the third on its own.
    Returns the warehouse, the group's id and a folder for further nights; compaction stays at
    test sizes while the test runs."""
    wh = sample_nights(3, small_groups=True).copy(tmp_path / "wh")
    groups = {v["raw_part"] for v in wh.run_index().rows_by_run_id().values() if is_group(v["raw_part"])}
    assert len(groups) == 1
    with compaction_at_test_sizes():
        yield wh, groups.pop(), tmp_path / "dumps"


def _damage(wh: Warehouse, group: str, how: str) -> Path:
    f = part_file_of(wh, "raw", "api_calls", group)
    if how == "truncated":
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])
    else:
        f.unlink()
    return f


@pytest.mark.parametrize("how", ["truncated", "missing"])
def test_drop_and_build_leave_a_damaged_group_as_it_is(grouped, how):
    wh, group, _ = grouped
    damaged = _damage(wh, group, how)
    members = sorted(k for k, v in wh.run_index().rows_by_run_id().items() if v["raw_part"] == group)
    alone = next(k for k, v in wh.run_index().rows_by_run_id().items() if v["raw_part"] != group)
    before, index_before = _files(wh), wh.run_index().rows_by_run_id()

    r = _cli("drop", members[0], "-w", wh.path)  # the group cannot be written again without it
    _one_line_error(r, damaged.name)
    assert "nothing was changed" in r.stderr and f"profetl drop {' '.join(members)}" in r.stderr
    assert _files(wh) == before and wh.run_index().rows_by_run_id() == index_before

    r = _cli("build", "--all", "-w", wh.path)  # the intact run is built, the group's are not
    _one_line_error(r, damaged.name)
    assert sum(damaged.name in line for line in r.stderr.splitlines()) == len(members)
    after = _files(wh)

    def group_files(files: dict) -> dict:  # the files of groups (compacted runs), raw and marts
        return {f: h for f, h in files.items() if is_group(part_of(f.name) or "")}

    assert group in {part_of(f.name) for f in group_files(before)}  # (else nothing is compared)
    assert group_files(after) == group_files(before)  # every group file as it was
    index_after = wh.run_index().rows_by_run_id()
    assert index_after[alone]["build_id"] != index_before[alone]["build_id"]
    assert all(index_after[m] == index_before[m] for m in members)

    r = _cli("drop", *members, "-w", wh.path)  # the group's runs all at once: nothing to write again
    assert r.exit_code == 0, r.output
    assert set(wh.run_index().rows_by_run_id()) == {alone}
    assert not any(f.exists() for f in before if group in f.name)
    assert_consistent(wh.path)


def test_compaction_does_not_join_a_damaged_group(grouped):
    """The next nights commit their runs; compaction starts a new group instead of writing the
    damaged one again, and says so (exit 1), on that night only."""
    wh, group, dumps = grouped
    damaged = _damage(wh, group, "truncated")
    members = {k for k, v in wh.run_index().rows_by_run_id().items() if v["raw_part"] == group}
    before = {f: h for f, h in _files(wh).items() if group in f.name}

    r = _cli("run", night(dumps, 3), "-w", wh.path)  # two runs outside groups: no compaction yet
    assert r.exit_code == 0, r.output
    r = _cli("run", night(dumps, 4), "-w", wh.path)  # compaction: would join the newest group
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    (line,) = [line for line in r.stdout.splitlines() if line.startswith("failed")]  # run's summary
    assert damaged.name in line and f"compaction did not add runs to group {group}" in line, line
    idx = wh.run_index().rows_by_run_id()
    assert len(idx) == 5 and all(v["status"] == "built" for v in idx.values())
    assert {k for k, v in idx.items() if v["raw_part"] == group} == members
    assert {f: h for f, h in _files(wh).items() if group in f.name} == before  # untouched
    new_groups = {v["raw_part"] for k, v in idx.items() if is_group(v["raw_part"]) and k not in members}
    assert len(new_groups) == 1  # the two waiting runs, in a group of their own

    r = _cli("run", night(dumps, 5), "-w", wh.path)  # the newest group is the intact one now
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("how", ["truncated", "missing"])
def test_a_query_over_a_damaged_group_names_the_file_and_the_groups_runs(grouped, how):
    """A reader names the damaged file and what can be done for a group: drop its runs
    together (a grouped run cannot be re-ingested alone), never `run --force`."""
    wh, group, _ = grouped
    damaged = _damage(wh, group, how)
    members = sorted(k for k, v in wh.run_index().rows_by_run_id().items() if v["raw_part"] == group)
    r = _cli("query", "select count(*) from api_calls", "-w", wh.path)
    _one_line_error(r, damaged.name)
    assert f"profetl drop {' '.join(members)}" in r.stderr and "--force" not in r.stderr, r.stderr
