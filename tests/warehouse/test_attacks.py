"""The warehouse attacked (issue 42, item 7): every kind of damage a careless operator, a sync
tool or a full disk leaves, against every command. Whatever the damage, no command prints a
traceback or an internal error, no command deletes or rewrites a file that was committed, and a
command that answers (exit 0) answers as it did on the whole warehouse: never a silently partial
answer. Then `check` names the damage and `check --repair` brings back what the damage left.

Bounded: one warehouse of three runs (two compacted into a group, one alone), copied per
damage; the commands run in this process (CliRunner)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli.main import app
from pipeline.warehouse.commit_records import RECORDS
from pipeline.warehouse.layout import is_group, part_of
from pipeline.warehouse.store import Warehouse
from tests.helpers.nights import night
from tests.helpers.warehouse_checks import part_file_of
from tests.warehouse.test_check import base  # noqa: F401 (the warehouse fixture)

pytestmark = pytest.mark.slow  # ingests and builds dumps


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _group_and_alone(wh: Warehouse) -> tuple[str, str]:
    idx = wh.run_index().rows_by_run_id()
    group = next(v["raw_part"] for v in idx.values() if is_group(v["raw_part"]))
    alone = next(v for v in idx.values() if not is_group(v["raw_part"]))
    return group, alone["run_id"]


def _truncate(f: Path) -> None:
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _flip(f: Path) -> None:
    data = bytearray(f.read_bytes())
    data[len(data) // 3] ^= 0xFF
    f.write_bytes(bytes(data))


def _append(f: Path) -> None:
    f.write_bytes(f.read_bytes() + b"\0" * 100)


def _dir_in_place(f: Path) -> None:
    f.unlink()
    f.mkdir()


# name -> (what it does to a warehouse, whether the index is hit: every command then stops)
DAMAGE = {
    "index deleted": (lambda wh: wh.index_file.unlink(), True),
    "index truncated": (lambda wh: _truncate(wh.index_file), True),
    "index emptied": (lambda wh: wh.index_file.write_bytes(b""), True),
    "index with bytes appended": (lambda wh: _append(wh.index_file), True),
    "part file copied over the index": (
        lambda wh: shutil.copyfile(
            part_file_of(wh, "raw", "api_calls", _group_and_alone(wh)[0]), wh.index_file
        ),
        True,
    ),
    "commit record copied over the index": (
        lambda wh: shutil.copyfile(
            next((wh.path / "raw" / RECORDS).glob("*.parquet")),
            wh.index_file,
        ),
        True,
    ),
    "index and its kept versions deleted (rm -r runs)": (lambda wh: shutil.rmtree(wh.path / "runs"), True),
    "a folder in the index's place": (lambda wh: _dir_in_place(wh.index_file), True),
    "group file truncated": (
        lambda wh: _truncate(part_file_of(wh, "raw", "api_calls", _group_and_alone(wh)[0])),
        False,
    ),
    "group file deleted": (
        lambda wh: part_file_of(wh, "marts", "op_summary", _mart_group(wh)).unlink(),
        False,
    ),
    "own part file with a byte changed": (
        lambda wh: _flip(
            part_file_of(
                wh, "raw", "api_calls", wh.run_index().index_row(_group_and_alone(wh)[1])["raw_part"]
            )
        ),
        False,
    ),
    "own part file with bytes appended": (
        lambda wh: _append(
            part_file_of(
                wh, "raw", "task_states", wh.run_index().index_row(_group_and_alone(wh)[1])["raw_part"]
            )
        ),
        False,
    ),
    "a folder in a part file's place": (
        lambda wh: _dir_in_place(
            part_file_of(
                wh, "raw", "api_calls", wh.run_index().index_row(_group_and_alone(wh)[1])["raw_part"]
            )
        ),
        False,
    ),
    "commit records deleted": (
        lambda wh: [shutil.rmtree(wh.path / lay / RECORDS) for lay in ("raw", "marts")],
        False,
    ),
    "a stray file in a table folder": (
        lambda wh: (wh.path / "raw" / "api_calls" / "part-stray.parquet").write_bytes(b"PAR1 not really"),
        False,
    ),
}


def _mart_group(wh: Warehouse) -> str:
    return next(v["mart_part"] for v in wh.run_index().rows_by_run_id().values() if is_group(v["mart_part"]))


def _committed(wh: Warehouse) -> dict[str, bytes]:
    """Every file of the whole warehouse but the writer's own bookkeeping, with its bytes."""
    return {
        f.relative_to(wh.path).as_posix(): f.read_bytes()
        for f in wh.path.rglob("*")
        if f.is_file() and f.name != ".lock" and ".tmp" not in f.parts
    }


