"""``profetl check``: verify a warehouse against its run index, and repair the index.

``check`` reads the index (present, readable, a run index) and verifies every part file it
names: present, of the size and SHA-256 recorded at its commit (``files``), readable as Parquet
and with the columns of its table's contract. It lists the files no run owns, and says run
by run what is whole. It never writes; a warehouse written by profetl 0.2 it refuses, as every
reader does (WarehouseNeedsUpgrade, naming ``check --repair``).

``repair`` (under the writer lock, without the sweep a damaged index forbids) first upgrades a
warehouse written by profetl 0.2 (``upgrade.migrate``; the runs ``drop`` names are dropped
from the old layout first: how a run whose old commit record cannot be read is let go). Then
it restores a missing or damaged index from the newest kept version (runs/_history/) that
reads as an index and whose files are all there with their recorded sizes; with none, it
rebuilds the index from the commit records beside the part files
(pipeline/warehouse/commit_records.py): every run whose parts are whole, as the last commit
that touched it left it. The damaged index is kept beside it (``runs/_runs.parquet.damaged``).
Then it drops the runs named (``drop``) and nothing else: files no run owns are reported, not
deleted (the next writer's sweep removes them, as it always does).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import DamagedIndex, IndexNotRestorable
from pipeline.lazy import lazy
from pipeline.warehouse import commit_records, upgrade
from pipeline.warehouse.index import arrow_kind, index_schema, read_index_version, version_files
from pipeline.warehouse.layout import (
    LAYERS,
    digest,
    entry_part,
    file_schema,
    fsync_dir,
    layer_tables,
    part_files,
    part_of,
)
from pipeline.warehouse.part_rows import reason
from pipeline.warehouse.store import Warehouse

pa = lazy("pyarrow")
pq = lazy("pyarrow.parquet")

# where check --repair keeps a damaged index, beside it: the leading "_" hides it from Hive,
# Trino and Spark, which read every other file of runs/ as rows of the index (docs/cluster.md#trino)
DAMAGED_INDEX = "_runs.parquet.damaged"


@dataclass
class FileCheck:
    file: str  # relative to the warehouse
    problem: str | None = None  # None: whole
    recorded_size: int | None = None
    size: int | None = None


@dataclass
class RunCheck:
    run_id: str
    problems: list[str] = field(default_factory=list)  # "<file>: <what is wrong>"

    @property
    def whole(self) -> bool:
        return not self.problems


@dataclass
class CheckReport:
    index: str  # relative path of the index
    index_problem: str | None = None  # None: present, readable, a run index (or no warehouse yet)
    runs: list[RunCheck] = field(default_factory=list)
    files: list[FileCheck] = field(default_factory=list)  # every file the index names
    unowned: list[str] = field(default_factory=list)  # part-folder files no run owns
    unrecorded: int = 0  # parts committed by a profetl that recorded no sizes (checked as read)
    # parts without their commit record (deleted, or committed by a profetl that wrote none): not
    # damage, but the index cannot be rebuilt for their runs should it and its versions be lost
    no_record: int = 0

    @property
    def damaged_files(self) -> list[FileCheck]:
        return [f for f in self.files if f.problem]

    @property
    def whole(self) -> bool:
        return self.index_problem is None and not self.damaged_files and all(r.whole for r in self.runs)


@dataclass
class RepairReport:
    restored_from: str | None = None  # the kept version the index was restored from
    rebuilt_runs: int = 0  # runs the commit records rebuilt (when no kept version could restore)
    not_rebuilt: list[str] = field(default_factory=list)  # records or parts that could not be used, and why
    kept_damaged: str | None = None  # where the damaged index was moved
    upgraded_runs: int = 0  # runs moved from profetl 0.2's layout (``upgrade.migrate``)
    dropped: dict[str, int] = field(default_factory=dict)  # run id -> files removed
    after: CheckReport | None = None


def _rel(wh: Warehouse, f: Path) -> str:
    return f.relative_to(wh.path).as_posix()


def _index_problem(wh: Warehouse) -> tuple[str | None, object]:
    """(what is wrong with the index or None, its table or None)."""
    f = wh.index_file
    if not f.exists():
        upgrade.refuse(wh)  # profetl 0.2's layout: `check --repair` upgrades it first
        parts, versions = len(wh.flat_part_files()), len(wh.index_versions())
        if parts or versions:
            return f"missing ({parts} part file(s), {versions} kept version(s) of it)", None
        return None, None  # an empty new warehouse
    try:
        return None, read_index_version(f)
    except DamagedIndex as e:
        return f"cannot be read as a run index ({e.reason})", None


def _verify(wh: Warehouse, rel: str, entry: dict | None) -> FileCheck:
    """One part file against its recorded entry (None: none recorded)."""
    f = wh.path / rel
    fc = FileCheck(rel, recorded_size=entry["size"] if entry else None)
    try:
        fc.size = f.stat().st_size
    except FileNotFoundError:
        fc.problem = "missing"
        return fc
    if entry is not None:
        if fc.size != entry["size"]:
            fc.problem = f"size {fc.size} bytes, {entry['size']} recorded"
            return fc
        if entry.get("sha256") and digest(f)["sha256"] != entry["sha256"]:
            fc.problem = "content differs from its recorded SHA-256 (same size)"
            return fc
    try:
        with pq.ParquetFile(f) as pf:
            schema = pf.schema_arrow
            pf.read_row_group(0) if pf.metadata.num_row_groups else None
    except (OSError, pa.ArrowException, UnicodeDecodeError) as e:
        fc.problem = f"not readable as Parquet ({reason(e)})"
        return fc
    layer, table = rel.split("/")[:2]
    want = file_schema(layer, table)
    names = set(schema.names)
    if "run_id" not in names:
        fc.problem = "schema: no run_id column"
        return fc
    for fld in want:
        if fld.name in names and not _same_kind(schema.field(fld.name).type, fld.type):
            fc.problem = (
                f"schema: column {fld.name} is {schema.field(fld.name).type}, the contract says {fld.type}"
            )
            return fc
    return fc


def _same_kind(a, b) -> bool:
    if a == b:
        return True
    if pa.types.is_dictionary(a):
        a = a.value_type
    return a == b or arrow_kind(a) == arrow_kind(b)


def check(wh: Warehouse) -> CheckReport:
    """Verify the warehouse (read only): see the module's docstring."""
    rep = CheckReport(index=_rel(wh, wh.index_file))
    rep.index_problem, t = _index_problem(wh)
    if t is None:
        return rep  # which files are committed is unknown: none is called unowned
    rows = t.select(["run_id", "raw_part", "mart_part"]).to_pylist()
    recorded: dict[tuple[str, str], dict[str, dict]] = {}
    for e in version_files(t):
        recorded.setdefault(entry_part(e["file"]), {})[e["file"]] = e
    checked: dict[tuple[str, str], list[FileCheck]] = {}
    for r in rows:
        for layer, key, _ in LAYERS:
            part = r.get(key)
            if not part or (layer, part) in checked:
                continue
            entries = recorded.get((layer, part))
            if entries:
                out = [_verify(wh, rel, e) for rel, e in sorted(entries.items())]
            else:  # committed by a profetl that recorded no sizes: the files that are there, as read
                rep.unrecorded += 1
                out = [
                    _verify(wh, _rel(wh, f), None)
                    for table in layer_tables(layer)
                    for f in part_files(wh.path, layer, table, part)
                    if f.exists()
                ]
            checked[(layer, part)] = out
            if not commit_records.record_file(wh.path, layer, part).exists():
                rep.no_record += 1
            rep.files.extend(out)
    for r in rows:
        rc = RunCheck(r["run_id"])
        for layer, key, _ in LAYERS:
            for fc in checked.get((layer, r.get(key)), []):
                if fc.problem:
                    rc.problems.append(f"{fc.file}: {fc.problem}")
        rep.runs.append(rc)
    named = {fc.file for fcs in checked.values() for fc in fcs}
    parts = {p for p in checked}
    rep.unowned = sorted(
        rel
        for f in _layer_files(wh)
        if (rel := _rel(wh, f)) not in named and (rel.split("/")[0], part_of(f.name)) not in parts
    )
    return rep


