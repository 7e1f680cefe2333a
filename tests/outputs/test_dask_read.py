"""Reading the warehouse with dask.dataframe as docs/cluster.md tells users to.

The Dask block of docs/cluster.md is run as it is written (only its warehouse path changed) on
a warehouse of three synthetic runs, two of them compacted into one group file, in three
states: clean; with the part files of a writer killed before its commit on disk; and with the
files a commit replaced still on disk (the writer killed before deleting them). In every state
its totals per run (rows, durations, counts) must equal those of `profetl query` and those
derived from the events the generator wrote. A plain read of the table folders is checked
too: it agrees in the clean state and counts the uncommitted or replaced run twice in the
others, which is what the committed-file list is for (and what these tests would catch if the
recipe read the folders). The same holds for the doc's Spark block (run where pyspark and Java
are installed), its Trino view's filter (run in DuckDB) and its `profetl export` alternative.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.outputs.query import query
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse import compaction
from pipeline.warehouse.layout import is_group, shard_count
from pipeline.warehouse.store import Warehouse
from tests.helpers import oracle
from tests.helpers.history import DAY_US, START_US
from tests.helpers.warehouse_checks import profetl

dd = pytest.importorskip("dask.dataframe")

# slow: ingests and builds whole dumps and starts profetl processes; runs on one worker of
# `pytest -n` with the other files that start Dask clusters (tests/conftest.py, SHARED_WORKER_FILES)
pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "cluster.md"
DOC_WAREHOUSE = '"/srv/profetl/warehouse"'

NIGHTS = [dict(seed=1), dict(seed=2, devices=2), dict(seed=3, inferences=3, devices=2)]
# the third night's dump delivered again with more inferences and a second device: a
# replacement of its run, read and built on a local Dask cluster, so its parts are sharded (a
# file per device: docs/architecture.md#cluster)
NIGHT_2_AGAIN = dict(seed=3, inferences=5, devices=2)

# (layer, table, summed columns): what each comparison totals per run, besides the rows
TABLES = [
    ("marts", "op_summary", ("dur_ns",)),
    ("marts", "task_scheduler", ("task_count", "time_ns")),
    ("marts", "api_statistic", ("count", "time_ns")),
    ("raw", "api_calls", ()),
]
STATES = ("clean", "uncommitted", "replaced")


def expected_totals(truth) -> dict[str, tuple]:
    """Per table, (rows, *sums) derived from the generator's events, not from the SQL."""
    done = [x for x in truth.instances if x.complete_ns is not None]
    sched = oracle.task_scheduler(truth)
    return {
        # one row per completed task execution; Ascend310's duration is complete - running
        "op_summary": (len(done), sum(x.complete_ns - x.running_ns for x in done)),
        "task_scheduler": (len(sched), sum(r["task_count"] for r in sched), sum(r["time_ns"] for r in sched)),
        # one row per (device, level, API name); every call counts
        "api_statistic": (
            len({(c.device_id, c.level, c.name) for c in truth.api_calls}),
            len(truth.api_calls),
            sum(c.end_ns - c.start_ns for c in truth.api_calls),
        ),
        "api_calls": (len(truth.api_calls),),
    }


def _added(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b))


def _ok(result, code: int = 0) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)


@pytest.fixture(scope="module")
def states(tmp_path_factory):
    """{state: (warehouse path, {run_id: {table: committed totals}}, {run_id: {table: folder totals}})}."""
    base = tmp_path_factory.mktemp("daskread")
    roots = base / "roots"
    truths = [
        generate(roots / f"night-{i}", HiprofConfig(start_us=START_US + i * DAY_US, **kw))
        for i, kw in enumerate(NIGHTS)
    ]
    again = base / "night-2-again"
    truth_again = generate(again, HiprofConfig(start_us=START_US + 2 * DAY_US, **NIGHT_2_AGAIN))
    wh = base / "wh"
    _ok(profetl("run", roots, "--warehouse", wh))
    # compaction thresholds shrunk so that three runs make a group: the two older runs share one
    # file per table, which a reader must read once
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compaction, "KEEP_FRESH", 1)
        mp.setattr(compaction, "COMPACT_BATCH", 2)
        with Warehouse(wh).writer() as w:
            assert compaction.compact(w) == 2
    ids = {Path(r["source_path"]).name: r["run_id"] for r in Warehouse(wh).run_index().run_records()}
    night = [ids[f"night-{i}"] for i in range(3)]
    index = Warehouse(wh).run_index().rows_by_run_id()
    assert index[night[0]]["mart_part"] == index[night[1]]["mart_part"] and is_group(
        index[night[0]]["mart_part"]
    )
    assert not is_group(index[night[2]]["mart_part"])  # the run replaced below keeps its own files

    first = {rid: expected_totals(t) for rid, t in zip(night, truths)}
    second = dict(first, **{night[2]: expected_totals(truth_again)})
    both = dict(first, **{night[2]: {k: _added(v, second[night[2]][k]) for k, v in first[night[2]].items()}})
    out = {}

    def keep(state: str, committed: dict, folder: dict) -> None:
        copy = base / f"wh-{state}"
        shutil.copytree(wh, copy)
        out[state] = (copy, committed, folder)

    keep("clean", first, first)
    shutil.rmtree(roots / "night-2")
    shutil.copytree(again, roots / "night-2")
    # killed after its part files are in the tables' folders, before the commit
    _ok(
        profetl("run", roots, "--warehouse", wh, "--workers", "2", env={"PROFETL_CRASH_AT": "marts_written"}),
        137,
    )
    keep("uncommitted", first, both)
    # the next writer removes those, writes the run again and commits it; killed before it
    # deletes the files the commit replaced
    _ok(
        profetl("run", roots, "--warehouse", wh, "--workers", "2", env={"PROFETL_CRASH_AT": "after_commit"}),
        137,
    )
    assert set(Warehouse(wh).run_index().run_ids()) == set(night)  # the same run, replaced
    assert (
        shard_count(Warehouse(wh).run_index().rows_by_run_id()[night[2]]["mart_part"]) == 2
    )  # its marts: a file per device
    keep("replaced", second, both)
    return out


