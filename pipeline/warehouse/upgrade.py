"""The upgrade from profetl 0.2's layout: the only code that knows it.

profetl 0.2 wrote a commit record per run (``runs/run_id=<id>/run.parquet``) and its part
files in a folder per run (``<layer>/<table>/run_id=<id>/part-<id>.parquet``, no run_id
column), and no index. Readers read such a warehouse as it is (``legacy_index``); the first
writer that takes the lock moves it to the current layout (``migrate``); a run whose record
cannot be read stops the move until it is dropped (``drop_legacy``) or run again with
``--force``. ``legacy_index`` reads a ``Warehouse``; ``migrate`` and ``drop_legacy`` are
functions over its ``Writer`` (``writer.py``), under the lock."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.errors import DamagedRun, UnknownRun
from pipeline.lazy import lazy
from pipeline.warehouse import compaction
from pipeline.warehouse.layout import LAYERS, fsync_dir, named_parts, rmdir_if_empty, run_order

pa = lazy("pyarrow")
pq = lazy("pyarrow.parquet")


def legacy_index(wh) -> dict[str, dict]:
    """profetl 0.2's per-run commit records (run_id as a column, or, since it left them,
    only the folder's key and the file's metadata); one that cannot be read goes to
    ``unreadable``, with the reason."""
    out = {}
    wh.unreadable, wh._damaged = {}, {}
    rows = []
    for f in sorted((wh.path / "runs").glob("run_id=*/run.parquet")):
        run_id = f.parent.name.split("=", 1)[1]
        try:
            rows.append(read_record(f, run_id))
        except DamagedRun as e:
            wh.unreadable[run_id] = str(e)
            wh._damaged[run_id] = e
    for r in rows:
        r["raw_part"] = f"run_id={r['run_id']}/part-{r['ingest_id']}" if r.get("ingest_id") else None
        r["mart_part"] = f"run_id={r['run_id']}/part-{r['build_id']}" if r.get("build_id") else None
        r["workload"] = None
        out[r["run_id"]] = r
    return out


def drop_legacy(w, run_id: str) -> int:
    """Remove a run of the 0.2 layout, readable record or not: its record and its run folders;
    then migrate the layout if no other record stops it. Returns the files removed."""
    wh = w.warehouse
    record = wh.path / "runs" / f"run_id={run_id}" / "run.parquet"
    files = [p for layer in ("raw", "marts") for p in (wh.path / layer).glob(f"*/run_id={run_id}/*")]
    if not record.exists() and not files:
        raise UnknownRun(f"no run {run_id!r} in {wh.path} (see `profetl runs`)")
    removed = 0
    if record.exists():
        record.unlink()
        fsync_dir(record.parent)
        removed += 1
    for p in files + list(record.parent.glob(".run-*.tmp")):
        p.unlink(missing_ok=True)
        removed += 1
    for d in [record.parent] + [p.parent for p in files]:
        rmdir_if_empty(d)
    wh.unreadable.pop(run_id, None)
    if wh.legacy():  # the last damaged record gone: the layout can move now
        w.migrated = migrate(w)
    return removed


def migrate(w, replacing: set[str] = frozenset()) -> int:
    """Move a warehouse of profetl 0.2's layout to this one: every run's files are written
    again with a run_id column (small runs into groups), then the index is written (the
    commit: a crash before it leaves the old layout, whole), then the old files go."""
    wh = w.warehouse
    idx = legacy_index(wh)
    if not idx or set(wh.unreadable) - set(replacing):  # which files a damaged record names
        return 0  # is unknown: wait for `drop` or `run --force` to settle it; nothing is moved
    for r in idx.values():  # from the run's own small files, before they are grouped
        r["workload"] = w.workload(r, r.get("raw_part"))
    before = named_parts(idx)
    for layer, key, id_key in LAYERS:
        parts = [r for r in idx.values() if r.get(key)]
        small, batch, size = [], [], 0
        for r in sorted(parts, key=run_order):
            n = compaction.run_bytes(w, layer, r[key])
            if n > compaction.SMALL_RUN_BYTES:  # stays in files of its own, now with a run_id column
                compaction.write_group(w, layer, key, [r], r[id_key])
                idx[r["run_id"]][key] = r[id_key]
                continue
            if batch and (len(batch) >= compaction.GROUP_RUNS or size + n > compaction.GROUP_BYTES):
                small.append(batch)
                batch, size = [], 0
            batch.append(r)
            size += n
        if batch:
            small.append(batch)
        for members in small:
            compaction.new_group(w, idx, layer, key, members)
    w.write_index(idx)
    w.delete_parts(before)
    for d in (wh.path / "runs").glob("run_id=*"):
        shutil.rmtree(d, ignore_errors=True)
    return len(idx)


OWNER_KEY = b"profetl.run_id"


def owned_by(table: pa.Table, run_id: str) -> pa.Table:
    """``table`` with the run it is the commit record of in its schema metadata."""
    return table.replace_schema_metadata({**(table.schema.metadata or {}), OWNER_KEY: run_id.encode()})


def read_record(f: Path, run_id: str) -> dict:
    """One commit record (``runs/run_id=<id>/run.parquet``), run_id (from the folder, or the
    column of a record written before it was dropped) first; DamagedRun saying why it cannot be
    read, or that it is another run's (its metadata, or its old run_id column, names another)."""
    try:
        table = pq.read_table(f)
        rows = table.to_pylist()
    except (OSError, pa.ArrowException) as e:
        reason = getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
        raise DamagedRun(run_id, f, reason) from None
    owner = (table.schema.metadata or {}).get(OWNER_KEY, run_id.encode()).decode(errors="replace")
    if owner != run_id:
        raise DamagedRun(run_id, f, f"it is the commit record of run {owner}")
    if len(rows) != 1 or rows[0].get("run_id", run_id) != run_id:
        raise DamagedRun(run_id, f, f"it holds {len(rows)} row(s), not the one row of run {run_id}")
    return {"run_id": run_id} | {k: v for k, v in rows[0].items() if k != "run_id"}
