"""Compaction: small runs move out of their own part files into group files, so the files
stay few however many nights; replacing or dropping a run that is in a group writes the group
again without it. Functions over a ``Writer`` (``writer.py``; the writer calls them from its
commit and drop; ``runner`` after a night's runs)."""

from __future__ import annotations

from pathlib import Path

from pipeline import __version__
from pipeline.errors import DamagedPart
from pipeline.lazy import lazy
from pipeline.warehouse.layout import (
    LAYERS,
    file_schema,
    is_group,
    layer_tables,
    named_parts,
    new_id,
    part_file,
    part_files,
    part_of,
    run_order,
)
from pipeline.warehouse.part_rows import batches, files_bytes

pa = lazy("pyarrow")

# Compaction. A run whose part files take at most SMALL_RUN_BYTES is compacted once it is
# not among the KEEP_FRESH runs ingested last and COMPACT_BATCH such runs wait; they join the
# newest group while it has fewer than GROUP_RUNS runs and GROUP_BYTES of files, else start a
# new one. So the files stay few, a nightly commit rewrites at most one group, and replacing
# or dropping a run rewrites only its group.
SMALL_RUN_BYTES = 16 << 20
KEEP_FRESH = 10
COMPACT_BATCH = 40
GROUP_RUNS = 1000
GROUP_BYTES = 256 << 20
# Row groups of group files are small enough that reading one run (whose rows the run_id
# statistics locate) reads few rows of the others.
GROUP_ROW_GROUP_ROWS = 8192


def regroup(w, idx: dict[str, dict], layer: str, key: str, group: str, drop: set[str]) -> None:
    """Write ``group`` again without the runs in ``drop``; its other runs move to the new group."""
    members = [r for r in idx.values() if r.get(key) == group and r["run_id"] not in drop]
    if not members:
        return
    gid = "c" + new_id()
    try:
        write_group(w, layer, key, members, gid)
    except DamagedPart as e:
        leaving = sorted(r for r in drop if idx.get(r, {}).get(key) == group)
        raise DamagedPart(
            e.path,
            e.reason,
            f"run(s) {', '.join(leaving)} cannot leave group {group} without "
            f"writing it again, which needs every row it holds: nothing was changed; "
            + damage_advice(idx, key, group),
        ) from None
    for r in members:
        idx[r["run_id"]] = dict(r, **{key: gid})


def part_batches(w, layer: str, table: str, src: str, rows: list[dict], schema: pa.Schema):
    """The rows of ``rows`` (runs) in the files of part ``src`` for ``table``, as batches of
    ``schema``. A file that cannot be read, or is missing though the profetl that wrote its
    runs writes every table (this one), is DamagedPart."""
    run_ids = [r["run_id"] for r in rows]
    for f in part_files(w.path, layer, table, src):
        if not f.exists():
            if all(r.get("profetl_version") == __version__ for r in rows):
                raise DamagedPart(f, "missing")
            continue  # a table added since an older profetl wrote these runs
        yield from batches(f, run_ids, schema)


def write_group(w, layer: str, key: str, members: list[dict], part: str, read=None) -> None:
    """One file per table with the rows of ``members`` (by run id), written into
    ``.tmp`` and renamed into place: nothing names it until the index does. ``read(layer,
    table, src, rows, schema)`` gives the rows of runs ``rows`` in their part ``src``
    (``part_batches``, unless the caller reads another layout: the upgrade). A source that
    cannot be read stops it with DamagedPart and nothing of ``part`` left behind."""
    read = read or (lambda *a: part_batches(w, *a))
    # runs in collection order (as every listing of runs has them), read from their
    # current files a stretch of consecutive runs at a time
    segments: list[tuple[str, list[dict]]] = []
    for r in sorted(members, key=run_order):
        if segments and segments[-1][0] == r[key]:
            segments[-1][1].append(r)
        else:
            segments.append((r[key], [r]))
    from pipeline.warehouse.sink import parquet_writer

    tmp = w.temp_dir()
    placed: list[Path] = []
    try:
        for table in layer_tables(layer):
            schema = file_schema(layer, table)
            out = tmp / f"{table}.parquet"
            pending, n = [], 0
            with parquet_writer(out, schema) as pw:
                for src, rows in segments:
                    for b in read(layer, table, src, rows, schema):
                        pending.append(b)
                        n += b.num_rows
                        if n >= GROUP_ROW_GROUP_ROWS:
                            pw.write_table(
                                pa.Table.from_batches(pending, schema),
                                row_group_size=GROUP_ROW_GROUP_ROWS,
                            )
                            pending, n = [], 0
                if pending:
                    pw.write_table(
                        pa.Table.from_batches(pending, schema), row_group_size=GROUP_ROW_GROUP_ROWS
                    )
            final = part_file(w.path, layer, table, part)
            w.place_file(out, final)
            placed.append(final)
    except BaseException:
        for f in placed:  # named by no index yet: what a failed write leaves is nothing
            w.unplace_file(f)
        raise
    finally:
        w.drop_temp(tmp)


