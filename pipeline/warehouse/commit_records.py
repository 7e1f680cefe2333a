"""Commit records beside the part files: what rebuilds the run index when it and every kept
version of it are lost (``profetl check --repair``).

Each commit writes, before the rename of the index that makes it, one small Parquet file for
each part it put in place::

    <warehouse>/<layer>/_commits/part-<part>.parquet

holding the index rows of the runs that part holds, as that commit names them (every column
of the index), the part's own files with their sizes and SHA-256 on the first row (``files``),
and the time of the commit (ns, ``COMMITTED_KEY`` in the file's metadata). A record lives and
dies with its part: it is named like the part's files (``part-<part>.parquet``), so the sweep
of uncommitted files and the deletion of a part no index names remove it with them. The
leading "_" keeps the folder out of a reading of the layer by pandas, Spark or Hive.

Rebuilding takes, for each run, the newest record that names it and whose parts are all
whole (each has its record, and its files are there with their recorded sizes): the state
the last commit that touched the run gave it. What a record cannot restore is said, never
guessed: a part written by a profetl older than these records has none, so its runs are not
rebuilt and its files stay unowned (``check`` lists them). A run whose commit was cut off
after its record and files were all in place is restored as committed: its files are whole.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.lazy import lazy
from pipeline.warehouse.layout import LAYERS, entry_part, fsync_dir, part_of

pa = lazy("pyarrow")
pc = lazy("pyarrow.compute")
pq = lazy("pyarrow.parquet")

RECORDS = "_commits"
COMMITTED_KEY = b"profetl.committed_ns"
PART_KEYS = {layer: key for layer, key, _ in LAYERS}  # layer -> the index column naming its part


def record_file(warehouse: Path, layer: str, part: str) -> Path:
    """Where the commit record of ``part`` of ``layer`` is."""
    return Path(warehouse) / layer / RECORDS / f"part-{part}.parquet"


def write(warehouse: Path, index: pa.Table, parts: set[tuple[str, str]], committed_ns: int) -> None:
    """Write the commit records of ``parts`` ((layer, part) pairs) from ``index``, the index
    about to be committed (``files`` as the index has it: a part's files on one of its rows).
    Each is written under a temporary name and renamed: a record is whole or absent."""
    folders = set()
    for layer, part in sorted(parts):
        rows = index.filter(pc.equal(index.column(PART_KEYS[layer]), part))
        if not rows.num_rows:
            continue
        # the part's files are listed on one of its own runs' rows (with that run's other part's)
        own = sorted(
            (
                e
                for files in rows.column("files").to_pylist()
                for e in files or []
                if entry_part(e["file"]) == (layer, part)
            ),
            key=lambda e: e["file"],
        )
        files = pa.array([own or None] + [None] * (rows.num_rows - 1), index.schema.field("files").type)
        rows = rows.set_column(rows.schema.get_field_index("files"), "files", files)
        rows = rows.replace_schema_metadata({COMMITTED_KEY: str(committed_ns).encode()})
        f = record_file(warehouse, layer, part)
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".part-{secrets.token_hex(4)}.tmp")
        pq.write_table(rows, tmp, compression="zstd")
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, f)
        folders.add(f.parent)
    for d in folders:
        fsync_dir(d)


@dataclass
class Rebuilt:
    """What the records rebuild: the index rows by run id (``files`` listing their parts' files
    as recorded), and what could not be used."""

    index: dict[str, dict] = field(default_factory=dict)
    records: int = 0  # record files read
    unreadable: list[str] = field(default_factory=list)  # "<record>: why"
    broken: list[str] = field(default_factory=list)  # "<layer>/<part>: why its files are not whole"


def rebuild(warehouse: Path, schema: pa.Schema) -> Rebuilt:
    """The index the commit records of ``warehouse`` rebuild (see the module's docstring);
    ``schema`` is the index's (rows are conformed to it)."""
    warehouse = Path(warehouse)
    out = Rebuilt()
    records: dict[tuple[str, str], tuple[int, list[dict], list[dict]]] = {}
    for layer, _, _ in LAYERS:
        d = warehouse / layer / RECORDS
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            part = part_of(f.name)
            if part is None or not f.is_file():
                continue
            rel = f.relative_to(warehouse).as_posix()
            try:
                t = pq.read_table(f)
                ns = int((t.schema.metadata or {})[COMMITTED_KEY])
                # (a column the index has gained since the record was written reads as NULL)
                rows = [{c: r.get(c) for c in schema.names} for r in t.to_pylist()]
            except KeyError:
                out.unreadable.append(f"{rel}: it has no commit time (not a commit record)")
                continue
            except (OSError, ValueError, pa.ArrowException) as e:
                why = getattr(e, "strerror", None) or (str(e).splitlines() or [type(e).__name__])[0]
                out.unreadable.append(f"{rel}: {why}")
                continue
            out.records += 1
            own = [e for r in rows for e in r.get("files") or []]
            records[(layer, part)] = (ns, rows, own)
    whole: dict[tuple[str, str], bool] = {}
    for (layer, part), (_, _, own) in records.items():
        why = _not_whole(warehouse, own)
        whole[(layer, part)] = why is None
        if why:
            out.broken.append(f"{layer}/{part}: {why}")
    best: dict[str, tuple[int, dict]] = {}
    for ns, rows, _ in records.values():
        for r in rows:
            named = [(lay, r.get(key)) for lay, key, _ in LAYERS if r.get(key)]
            if not all(whole.get(p, False) for p in named):
                continue
            if r["run_id"] not in best or ns > best[r["run_id"]][0]:
                best[r["run_id"]] = (ns, r)
    for run_id, (_, r) in best.items():
        files = []
        for lay, key, _ in LAYERS:
            if r.get(key):
                files.extend(records[(lay, r[key])][2])
        out.index[run_id] = dict(r, files=files or None)
    return out


def _not_whole(warehouse: Path, entries: list[dict]) -> str | None:
    """Why a part's recorded files are not whole (missing, another size), or None."""
    if not entries:
        return "its record lists no files"
    for e in entries:
        try:
            size = (warehouse / e["file"]).stat().st_size
        except FileNotFoundError:
            return f"{e['file']} is missing"
        if size != e["size"]:
            return f"{e['file']} has {size} bytes, {e['size']} recorded"
    return None