def _layer_files(wh: Warehouse) -> list[Path]:
    """Every file under the layers' folders (raw/, marts/)."""
    out = []
    for layer, _, _ in LAYERS:
        base = wh.path / layer
        if base.is_dir():
            out.extend(f for f in base.rglob("*") if f.is_file())
    return out


def _usable(wh: Warehouse, v: Path) -> tuple[object, str | None]:
    """(the kept version's table, None) when it can restore the index, else (None, why not)."""
    try:
        t = read_index_version(v)
    except DamagedIndex as e:
        return None, f"{v.name}: {e.reason}"
    if not t.num_rows and wh.flat_part_files():  # (a new warehouse's empty index) would orphan them all
        return None, f"{v.name}: names no run, and the warehouse holds part files"
    for e in version_files(t):
        f = wh.path / e["file"]
        try:
            size = f.stat().st_size
        except FileNotFoundError:
            return None, f"{v.name}: names {e['file']}, which is missing"
        if size != e["size"]:
            return None, f"{v.name}: names {e['file']} of {e['size']} bytes, it has {size}"
    return t, None


def repair(wh: Warehouse, drop: list[str] = (), wait_seconds: float = 0.0) -> RepairReport:
    """Upgrade a warehouse of profetl 0.2 (the runs named dropped first: a run whose record
    cannot be read stops the upgrade until it is), restore a missing or damaged index, drop the
    runs named (and nothing else), under the writer lock; ``after`` is the check of the
    repaired warehouse."""
    rep = RepairReport()
    with wh.writer(wait_seconds=wait_seconds, prepare=False) as w:
        if upgrade.needs_upgrade(wh):
            if drop:
                rep.dropped = upgrade.drop_old(w, list(drop))
                drop = ()
            rep.upgraded_runs = upgrade.migrate(w)
        problem, _ = _index_problem(wh)
        if problem is not None:
            tried = []
            for v in reversed(wh.index_versions()):
                t, why = _usable(wh, v)
                if t is None:
                    tried.append(why)
                    continue
                f = wh.index_file
                _aside(wh, rep)
                tmp = f.with_name(".runs-restore.tmp")
                shutil.copyfile(v, tmp)
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, f)
                fsync_dir(f.parent)
                rep.restored_from = _rel(wh, v)
                break
            else:
                rebuilt = commit_records.rebuild(wh.path, index_schema())
                if not rebuilt.index:
                    why = rebuilt.unreadable + rebuilt.broken
                    raise IndexNotRestorable(
                        wh.index_file, problem, tried, f"{rebuilt.records} commit record(s)", why
                    )
                _aside(wh, rep)
                w.write_index(rebuilt.index)
                rep.rebuilt_runs = len(rebuilt.index)
                rep.not_rebuilt = rebuilt.unreadable + rebuilt.broken
        if drop:
            wh.forget_run_index()
            rep.dropped = w.drop_runs(list(drop))
    rep.after = check(Warehouse(wh.path))
    return rep


def _aside(wh: Warehouse, rep: RepairReport) -> None:
    """Move a damaged index out of the way, kept (``runs/_runs.parquet.damaged``)."""
    f = wh.index_file
    if f.exists():
        aside = f.with_name(DAMAGED_INDEX)
        os.replace(f, aside)
        rep.kept_damaged = _rel(wh, aside)