def damage_advice(idx: dict[str, dict], key: str, part: str) -> str:
    """What can be done about a damaged part file of ``part``: restore it; for a group,
    drop all its runs at once; for a run's own part, re-ingest or drop that run."""
    holders = [r["run_id"] for r in sorted(idx.values(), key=run_order) if r.get(key) == part]
    if is_group(part):
        shown = " ".join(holders[:20]) + (
            f" ... ({len(holders)} runs: `profetl query \"select run_id from runs where {key} = '{part}'\"`)"
            if len(holders) > 20
            else ""
        )
        return (
            f"restore it from a backup of the warehouse, or drop the {len(holders)} run(s) of group {part} "
            f"in one command (`profetl drop {shown}`) and run their dumps again"
        )
    run = holders[0] if holders else "RUN_ID"
    return (
        f"restore it from a backup of the warehouse, or run its dump again (`profetl run --force DUMP`) "
        f"or drop the run (`profetl drop {run}`)"
    )


def run_bytes(w, layer: str, part: str) -> int:
    return files_bytes(f for table in layer_tables(layer) for f in part_files(w.path, layer, table, part))


def compact(w) -> int:
    """Move small runs out of their own files into group files (see ``SMALL_RUN_BYTES``).
    A part file that cannot be read is not written again: a damaged newest group is not
    joined (the runs start a new one), a run whose own file is damaged stays where it is;
    each is in ``damaged_parts`` (DamagedPart, saying so) for the caller to report.
    Call under the lock. Returns the number of runs moved. (Under the writer's thread lock too,
    as its commits are: it reads and replaces the index.)"""
    with w.serial:
        return _compact(w)


def _compact(w) -> int:
    w.damaged_parts = []
    snap = w.run_index()
    t = snap.placing_table
    if t is None:  # no index: nothing committed yet
        return 0
    # few runs outside groups: nothing to do, known without a dict per run
    outside = max(sum(1 for p in t.column(key).to_pylist() if p and not is_group(p)) for _, key, _ in LAYERS)
    if outside < KEEP_FRESH + COMPACT_BATCH:
        return 0
    idx = snap.rows_by_run_id()
    before = named_parts(idx)
    order = sorted(idx.values(), key=lambda r: (str(r.get("ingested_at") or ""), r["run_id"]))
    keep = {r["run_id"] for r in order[-KEEP_FRESH:]}
    moved = set()
    for layer, key, _ in LAYERS:
        waiting = []
        for r in idx.values():
            part = r.get(key)
            if part and not is_group(part) and r["run_id"] not in keep:
                n = run_bytes(w, layer, part)
                if n <= SMALL_RUN_BYTES:
                    waiting.append((r, n))
        groups: dict[str, list[dict]] = {}
        for r in idx.values():
            if is_group(r.get(key)):
                groups.setdefault(r[key], []).append(r)
        damaged: set[str] = set()  # parts found damaged: left as they are
        while len(waiting) >= COMPACT_BATCH:
            saved = {r["run_id"]: dict(idx[r["run_id"]]) for r, _ in waiting} | {
                r["run_id"]: dict(r) for g in groups.values() for r in g
            }
            made: list[str] = []
            try:
                _compact_layer(w, idx, layer, key, waiting, groups, damaged, made)
            except DamagedPart as e:  # start again without the damaged part
                for gid in made:
                    w.delete_parts({(layer, gid)})
                idx.update(saved)
                src = part_of(Path(e.path).name)
                if src in damaged:  # cannot happen: a part is left alone once found damaged
                    raise
                damaged.add(src)
                holders = [r for r in idx.values() if r.get(key) == src]
                doing = (
                    "compaction did not add runs to group " + src + ", which stays as it is"
                    if is_group(src)
                    else f"run {holders[0]['run_id'] if holders else src} stays uncompacted in its own files"
                )
                w.damaged_parts.append(
                    DamagedPart(e.path, e.reason, doing + "; " + damage_advice(idx, key, src))
                )
                waiting = [(r, n) for r, n in waiting if r.get(key) != src]
                continue
            moved |= {r["run_id"] for r, _ in waiting}
            break
    if moved:
        w.write_index(idx)
        w.delete_parts(before - named_parts(idx))
    return len(moved)


def _compact_layer(
    w,
    idx: dict[str, dict],
    layer: str,
    key: str,
    waiting: list[tuple[dict, int]],
    groups: dict[str, list[dict]],
    damaged: set[str],
    made: list[str],
) -> None:
    """The ``waiting`` runs into the newest group of ``layer`` (unless it is ``damaged``,
    full or big), then new groups; the ids of the groups written go to ``made``."""
    batch: list[dict] = []
    size = 0
    if groups:
        last = max(groups)  # group ids begin with their time: the newest group
        n = run_bytes(w, layer, last)
        if last not in damaged and len(groups[last]) < GROUP_RUNS and n < GROUP_BYTES:
            batch, size = list(groups[last]), n
    for r, n in sorted(waiting, key=lambda x: run_order(x[0])):
        if batch and (len(batch) >= GROUP_RUNS or size + n > GROUP_BYTES):
            made.append(new_group(w, idx, layer, key, batch))
            batch, size = [], 0
        batch.append(r)
        size += n
    if batch:
        made.append(new_group(w, idx, layer, key, batch))


def new_group(w, idx: dict[str, dict], layer: str, key: str, members: list[dict], read=None) -> str:
    gid = "c" + new_id()
    write_group(w, layer, key, members, gid, read)
    for r in members:
        idx[r["run_id"]] = dict(idx[r["run_id"]], **{key: gid})
    return gid