def doc_section(title: str) -> str:
    """The text of docs/cluster.md's ``### title`` section."""
    text = DOC.read_text(encoding="utf-8")
    assert f"### {title}\n" in text, f"docs/cluster.md has no section {title!r}"
    return text.split(f"### {title}\n", 1)[1].split("\n### ", 1)[0]


def run_doc_block(title: str, literal: str, value: str, ns: dict | None = None) -> dict:
    """Run the first python block of docs/cluster.md's section ``title`` as written, but for its
    one warehouse path ``literal``, replaced by ``value``; the namespace it leaves."""
    blocks = re.findall(r"```python\n(.*?)```", doc_section(title), re.S)
    assert blocks, f"docs/cluster.md: the {title} section has no python block"
    assert blocks[0].count(literal) == 1, f"docs/cluster.md: the {title} block should name {literal} once"
    ns = {} if ns is None else ns
    exec(compile(blocks[0].replace(literal, repr(value)), str(DOC), "exec"), ns)
    return ns


def doc_recipe(warehouse: Path) -> dict:
    """The Dask block of docs/cluster.md, run on ``warehouse``."""
    return run_doc_block("Dask", DOC_WAREHOUSE, str(warehouse))


def dask_totals(frame, sums: tuple[str, ...]) -> dict[str, tuple]:
    """{run_id: (rows, *sums)} of a dask DataFrame, computed by Dask."""
    g = frame.groupby("run_id")
    rows = g.size().compute()
    summed = g[list(sums)].sum().compute() if sums else None
    return {str(rid): (int(n), *(int(summed.loc[rid, c]) for c in sums)) for rid, n in rows.items()}


def query_totals(wh: Path, table: str, sums: tuple[str, ...]) -> dict[str, tuple]:
    """{run_id: (rows, *sums)} as `profetl query` answers it."""
    cols = "".join(f", sum({c})::BIGINT" for c in sums)
    res = query(Warehouse(wh), f"SELECT run_id, count(*){cols} FROM {table} GROUP BY run_id")
    return {r[0]: tuple(int(v) for v in r[1:]) for r in res.rows}


def _by_table(expected: dict[str, dict[str, tuple]], table: str) -> dict[str, tuple]:
    return {rid: tables[table] for rid, tables in expected.items()}


def _check_committed(wh: Path, committed: dict, files: Callable[[str, str], list[str]]) -> None:
    for layer, table, sums in TABLES:
        got = dask_totals(dd.read_parquet(files(table, layer)), sums)
        assert got == query_totals(wh, table, sums), (table, "dask and profetl query differ")
        assert got == _by_table(committed, table), (table, "dask and the dumps' events differ")


@pytest.mark.parametrize("state", STATES)
def test_the_docs_recipe_gives_the_totals_of_query_and_of_the_dumps(states, state):
    wh, committed, _ = states[state]
    ns = doc_recipe(wh)
    # the block's own result: rows and durations of op_summary per run
    per_run = {str(rid): (int(r["rows"]), int(r["dur_ns"])) for rid, r in ns["per_run"].iterrows()}
    assert per_run == _by_table(committed, "op_summary")
    _check_committed(wh, committed, ns["committed_files"])