def _answers(wh_path: Path) -> dict:
    """What the read commands answer on a whole warehouse."""
    out = {}
    for sql in ("select count(*) as n from api_calls", "select count(*) as n from op_summary"):
        r = _cli("query", sql, "-w", wh_path, "--json")
        assert r.exit_code == 0, r.output
        out[sql] = r.stdout
    r = _cli("runs", "-w", wh_path, "--json")
    out["runs"] = sorted(x["run_id"] for x in json.loads(r.stdout))
    return out


@pytest.fixture(scope="module")
def whole(base):  # noqa: F811 (the fixture imported above)
    wh = Warehouse(base)
    return _committed(wh), _answers(base)


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_no_command_fails_badly_deletes_committed_data_or_answers_partially(base, whole, damage, tmp_path):  # noqa: F811
    committed, answers = whole
    wh = Warehouse(tmp_path / "wh")
    shutil.copytree(base, wh.path)
    _, alone = _group_and_alone(wh)
    do, index_hit = DAMAGE[damage]
    do(wh)
    new_night = night(tmp_path / "dumps", 7)
    readers = [
        ("runs", "--json"),
        ("query", "select count(*) as n from api_calls", "--json"),
        ("query", "select count(*) as n from op_summary", "--json"),
        ("show", alone),
        ("export", "op_summary", "--since", "2000-01-01", "--out", tmp_path / "out.csv"),
        ("report", alone, "--out", tmp_path / "r.html"),
        ("check",),
    ]
    writers = [("build", "--all"), ("run", new_night)]
    raw = set() if index_hit else {v["raw_part"] for v in wh.run_index().rows_by_run_id().values()}
    for args in readers + writers:
        before = _committed(wh)
        r = _cli(*args, "-w", wh.path)
        said = r.output + r.stderr
        assert "Traceback" not in said and "internal error" not in said.lower(), (args, said)
        assert r.exit_code in (0, 1, 5), (args, r.exit_code, said)
        now = _committed(wh)
        changed = sorted(f for f in before if before[f] != now.get(f) and not f.startswith("runs/_history/"))
        if index_hit or args not in writers:  # nothing written, nothing deleted
            assert not changed, (args, changed[:5], said)
        else:  # a writer rebuilds marts and adds runs; the committed raw rows are never rewritten
            # (a file no run owns holds no committed row: the writer's sweep removes it, as documented;
            # a commit record says a run's newest row: a commit writes its runs' records again)
            hurt = [
                f
                for f in changed
                if f.startswith("raw/") and f"/{RECORDS}/" not in f and part_of(f.rsplit("/", 1)[1]) in raw
            ]
            assert not hurt, (args, hurt)
        if index_hit:
            assert r.exit_code == 1 and "runs/runs.parquet" in said, (args, said)
        elif args[0] == "query" and r.exit_code == 0:  # an answer is the whole answer
            assert r.stdout == answers[args[1]], (args, r.stdout)
        elif args[0] == "runs":
            assert r.exit_code == 0 and sorted(x["run_id"] for x in json.loads(r.stdout)) == answers["runs"]
        elif args[0] == "check":  # names the damage, or says whole where nothing committed was hurt
            hurt = damage.startswith(("group", "own", "a folder in a part"))
            assert r.exit_code == (1 if hurt else 0), (damage, said)
            if damage == "commit records deleted":  # not damage, but said: no rebuild for them
                assert said.splitlines()[-1].endswith("; 4 part(s) without a commit record"), said
    if index_hit:  # --repair restores the index whatever happened to it (a kept version, or the records)
        r = _cli("check", "--repair", "-w", wh.path)
        assert r.exit_code == 0, r.output
        assert _answers(wh.path) == answers
        layers = ("raw/", "marts/")
        assert {f: b for f, b in _committed(wh).items() if f.startswith(layers)} == {
            f: b for f, b in committed.items() if f.startswith(layers)
        }
