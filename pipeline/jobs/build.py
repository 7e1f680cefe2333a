"""Build: the run's raw tables through ``sql/staging``, ``sql/intermediate`` and ``sql/marts``
into mart part files."""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.analysis.advice import configured as advice_thresholds
from pipeline.analysis.advice import set_thresholds
from pipeline.errors import GrainViolated, TransformFailed, UsageError
from pipeline.jobs.raw_reads import ALL_DEVICES, create_raw_views, device_rows, raw_select
from pipeline.jobs.transforms import TABLE_LAYERS, SqlFile, run_table_layers, sql_files, transform_failed
from pipeline.limits import memory_limit as resolve_memory_limit
from pipeline.limits import size_bytes
from pipeline.progress import report
from pipeline.warehouse.contracts import RAW_TABLES, contract, contracts
from pipeline.warehouse.faults import checkpoint
from pipeline.warehouse.layout import check_run_id, digest, new_id, sharded_id
from pipeline.warehouse.sink import parquet_writer, with_run_id
from pipeline.warehouse.store import Warehouse

try:
    import resource
except ImportError:  # Windows: no per-step memory there
    resource = None


@dataclass
class BuildResult:
    run_id: str
    build_id: str
    rows_by_mart: dict[str, int] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)  # build_issues rows, one line each
    seconds: float = 0.0
    # where the time went: "staging/<table>" and "intermediate/<table>" (made and stored, or
    # a view made), "marts/<table>" (its SQL run while its rows stream into the part file,
    # then the audit of its grain)
    seconds_by_step: dict[str, float] = field(default_factory=dict)
    # the process's peak resident memory (bytes, a high-water mark) when each step ended, in
    # step order: the build's peak is in the first step that reaches the last value (empty
    # where the system does not report it)
    max_rss_by_step: dict[str, int] = field(default_factory=dict)
    # where the staging tables were kept: "memory" (temporary tables) or "file" (the build's
    # database file, compressed): see staging_storage
    staging: str = "memory"
    # DuckDB's memory limit for the build, as given (--memory-limit) or chosen for the machine
    # (pipeline/limits.py)
    memory_limit: str = ""
    # the marts' files before they are moved into place (build_marts), by mart, and their folder
    files: dict[str, str] = field(default_factory=dict)
    folder: str = ""
    # on a cluster, each of those files' size and hash (pipeline.warehouse.writer.digest) by its
    # path, taken on the worker (build_unit): the starting process places them without reading them
    digests: dict[str, dict] = field(default_factory=dict)