def test_the_recipes_read_nullable_integers_as_integers(states):
    """The Dask and pandas reads of docs/cluster.md keep every integer column of the contract an
    integer, NULLs included (without dtype_backend="pyarrow" such a column is float64), with the
    values the Parquet files hold."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.outputs.export import table_contract

    wh, _, _ = states["clean"]
    ns = doc_recipe(wh)
    want = pq.read_table(ns["committed_files"]("op_summary"))
    ints = [c.name for c in table_contract("op_summary").columns if c.type.startswith("int")]
    assert [n for n in ints if want.column(n).null_count]  # some hold NULLs, so the test can tell
    for frame in (ns["ops"].compute(), ns["ops_here"]):
        for name in ints:
            assert pa.types.is_integer(getattr(frame[name].dtype, "pyarrow_dtype", None)), (
                name,
                frame[name].dtype,
            )
            assert pa.array(frame[name]).to_pylist() == want.column(name).to_pylist(), name


@pytest.mark.parametrize("state", STATES)
def test_a_plain_folder_read_counts_files_no_commit_names(states, state):
    """The reading the recipe replaces: right between finished writers, wrong otherwise."""
    wh, committed, folder = states[state]
    for layer, table, sums in TABLES:
        got = dask_totals(dd.read_parquet(str(wh / layer / table)), sums)
        assert got == _by_table(folder, table), table
        assert (got == _by_table(committed, table)) == (state == "clean"), table


def test_the_recipe_on_a_distributed_cluster(states):
    """Worker processes of a local cluster open the listed files by path and give the same totals."""
    distributed = pytest.importorskip("distributed")
    wh, committed, _ = states["replaced"]
    ns = doc_recipe(wh)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
    ):
        _check_committed(wh, committed, ns["committed_files"])


def test_the_spark_recipe(states):
    """The Spark block of docs/cluster.md, run as written on a local Spark (skipped where
    pyspark or Java is not installed)."""
    if shutil.which("java") is None:
        pytest.skip("no java")
    pyspark_sql = pytest.importorskip("pyspark.sql")
    F = pyspark_sql.functions
    wh, committed, _ = states["replaced"]
    spark = (
        pyspark_sql.SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    )
    try:
        ns = run_doc_block("Spark", '"file:///srv/profetl/warehouse"', wh.as_uri(), {"spark": spark})
        for layer, table, sums in TABLES:
            frame = spark.read.parquet(*ns["committed_files"](table, layer))
            rows = (
                frame.groupBy("run_id")
                .agg(F.count("*").alias("rows"), *[F.sum(c).alias(c) for c in sums])
                .collect()
            )
            got = {r["run_id"]: (int(r["rows"]), *(int(r[c]) for c in sums)) for r in rows}
            assert got == _by_table(committed, table), table
    finally:
        spark.stop()
        _stop_spark_jvm()


def _stop_spark_jvm() -> None:
    """``spark.stop()`` leaves the local Spark's JVM running until this process exits (busy
    beside the rest of the suite): shut its gateway down and close the JVM's standard input,
    which it takes as the sign to exit (pyspark keeps the gateway on SparkContext)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    if proc is not None:
        proc.stdin.close()
        proc.wait(60)


@pytest.mark.parametrize("state", STATES)
def test_the_trino_view_filter(states, state):
    """The WHERE clause of docs/cluster.md's Trino view, run in DuckDB over the whole folder
    (Trino's "$path" is DuckDB's filename column, the runs table the index file): it keeps
    exactly the committed rows."""
    import duckdb

    wh, committed, _ = states[state]
    view = re.search(r"CREATE VIEW profetl\.wh\.op_summary AS\n(.*?);", doc_section("Trino"), re.S)
    assert view, "docs/cluster.md: the Trino section has no op_summary view"
    where = view.group(1).split("WHERE", 1)[1]
    assert '"$path"' in where and "profetl.wh.runs" in where
    index = wh / "runs" / "runs.parquet"
    where = where.replace('"$path"', "filename").replace("profetl.wh.runs", f"read_parquet('{index}')")
    folder = wh / "marts" / "op_summary" / "*.parquet"
    rows = duckdb.sql(
        f"SELECT run_id, count(*), sum(dur_ns)::BIGINT FROM read_parquet('{folder}', filename = true) "
        f"WHERE {where} GROUP BY run_id"
    ).fetchall()
    assert {r[0]: (r[1], r[2]) for r in rows} == _by_table(committed, "op_summary")


@pytest.mark.parametrize("state", ["uncommitted", "replaced"])
def test_an_export_is_a_committed_copy(states, state, tmp_path):
    """docs/cluster.md's alternative for tools that read one fixed file: `profetl export`."""
    wh, committed, _ = states[state]
    out = tmp_path / "op_summary.parquet"
    _ok(
        profetl(
            "export",
            "op_summary",
            "--since",
            "2000-01-01",
            "--format",
            "parquet",
            "--out",
            out,
            "--warehouse",
            wh,
        )
    )
    assert dask_totals(dd.read_parquet(str(out)), ("dur_ns",)) == _by_table(committed, "op_summary")
