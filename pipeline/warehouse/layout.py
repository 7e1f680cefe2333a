"""The warehouse's path scheme, shared by the index, the writer, the commit records and the
check: the layers and their index columns, the files of a part, and which part a file's name
belongs to."""

from __future__ import annotations

import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from pipeline.errors import UsageError
from pipeline.lazy import lazy
from pipeline.warehouse.contracts import RAW_TABLES, contract, contracts

pa = lazy("pyarrow")

# (layer folder, the index column naming a run's part of it, the run's id of that part)
LAYERS = (("raw", "raw_part", "ingest_id"), ("marts", "mart_part", "build_id"))


def part_of(file_name: str) -> str | None:
    """The part a flat part file belongs to (``part-<part>.parquet``, or shard
    ``part-<part>.<k>.parquet`` of a sharded part), or None for another name."""
    if not (file_name.startswith("part-") and file_name.endswith(".parquet")):
        return None
    return file_name[len("part-") : -len(".parquet")].split(".", 1)[0]


def entry_part(rel: str) -> tuple[str, str]:
    """(layer, part) of a ``files`` entry's path (``<layer>/<table>/part-<part>[.<k>].parquet``)."""
    layer, _, name = rel.split("/", 2)
    return layer, part_of(name.rsplit("/", 1)[-1])


def fsync_dir(path: Path) -> None:
    """fsync a folder: what was renamed into it stays after a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
TABLE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def new_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def check_run_id(run_id: str) -> str:
    if not RUN_ID.match(run_id or ""):
        raise UsageError(f"{run_id!r} is not a valid run id")
    return run_id


def is_group(part: str | None) -> bool:
    return bool(part) and part.startswith("c")


SHARDED = re.compile(r"^(?P<id>[A-Za-z0-9][A-Za-z0-9-]*)_(?P<n>[1-9][0-9]{0,5})$")


def sharded_id(part_id: str, shards: int) -> str:
    """The id of a part written as ``shards`` files (a cluster's units, docs/architecture.md#cluster);
    a part of one file keeps its id."""
    return part_id if shards == 1 else f"{part_id}_{shards}"


def shard_count(part: str | None) -> int:
    """How many files the part is written as: 0 for one file named by the part alone."""
    m = SHARDED.match(part or "")
    return int(m.group("n")) if m else 0


def run_order(r: dict) -> tuple:
    """How runs are listed: oldest collection first; group files hold their runs in this order."""
    return (r.get("collection_start_us") or 0, r["run_id"])


def layer_tables(layer: str) -> list[str]:
    return list(RAW_TABLES) if layer == "raw" else list(contracts("marts"))


def file_schema(layer: str, table: str) -> pa.Schema:
    """A part file's columns: run_id, then the contract's."""
    s = contract(layer, table).schema
    return pa.schema([pa.field("run_id", pa.string())] + [f for f in s if f.name != "run_id"])


def named_parts(idx: dict[str, dict]) -> set[tuple[str, str]]:
    """(layer, part) of every part the index names."""
    out = set()
    for r in idx.values():
        for layer, key, _ in LAYERS:
            if r.get(key):
                out.add((layer, r[key]))
    return out


def part_file(root: Path, layer: str, table: str, part: str) -> Path:
    """The one file of ``part`` for ``table`` in the warehouse at ``root``."""
    if not TABLE.match(table):
        raise UsageError(f"{table!r} is not a valid table name")
    check_run_id(part)
    return root / layer / table / f"part-{part}.parquet"


def part_files(root: Path, layer: str, table: str, part: str) -> list[Path]:
    """The files of ``part`` for ``table``: one, or a sharded part's shards in order."""
    n = shard_count(part)
    if not n:
        return [part_file(root, layer, table, part)]
    if not TABLE.match(table):
        raise UsageError(f"{table!r} is not a valid table name")
    return [root / layer / table / f"part-{part}.{k}.parquet" for k in range(n)]


def check_folder(path: Path, must_exist: bool = False) -> None:
    """Refuse a path that cannot be a warehouse: a file, or (``must_exist``, for commands that
    only work on runs already there) nothing at all."""
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"the warehouse {path} is a file, not a folder; "
            "--warehouse (-w) or $PROFETL_WAREHOUSE names the warehouse folder"
        )
    if must_exist and not path.exists():
        raise UsageError(
            f"no warehouse at {path}: `profetl run DUMP... --warehouse {path}` makes one; "
            "--warehouse (-w) or $PROFETL_WAREHOUSE names another"
        )


def rmdir_if_empty(d: Path) -> None:
    """Remove folder ``d`` if it is empty (and exists)."""
    try:
        d.rmdir()
    except OSError:
        pass


def digest(path: Path) -> dict:
    """A part file's entry for the index: its size and SHA-256, read once (where the file was
    written: the writer for its own files, a cluster's worker for the files of its unit)."""
    import hashlib

    with open(path, "rb") as fh:
        h = hashlib.file_digest(fh, "sha256")
        size = os.fstat(fh.fileno()).st_size
    return {"size": size, "sha256": h.hexdigest()}


# Tables of host threads' records, which the rules join to a device's records by thread (tid):
# a task's launch, the node and model around it (docs/formats.md part 2)
THREAD_TABLES = ("api_calls", "task_ops")

# The footer keys of a shard a unit's read split by device (pipeline.jobs.units.split_table,
# read by pipeline.jobs.raw_reads): the devices whose builds read its rows (a JSON list, null
# for no device) and, in a file of THREAD_TABLES, the threads whose rows it holds (a JSON list
# of tids)
SHARD_DEVICES = b"profetl.devices"
SHARD_THREADS = b"profetl.threads"