def connect(
    workdir: Path, memory_limit: str | None = None, threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB for one build in ``workdir``: its staging tables live in the buffer pool as
    temporary tables and spill to ``workdir`` beyond the memory limit, or for a big run are
    tables of ``workdir/build.duckdb`` (staging_storage). ``memory_limit`` None: the
    machine's default (pipeline/limits.py)."""
    memory_limit = resolve_memory_limit(memory_limit)
    if threads is not None and not 0 <= threads <= MAX_THREADS:
        check_settings(memory_limit, threads)
    try:
        # no progress bar: DuckDB draws it on standard output for a query that runs longer than
        # two seconds (on a cluster worker, into the output of the command that started it)
        con = duckdb.connect(
            str(workdir / "build.duckdb"),
            config={"memory_limit": memory_limit, "temp_directory": str(workdir / "spill")},
        )
        con.execute("set enable_progress_bar = false")
    except duckdb.Error:
        check_settings(memory_limit, threads)  # a setting DuckDB refuses: UsageError naming it
        raise  # (checked only on failure: a DuckDB of its own would cost every build time)
    # The block allocator keeps the memory of DuckDB's buffers once touched instead of giving it
    # back to the system and faulting it in again at the next spill (fewer page faults on a big
    # build, for a little more peak memory). It reserves address space, not memory, so small builds do not grow to the limit. A limit larger than
    # the address space cannot be reserved; the build then allocates as before.
    try:
        limit = con.execute("select current_setting('memory_limit')").fetchall()[0][0]
    except duckdb.OutOfMemoryException as e:  # a limit too small for DuckDB's first allocation
        con.close()
        raise UsageError(
            f"memory limit {memory_limit!r}: too small for DuckDB to start ({str(e).splitlines()[0]})"
        ) from None
    try:
        con.execute(f"set block_allocator_memory = '{limit}'")
    except duckdb.Error:
        pass
    if threads:
        con.execute(f"set threads = {int(threads)}")
    return con


def _build_dir(wh: Warehouse) -> Path:
    """A scratch folder for one build's DuckDB files: in the warehouse's ``.tmp``, unless the
    warehouse's path holds a ``?``. DuckDB reads what follows a ``?`` in a database path as
    URI parameters (its write-ahead log then goes to another folder), links included, as it
    resolves them; such a warehouse's builds use a folder in the system's temporary folder."""
    if "?" not in str(Path(wh.path).absolute()):
        return wh.temp_dir()
    import tempfile

    return Path(tempfile.mkdtemp(prefix="profetl-build-"))


# DuckDB starts every thread it is given at once: 100,000 of them took minutes before any work
MAX_THREADS = 1024


def check_settings(memory_limit: str | None, threads: int | None = None) -> None:
    """Raise UsageError for a memory limit or thread count DuckDB would refuse, before any work."""
    memory_limit = resolve_memory_limit(memory_limit)
    if threads is not None and threads < 0:
        raise UsageError(f"threads {threads}: must be 0 (one per core) or more")
    if threads is not None and threads > MAX_THREADS:
        raise UsageError(f"threads {threads}: at most {MAX_THREADS} (DuckDB starts a thread each)")
    try:
        duckdb.connect(config={"memory_limit": memory_limit}).close()
    except duckdb.Error as e:
        raise UsageError(f"memory limit {memory_limit!r}: {str(e).splitlines()[0]}") from None


# Staging tables stay in DuckDB's memory (temporary tables, spilled beyond the memory limit as
# they are, uncompressed) unless they would take more than twice the limit: then they are
# tables of the build's database file, which DuckDB compresses as it writes them, so the
# marts read a fraction of the bytes back. Compressing costs more than spilling a little and
# saves more than spilling a lot. The size is estimated from the records the ingest decoded:
# staging tables hold about 55 bytes per raw record (hiprof and STARS alike).
STAGING_BYTES_PER_RECORD = 55
STAGING_IN_FILE_ABOVE = 2.0  # times the memory limit


def staging_storage(con: duckdb.DuckDBPyConnection, run: dict) -> str:
    """ "file" when the run's staging tables would take more than STAGING_IN_FILE_ABOVE times
    DuckDB's memory limit, else "memory" (also when the run's record count is unknown)."""
    records = run.get("records_decoded")
    if not records:
        return "memory"
    limit = _setting_bytes(con.execute("select current_setting('memory_limit')").fetchall()[0][0])
    return "file" if records * STAGING_BYTES_PER_RECORD > STAGING_IN_FILE_ABOVE * limit else "memory"


def _setting_bytes(text: str) -> float:
    """DuckDB's rendering of a size setting ("305.1 MiB", "1.0 GiB", "512 bytes") in bytes."""
    try:
        return size_bytes(text)
    except ValueError:  # a rendering not known here: as if unlimited
        return float("inf")


def staging_table_kind(storage: str) -> str:
    """The kind of DuckDB table a stored staging table is created as."""
    return "table" if storage == "file" else "temp table"


def build(
    wh: Warehouse, run: dict, memory_limit: str | None = None, threads: int | None = None, cluster=None
) -> BuildResult:
    """Build every mart of one run into new part files; the caller commits the run row. With
    ``cluster`` (pipeline.jobs.cluster.Cluster) each device's marts are made there, on its own,
    and put together here (docs/architecture.md#cluster). ``memory_limit`` None: the machine's
    default (pipeline/limits.py), chosen here also for a cluster's workers."""
    t0 = time.monotonic()
    memory_limit = resolve_memory_limit(memory_limit)
    if cluster is None:
        parts = [build_marts(wh, run, memory_limit, threads)]
    else:
        devices = run_devices(wh, run) or [ALL_DEVICES]
        # a worker gets a Warehouse of its own (the path only, none of this one's cached index),
        # by its absolute path: a worker runs in a folder of its own, often on another machine
        own = Warehouse(wh.path.absolute())
        calls = [(build_unit, (own, run, memory_limit, threads, d)) for d in devices]
        parts = cluster.run(
            calls, [f"{run['source_path']}: build of {_device_label(d)}" for d in devices], phase="build"
        )
    # one shard of the mart part per device built on its own (docs/architecture.md#cluster)
    result = BuildResult(
        run["run_id"], sharded_id(new_id(), len(parts)), staging=parts[0].staging, memory_limit=memory_limit
    )
    try:
        for part in parts:
            result.issues += part.issues
            for name, n in part.rows_by_mart.items():
                result.rows_by_mart[name] = result.rows_by_mart.get(name, 0) + n
            for step, sec in part.seconds_by_step.items():  # summed over devices: work done, not wall time
                result.seconds_by_step[step] = result.seconds_by_step.get(step, 0.0) + sec
            for step, rss in part.max_rss_by_step.items():
                result.max_rss_by_step[step] = max(result.max_rss_by_step.get(step, 0), rss)
            if part.staging == "file":
                result.staging = "file"
        check_run_id(result.run_id)
        # (sizes and hashes go into the index at the commit)
        wh.held_writer().place_part(
            "marts",
            result.build_id,
            {n: [Path(p.files[n]) for p in parts] for n in parts[0].files},
            {path: d for p in parts for path, d in p.digests.items()},
        )
        checkpoint("marts_written")
    finally:
        for part in parts:  # a worker's folder, named by its absolute path: this process's is the same
            wh.drop_temp_named(part.folder)
    result.seconds = time.monotonic() - t0
    return result


def _device_label(device) -> str:
    return "every device" if device is ALL_DEVICES else f"device {device}"


def run_devices(wh: Warehouse, run: dict) -> list:
    """The devices the run's raw rows name (None for rows of no device), in order: the units a
    cluster builds."""
    con = duckdb.connect()
    try:
        tables = [t for t in RAW_TABLES if "device_id" in contract("raw", t).column_names]
        sql = " union ".join(f"select distinct device_id from ({raw_select(wh, t, run)})" for t in tables)
        return [
            r[0]
            for r in con.execute(f"select device_id from ({sql}) order by device_id nulls last").fetchall()
        ]
    except duckdb.Error as e:
        raise TransformFailed(
            f"run {run['run_id']}: its devices cannot be listed: {str(e).splitlines()[0]}"
        ) from None
    finally:
        con.close()


def build_unit(
    wh: Warehouse, run: dict, memory_limit: str | None, threads: int | None, device
) -> BuildResult:
    """One device's marts (``build_marts``) as a cluster's task, with their files' digests taken
    where they were written."""
    result = build_marts(wh, run, memory_limit, threads, device)
    result.digests = {p: digest(Path(p)) for p in result.files.values()}
    return result


def build_marts(
    wh: Warehouse,
    run: dict,
    memory_limit: str | None = None,
    threads: int | None = None,
    device=ALL_DEVICES,
    profile_dir: Path | None = None,
) -> BuildResult:
    """Every mart of one run (or of one ``device`` of it) into Parquet files in a temporary
    folder of the warehouse, named by ``BuildResult.files``; the caller moves them into place.

    ``profile_dir`` (for bench/profile_build.py): DuckDB's JSON profile of each step's statement
    is written there, one file a step ("staging__stg_task_ops.json", "marts__op_summary.json",
    "marts__op_summary.grain.json" for the mart's grain audit); profiling costs the build a
    little time."""
    t0 = time.monotonic()
    run_id = run["run_id"]
    thresholds = advice_thresholds(wh)  # a bad advice.toml fails before any work
    workdir = _build_dir(wh)
    con = None
    tmp = wh.temp_dir()
    try:
        con = connect(workdir, memory_limit, threads)
        set_thresholds(con, thresholds)
        create_raw_views(con, wh, run, device)
        result = BuildResult(run_id, "", folder=str(tmp), memory_limit=resolve_memory_limit(memory_limit))
        result.staging = staging_storage(con, run)

        def profile_next(step: str) -> None:  # the next statement's profile into its own file
            if profile_dir is not None:
                path = str(Path(profile_dir) / f"{step.replace('/', '__')}.json").replace("'", "''")
                con.execute(f"pragma profiling_output = '{path}'")

        if profile_dir is not None:
            Path(profile_dir).mkdir(parents=True, exist_ok=True)
            con.execute("pragma enable_profiling = 'json'")
            profile_next("setup")

        marts = sql_files("marts")
        report(
            phase="build",
            total=sum(len(sql_files(layer)) for layer in TABLE_LAYERS) + len(marts),
            unit="steps",
        )

        def staged(step: str) -> None:
            _note_max_rss(result, step)
            report(advance=1, step=step)

        result.seconds_by_step.update(
            run_table_layers(
                con, on_step=staged, stored_as=staging_table_kind(result.staging), before_step=profile_next
            )
        )
        # each mart's query (with the macros run_layer loaded) streamed once into its file
        for mart in marts:
            name = mart.name
            report(step=f"marts/{name}")
            if name not in contracts("marts"):
                raise TransformFailed(f"sql/marts/{name}.sql has no contract schemas/marts/{name}.toml")
            out = tmp / f"{name}.parquet"
            t_mart = time.monotonic()
            # a device's build keeps its own rows (a thread shared with other devices brings theirs in)
            keep = None if device is ALL_DEVICES else device_rows(device)
            profile_next(f"marts/{name}")
            result.rows_by_mart[name] = _write_mart(con, mart, out, run_id, keep)
            profile_next(f"marts/{name}.grain")
            check_grain(con, name, out)
            result.seconds_by_step[f"marts/{name}"] = time.monotonic() - t_mart
            _note_max_rss(result, f"marts/{name}")
            report(advance=1)
            result.files[name] = str(out)
        # the issues as written (running the mart's query again would cost as much as the first time)
        issues = pq.read_table(
            result.files["build_issues"], columns=["device_id", "kind", "count", "message"]
        )
        for device_id, kind, count, message in zip(*(col.to_pylist() for col in issues.columns)):
            result.issues.append(f"device {device_id}: {kind}: {count} {message}")
        if device is not ALL_DEVICES:
            checkpoint("device_built")
    except BaseException:
        wh.drop_temp(tmp)
        raise
    finally:
        if con is not None:
            con.close()
        if wh.is_temp(workdir):
            wh.drop_temp(workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    result.seconds = time.monotonic() - t0
    return result


def _note_max_rss(result: BuildResult, step: str) -> None:
    peak = max_rss_bytes()
    if peak is not None:
        result.max_rss_by_step[step] = peak


_peak_seen = [0]  # the highest max_rss_bytes has read in this process


def max_rss_bytes() -> int | None:
    """This process's peak resident bytes so far. On Linux the memory's own high-water mark
    (VmHWM): getrusage's ru_maxrss also counts the process that started this one, as it was
    at the exec (a parent of 2 GB makes every child report at least 2 GB). Linux keeps the
    mark lazily (each thread's resident pages are added to the process's count in batches),
    so a later reading can be a few pages lower than an earlier one: the highest reading so
    far is returned."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    _peak_seen[0] = max(_peak_seen[0], int(line.split()[1]) * 1024)
                    return _peak_seen[0]
    except OSError:
        pass
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes there, KiB elsewhere


# A mart's rows come from DuckDB in small Arrow batches (the larger a batch, the more of the
# result is held twice, in DuckDB and in Arrow) and go to Parquet in row groups of 100k rows (small row groups are slower
# to write and to read).
FETCH_ROWS = 20_000
ROW_GROUP_ROWS = 100_000


def _write_mart(
    con: duckdb.DuckDBPyConnection, mart: SqlFile, out, run_id: str, where: str | None = None
) -> int:
    """The mart's query (its rows that meet ``where``, if given), run once as its rows are
    written (not made a view first: DuckDB would bind the query twice); ``run_id`` is added as
    the first column."""
    name = mart.name
    c = contract("marts", name)
    schema = pa.schema([f for f in c.schema if f.name != "run_id"])
    stored = pa.schema([pa.field("run_id", pa.string())] + list(schema))
    try:
        sql = mart.text if where is None else f"select * from (\n{mart.text}\n) where {where}"
        reader = con.sql(sql).to_arrow_reader(FETCH_ROWS)
        got = [f.name for f in reader.schema]
        if got != schema.names:
            raise TransformFailed(
                f"sql/marts/{name}.sql returns columns {got}, its contract schemas/marts/{name}.toml lists {schema.names}"
            )
        rows = 0
        with parquet_writer(out, stored) as w:
            group: list[pa.RecordBatch] = []
            group_rows = 0
            for batch in reader:
                try:
                    group.append(with_run_id(batch.cast(schema), run_id).cast(stored))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise TransformFailed(f"mart {name} does not fit its contract: {e}") from None
                rows += batch.num_rows
                group_rows += batch.num_rows
                if group_rows >= ROW_GROUP_ROWS:
                    w.write_table(pa.Table.from_batches(group, stored))
                    group, group_rows = [], 0
            if group:
                w.write_table(pa.Table.from_batches(group, stored))
    except duckdb.Error as e:  # the mart's SQL runs here
        raise transform_failed(con, f"sql/marts/{name}.sql", e) from None
    return rows


def check_grain(con: duckdb.DuckDBPyConnection, name: str, part: Path) -> None:
    """Raise GrainViolated unless the rows of mart ``name`` in the Parquet file ``part`` hold
    its contract's grain: every grain column is a column of the table, no two rows share a
    key (NULL counting as a value), and no grain column is NULL unless the contract lets it
    be (``grain_nullable``). dbt's unique and not_null tests, run after every build."""
    c = contract("marts", name)
    keys = c.grain_columns
    where = f"schemas/marts/{name}.toml"
    unknown = [k for k in keys + c.grain_nullable_columns if k not in c.column_names]
    if unknown:
        raise GrainViolated(
            f"mart {name}: grain column(s) {', '.join(unknown)} of {where} are not columns of the table",
            table=name,
        )
    if not keys:
        raise GrainViolated(f"mart {name}: {where} declares no grain", table=name)
    strict = [k for k in keys if k not in c.grain_nullable_columns]
    cols = ", ".join(f'"{k}"' for k in keys)
    null_test = " or ".join(f'"{k}" is null' for k in strict) or "false"
    path = str(part).replace("'", "''")
    try:
        bad = con.execute(
            f"select {cols}, count(*) as rows_, bool_or({null_test}) as has_null_ "
            f"from read_parquet('{path}') group by all having count(*) > 1 or bool_or({null_test}) limit 1"
        ).fetchall()
    except duckdb.Error as e:
        raise transform_failed(con, f"the grain audit of mart {name}", e) from None
    if not bad:
        return
    *values, rows, has_null = bad[0]
    key = dict(zip(keys, values))
    shown = ", ".join(f"{k}={v!r}" for k, v in key.items())
    if has_null:
        nulls = ", ".join(k for k in strict if key[k] is None)
        raise GrainViolated(
            f"mart {name}: grain column(s) {nulls} NULL in the key ({shown}); {where} does "
            f"not let them be NULL",
            table=name,
            key=key,
        )
    raise GrainViolated(
        f"mart {name}: {rows} rows share the grain key ({shown}) declared in {where}", table=name, key=key
    )


def with_build(row: dict, result: BuildResult, tables_filled_raw: list[str]) -> dict:
    """The run row after a build: new build id, status, timings and filled tables."""
    row = dict(row)
    row["build_id"] = result.build_id
    row["built_at"] = datetime.now(UTC)
    row["build_seconds"] = result.seconds
    row["status"] = "built"
    row["tables_filled"] = sorted(
        set(tables_filled_raw) | {m for m, n in result.rows_by_mart.items() if n and m != "build_issues"}
    )
    return row
