"""Runs and builds on a Dask LocalCluster of 2 workers: the same warehouse as in-process, row
for row; a worker killed in the middle of a task; a scheduler that cannot be reached."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("distributed", reason="the dask extra (pip install 'profetl[dask]') is not installed")

from pipeline.errors import ClusterUnavailable, ExitCode, UsageError  # noqa: E402
from pipeline.jobs import cluster as cluster_module  # noqa: E402
from pipeline.jobs.cluster import Cluster  # noqa: E402
from pipeline.jobs.runner import rebuild, run_roots  # noqa: E402
from pipeline.synth.hiprof import HiprofConfig, generate  # noqa: E402
from pipeline.synth.prof import ProfConfig  # noqa: E402
from pipeline.synth.prof import generate as generate_prof
from pipeline.warehouse.layout import part_of  # noqa: E402
from pipeline.warehouse.layout import shard_count as store_shards
from pipeline.warehouse.store import Warehouse  # noqa: E402
from tests.helpers.warehouse_checks import (
    assert_consistent,
    assert_recorded,
    existing_files,
    part_files,
    profetl,
)  # noqa: E402
from tests.helpers.warehouse_checks import (
    differences as _differences,
)

# slow: starts worker processes, ingests and builds whole dumps; runs on one worker of `pytest -n`
# with the other files that start Dask clusters (tests/conftest.py, SHARED_WORKER_FILES)
pytestmark = pytest.mark.slow

# what a run row says of its data: the same whichever way the dump was read
RUN_FACTS = (
    "run_id",
    "layout_generation",
    "layout",
    "platform_version",
    "chip",
    "devices",
    "metric_set",
    "metric_set_raw",
    "pmu_event_ids",
    "ai_core_profiling_mode",
    "collection_start_us",
    "data_bytes",
    "records_decoded",
    "bytes_decoded",
    "bytes_skipped",
    "issues",
    "tables_filled",
    "status",
)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> list[Path]:
    """A hiprof-era dump of 2 devices and a 4-device PROF_* job (two processes) of each chip family."""
    base = tmp_path_factory.mktemp("cluster-dumps")
    out = [base / "hiprof-2"]
    generate(out[0], HiprofConfig(devices=2, inferences=3, seed=3))
    for chip in ("ascend910a", "ascend310p", "ascend910b"):
        d = base / f"prof-{chip}"
        generate_prof(d, ProfConfig(chip=chip, devices=4, processes=2, seed=4))
        out.append(d)
    return out


@pytest.fixture(scope="module")
def local_cluster():
    with Cluster(workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def in_process(tmp_path_factory, dumps) -> Warehouse:
    wh = Warehouse(tmp_path_factory.mktemp("in-process") / "wh")
    with wh.writer():
        outcomes = run_roots(wh, dumps)
    assert [o.status for o in outcomes] == ["built"] * len(dumps), [o.error for o in outcomes]
    return wh


def _facts(wh: Warehouse) -> list[dict]:
    return sorted(
        ({k: r[k] for k in RUN_FACTS} for r in wh.run_index().run_records()), key=lambda r: r["run_id"]
    )


WAIT = 60  # seconds a hook of the tests below waits for another dump before going on without it


class Night:
    """What a night on the cluster did, in the order it happened (no clocks): ("ingest", dump)
    and ("build", dump) as a dump hands its units of that phase to the cluster (its build's once
    its raw part is in place), ("commit", dump) as its run is committed, ("discard", run id) as
    a failed dump's files are discarded (a dump: its folder's name). ``hold_commits``: no run is
    committed before it says yes of the events (what the night does anyway, made certain)."""

    def __init__(self, monkeypatch, cluster, dumps, hold_commits=None):
        import threading

        from pipeline.warehouse.writer import Writer

        self.events: list[tuple[str, str]] = []
        self.changed = threading.Condition()
        self.calls = 0  # units handed to the cluster
        names = {str(d): d.name for d in dumps}
        run, commit_run, discard = cluster.run, Writer.commit_run, Writer.discard_uncommitted

        def units(calls, labels, phase="units"):
            with self.changed:
                self.calls += len(calls)
            self.note(phase, names[labels[0].split(": ")[0]])
            return run(calls, labels, phase)

        def committed(w, row):
            if hold_commits is not None:
                self.wait_for(hold_commits)
            commit_run(w, row)
            self.note("commit", Path(row["source_path"]).name)

        def discarded(w, run_id):
            n = discard(w, run_id)
            self.note("discard", run_id)
            return n

        monkeypatch.setattr(cluster, "run", units)
        monkeypatch.setattr(Writer, "commit_run", committed)
        monkeypatch.setattr(Writer, "discard_uncommitted", discarded)

    def note(self, what: str, dump: str) -> None:
        with self.changed:
            self.events.append((what, dump))
            self.changed.notify_all()

    def wait_for(self, ready) -> None:
        with self.changed:
            self.changed.wait_for(lambda: ready(self.events), timeout=WAIT)

    def first(self, what: str, dump: str) -> int:
        return self.events.index((what, dump))


def test_cluster_run_equals_in_process(tmp_path, dumps, local_cluster, in_process, monkeypatch):
    """A night of several dumps on the cluster: the same warehouse as in-process, row for row,
    and the dumps were in flight together: the second dump's units were on the cluster before
    the first dump's run was committed. Progress says the night's runs and units done."""
    from pipeline import progress

    first_two = {("ingest", dumps[0].name), ("ingest", dumps[1].name)}
    night = Night(monkeypatch, local_cluster, dumps, hold_commits=lambda events: first_two <= set(events))
    from pipeline.warehouse import writer as writer_module

    heard: list[dict] = []
    previous = progress.listen(lambda **what: heard.append(what))
    # what this process reads of the part files to record them: nothing, the workers did
    read_here: list[Path] = []
    real_digest = writer_module.digest
    monkeypatch.setattr(writer_module, "digest", lambda path: read_here.append(path) or real_digest(path))
    wh = Warehouse(tmp_path / "wh")
    try:
        with wh.writer():
            outcomes = run_roots(wh, dumps, cluster=local_cluster)
    finally:
        progress.listen(previous)
    assert [o.status for o in outcomes] == ["built"] * len(dumps), [o.error for o in outcomes]
    assert read_here == []
    assert [o.source_path for o in outcomes] == [str(d) for d in dumps]  # in the order found
    assert night.first("ingest", dumps[1].name) < night.first("commit", dumps[0].name), night.events
    assert sorted(d for what, d in night.events if what == "commit") == sorted(d.name for d in dumps)
    # the listener heard the night: its dumps, each run once done, the units handed over and done
    assert heard[0] == {"phase": "night", "total": len(dumps), "unit": "runs"}
    assert sum(what.get("advance", 0) for what in heard) == len(dumps)
    units = [what["units"] for what in heard if "units" in what]
    assert units[-1] == (night.calls, night.calls) and night.calls >= 2 * (2 + 3 * 4)  # read, then built
    assert all(set(what) <= {"phase", "total", "unit", "advance", "units"} for what in heard)
    diff = _differences(in_process, wh)
    assert {t: d for t, d in diff.items() if d[0] or d[1]} == {}
    # the comparison compared something: every family filled the tables it has
    for table in (
        "raw/task_states",
        "raw/api_calls",
        "raw/pmu_counters",
        "marts/task_scheduler",
        "marts/op_summary",
        "marts/ai_core_metrics",
        "marts/acl_api",
    ):
        assert diff[table][2] > 0, table
    assert _facts(wh) == _facts(in_process)
    assert_consistent(wh.path)
    assert_recorded(wh)  # every shard's size and hash in the index
    # every device of every dump was a unit: 2 + 3 x 4 devices (and each PROF_* job's hosts)
    assert sorted(r["devices"] for r in wh.run_index().run_records()) == sorted([[0, 1]] + [[0, 1, 2, 3]] * 3)


def _runs_of(wh: Warehouse, names: list[str]) -> list[dict]:
    return [r for r in wh.run_index().run_records() if Path(r["source_path"]).name in names]


def _assert_only_named_parts(wh: Warehouse) -> None:
    """Every part file on disk is one the index names, and no scratch folder is left."""
    index = wh.run_index().rows_by_run_id()
    named = {r[key] for r in index.values() for key in ("raw_part", "mart_part")}
    assert {part_of(f.name) for f in part_files(wh.path)} == named
    assert not (wh.path / ".tmp").exists()


def test_night_dump_failing_fails_alone(tmp_path, dumps, local_cluster, in_process, monkeypatch):
    """A dump of the night fails after its raw part is in place, while another dump's raw part
    is in place and not committed yet: the failed dump's files are discarded, the other's stay,
    and the other dumps are built and committed as in-process."""
    from pipeline.errors import TransformFailed
    from pipeline.jobs import build as build_module

    bad, other = dumps[0].name, dumps[1].name
    night = Night(
        monkeypatch,
        local_cluster,
        dumps[:3],
        # the other dump commits only once the failed one's files are discarded
        hold_commits=lambda events: any(what == "discard" for what, _ in events),
    )
    run_devices = build_module.run_devices

    def failing(wh, run):
        if Path(run["source_path"]).name == bad:  # once the other dump's raw part is in place too
            night.wait_for(lambda events: ("build", other) in events)
            raise TransformFailed(f"run {run['run_id']}: made to fail")
        return run_devices(wh, run)

    monkeypatch.setattr(build_module, "run_devices", failing)
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        outcomes = run_roots(wh, dumps[:3], cluster=local_cluster)
    assert [o.status for o in outcomes] == ["failed", "built", "built"], [o.error for o in outcomes]
    assert "made to fail" in outcomes[0].error
    bad_run = _runs_of(in_process, [bad])[0]["run_id"]
    # the failure was discarded while the other dump's raw part waited for its commit
    assert night.first("build", other) < night.first("discard", bad_run) < night.first("commit", other), (
        night.events
    )
    built = [d.name for d in dumps[1:3]]
    assert sorted(r["run_id"] for r in wh.run_index().run_records()) == sorted(
        r["run_id"] for r in _runs_of(in_process, built)
    )
    assert sorted(_facts(wh), key=str) == sorted(
        ({k: r[k] for k in RUN_FACTS} for r in _runs_of(in_process, built)), key=str
    )
    assert_consistent(wh.path)
    assert_recorded(wh)
    _assert_only_named_parts(wh)
    con = duckdb.connect()
    for layer, name in (("raw", "task_states"), ("marts", "task_scheduler"), ("marts", "op_summary")):
        got, want = (
            con.execute(
                f"select * exclude (run_id) from read_parquet({[str(f) for f in files]}) order by all"
            ).fetchall()
            for files in (
                existing_files(wh, layer, name),
                existing_files(in_process, layer, name, _runs_of(in_process, built)),
            )
        )
        assert got == want and got, (layer, name)


def test_night_budget_runs_dumps_one_at_a_time(tmp_path, dumps, local_cluster, in_process, monkeypatch):
    """A budget smaller than any dump: each dump runs alone, its units handed to the cluster
    only once the dump before it is committed."""
    names = [d.name for d in dumps[:3]]
    night = Night(monkeypatch, local_cluster, dumps[:3])
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        outcomes = run_roots(wh, dumps[:3], cluster=local_cluster, night_budget=1)
    assert [o.status for o in outcomes] == ["built"] * 3, [o.error for o in outcomes]
    # (a PROF_* job's host folder is split by device in a phase of its own, after its read)
    splits = {n: ("split",) if n.startswith("prof-") else () for n in names}
    assert night.events == [(what, n) for n in names for what in ("ingest", *splits[n], "build", "commit")]
    assert _facts(wh) == sorted(
        ({k: r[k] for k in RUN_FACTS} for r in _runs_of(in_process, names)), key=lambda r: r["run_id"]
    )
    _assert_only_named_parts(wh)


def test_cluster_rebuild_equals_in_process(tmp_path, dumps, local_cluster, in_process):
    """`build --all` on the cluster: each device's marts built on its own give the same marts."""
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        run_roots(wh, dumps, then_build=False)
        for run in wh.run_index().run_records():
            assert rebuild(wh, run, cluster=local_cluster).status == "built"
    diff = _differences(in_process, wh)
    assert {t: d for t, d in diff.items() if d[0] or d[1]} == {}
    assert not (wh.path / ".tmp").exists() or not any((wh.path / ".tmp").iterdir())


@pytest.mark.parametrize("point", ["unit_read", "unit_split", "device_built"])
def test_worker_killed_once_is_retried(tmp_path, dumps, in_process, point, monkeypatch):
    """A worker dies (os._exit, as under kill -9) in the middle of its first task; the scheduler
    gives the task to a worker again and the run comes out whole and the same."""
    monkeypatch.setenv("PROFETL_CRASH_AT", point)
    monkeypatch.setenv("PROFETL_CRASH_ONCE", str(tmp_path / "crashed"))
    wh = Warehouse(tmp_path / "wh")
    with Cluster(workers=2) as c, wh.writer():  # its workers start with the crash set
        outcomes = run_roots(wh, dumps[:2], cluster=c)
    assert (tmp_path / "crashed").exists()  # a worker did die
    assert [o.status for o in outcomes] == ["built", "built"], [o.error for o in outcomes]
    assert_consistent(wh.path)
    for table in ("raw/task_states", "marts/task_scheduler", "marts/op_summary"):
        layer, name = table.split("/")
        con = duckdb.connect()
        got = con.execute(
            f"select * exclude (run_id) from read_parquet({[str(f) for f in existing_files(wh, layer, name)]}) "
            "order by all"
        ).fetchall()
        runs = [
            r
            for r in in_process.run_index().run_records()
            if r["source_path"] in {o.source_path for o in outcomes}
        ]
        assert len(runs) == 2
        want = con.execute(
            f"select * exclude (run_id) from read_parquet({[str(f) for f in existing_files(in_process, layer, name, runs)]}) "
            "order by all"
        ).fetchall()
        assert got == want, table


def test_worker_killed_every_time_fails_the_run_cleanly(tmp_path, dumps, monkeypatch):
    """A unit whose worker dies at every try fails its run with the reason; no run is left
    half-committed, and the next run leaves no part file the index does not name."""
    import dask

    monkeypatch.setenv("PROFETL_CRASH_AT", "unit_read")
    wh = Warehouse(tmp_path / "wh")
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with Cluster(workers=2) as c, wh.writer():
            outcomes = run_roots(wh, dumps[:1], cluster=c)
    assert outcomes[0].status == "failed"
    assert "device" in outcomes[0].error and "worker running it died" in outcomes[0].error, outcomes[0].error
    assert wh.run_index().run_records() == []
    monkeypatch.delenv("PROFETL_CRASH_AT")
    again = profetl("run", dumps[0], "--warehouse", wh.path)
    assert again.returncode == 0, again.stderr
    assert_consistent(wh.path)
    assert len(part_files(wh.path)) == len({p.parent for p in part_files(wh.path)})  # one part per table
    assert not (wh.path / ".tmp").exists()


def test_unreachable_scheduler_is_one_clear_error(tmp_path, dumps, monkeypatch):
    monkeypatch.setattr(cluster_module, "CONNECT_SECONDS", 1)
    with pytest.raises(ClusterUnavailable, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        Cluster(scheduler="tcp://127.0.0.1:9")
    assert ClusterUnavailable.exit_code == ExitCode.CLUSTER == 6
    # the command in this process, so that it waits the 1 s set above, not the default 10 s
    from typer.testing import CliRunner

    from pipeline.cli.main import app

    r = CliRunner().invoke(
        app, ["run", str(dumps[0]), "--warehouse", str(tmp_path / "wh"), "--scheduler", "tcp://127.0.0.1:9"]
    )
    assert r.exit_code == ExitCode.CLUSTER, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profetl: error: cannot reach the Dask scheduler"), (
        r.stderr
    )
    assert not (tmp_path / "wh").exists() or Warehouse(tmp_path / "wh").run_index().run_records() == []


def test_cluster_options_are_checked():
    with pytest.raises(UsageError, match="must be 1 or more"):
        Cluster(workers=0)
    with pytest.raises(UsageError):
        Cluster(workers=2, scheduler="tcp://127.0.0.1:9")
    p = profetl(
        "run", "data/sample", "--workers", "2", "--scheduler", "tcp://x:1", cwd=Path(__file__).parents[2]
    )
    assert p.returncode == ExitCode.USAGE and "give one of them" in p.stderr
    # --budget: a size, and only with a cluster (checked before one starts)
    p = profetl("run", "data/sample", "--budget", "8GB", cwd=Path(__file__).parents[2])
    assert p.returncode == ExitCode.USAGE and "give --workers or --scheduler" in p.stderr
    p = profetl("run", "data/sample", "--workers", "2", "--budget", "8XB", cwd=Path(__file__).parents[2])
    assert p.returncode == ExitCode.USAGE and "is not a size" in p.stderr


def test_cli_run_with_workers(tmp_path, dumps):
    """`profetl run --workers 2`: the nightly command on a local cluster, as a user runs it."""
    p = profetl("run", dumps[0], dumps[3], "--warehouse", tmp_path / "wh", "--workers", "2", "--json")
    assert p.returncode == 0, p.stderr
    import json

    got = json.loads(p.stdout)
    assert [d["status"] for d in got] == ["built", "built"]
    assert os.path.basename(got[1]["source_path"]) == "prof-ascend910b"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def scheduler(tmp_path):
    """A scheduler and a worker process of 2 workers started by hand, as on a cluster
    (`dask scheduler`, `dask worker`), in a folder of their own; stopped afterwards."""
    import subprocess
    import sys
    import time

    from distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    port = address.rsplit(":", 1)[1]
    where = tmp_path / "workers"
    where.mkdir()
    cli = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = [subprocess.Popen([*cli, "--port", port, "--no-dashboard"], cwd=where, stderr=subprocess.DEVNULL)]
    procs.append(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--nworkers",
                "2",
                "--nthreads",
                "1",
                "--no-dashboard",
            ],
            cwd=where,
            stderr=subprocess.DEVNULL,
        )
    )
    with Client(address, timeout=30) as c:
        c.wait_for_workers(2, timeout=60)
    yield address, procs[0]
    # the workers first, then the scheduler: workers stopping while their scheduler also
    # goes away wait out their timeouts to reach it
    for p in reversed(procs):
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
    time.sleep(0.5)


def test_cli_run_on_a_running_scheduler(tmp_path, dumps, scheduler, in_process):
    """`profetl run --scheduler`: workers started by hand in another folder (so every path the
    tasks get must be absolute), the same runs as in-process."""
    address, _ = scheduler
    wh = tmp_path / "wh"
    p = profetl("run", dumps[0], dumps[2], "--warehouse", os.path.relpath(wh), "--scheduler", address)
    assert p.returncode == 0, p.stdout + p.stderr
    got, want = Warehouse(wh), in_process
    runs = [
        r
        for r in want.run_index().run_records()
        if r["run_id"] in {r["run_id"] for r in got.run_index().run_records()}
    ]
    assert len(runs) == 2
    con = duckdb.connect()
    for layer, table in (
        ("raw", "task_states"),
        ("raw", "api_calls"),
        ("marts", "op_summary"),
        ("marts", "acl_api"),
    ):
        a = con.execute(
            f"select * exclude (run_id) from read_parquet({[str(f) for f in existing_files(got, layer, table)]}) "
            "order by all"
        ).fetchall()
        b = con.execute(
            f"select * exclude (run_id) from read_parquet({[str(f) for f in existing_files(want, layer, table, runs)]}) "
            "order by all"
        ).fetchall()
        assert a == b and a, table
    assert not (wh / ".tmp").exists()


def test_scheduler_stopped_mid_job_fails_the_dumps_cleanly(tmp_path, dumps, scheduler):
    """The scheduler goes away while a night runs: the dumps not done fail with the reason, no
    run is half committed, and an in-process run afterwards finds nothing left over."""
    import subprocess
    import sys
    import time

    address, sched = scheduler
    wh = tmp_path / "wh"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline.cli",
            "run",
            *map(str, dumps),
            "--warehouse",
            str(wh),
            "--scheduler",
            address,
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)
    sched.kill()
    out, err = p.communicate(timeout=120)
    assert p.returncode == ExitCode.FAILED, err
    # Dask's client logs its lost connection as one line, never a traceback
    assert "Traceback" not in err and "\n  File " not in err, err
    import json

    failed = [d for d in json.loads(out) if d["status"] == "failed"]
    assert failed, out
    assert all("connection to the Dask scheduler" in d["error"] for d in failed), failed
    done = {d["run_id"] for d in json.loads(out) if d["status"] == "built"}
    assert {r["run_id"] for r in Warehouse(wh).run_index().run_records()} == done
    again = profetl("run", *dumps, "--warehouse", wh)
    assert again.returncode == 0, again.stderr
    assert_consistent(wh)
    assert not (wh / ".tmp").exists()
    # every part file on disk is one the index names (the dead job's shards are gone)
    index = Warehouse(wh).run_index().rows_by_run_id()
    named = {r[key] for r in index.values() for key in ("raw_part", "mart_part")}
    assert {part_of(f.name) for f in part_files(wh)} == named


def test_thread_pool_of_units_equals_in_process(tmp_path, dumps, in_process):
    """The units in a pool of threads of one process (the bench's parallel decoding without
    Dask) write the same warehouse too."""
    from pipeline.jobs.cluster import Threads

    wh = Warehouse(tmp_path / "wh")
    with Threads(2) as pool, wh.writer():
        outcomes = run_roots(wh, dumps, cluster=pool)
    assert [o.status for o in outcomes] == ["built"] * len(dumps), [o.error for o in outcomes]
    diff = _differences(in_process, wh)
    assert {t: d for t, d in diff.items() if d[0] or d[1]} == {}


def test_read_threads_equal_in_process(tmp_path, dumps, in_process):
    """`profetl run --read-threads 2`: devices decoded side by side in one process, built as
    one: the same warehouse, and the ingest's parts are a file per unit."""
    wh = Warehouse(tmp_path / "wh")
    p = profetl("run", *dumps, "--warehouse", wh.path, "--read-threads", "2")
    assert p.returncode == 0, p.stderr
    diff = _differences(in_process, wh)
    assert {t: d for t, d in diff.items() if d[0] or d[1]} == {}
    index = wh.run_index().rows_by_run_id()
    assert all(part_of(f"part-{r['raw_part']}.parquet") == r["raw_part"] for r in index.values())
    # units: devices, and hosts split by the devices they serve (each PROF_* job's 2 host
    # folders: 2 devices and the host's own rows each)
    assert sorted(store_shards(r["raw_part"]) for r in index.values()) == [2, 10, 10, 10]
    assert all(store_shards(r["mart_part"]) == 0 for r in index.values())  # built in one piece


def test_device_build_reads_only_its_own_host_rows(tmp_path, dumps):
    """A host unit's files are split by the devices its threads launched on: a device's build
    reads no file holding another device's host rows, and gets the rows the filter over the
    whole run gives (its own, and every row of the threads that recorded anything for it)."""
    import re

    from pipeline.jobs.cluster import Threads
    from pipeline.jobs.raw_reads import THREAD_TABLES, raw_select

    wh = Warehouse(tmp_path / "wh")
    with Threads(2) as pool, wh.writer():
        run_roots(wh, [dumps[3]], cluster=pool, then_build=False)  # 4 devices, 2 host folders
    (run,) = wh.run_index().run_records()
    con = duckdb.connect()
    whole = {t: raw_select(wh, t, run) for t in THREAD_TABLES}
    threads_of = " union ".join(f"select tid from ({sql}) where device_id = ?" for sql in whole.values())
    for device in range(4):
        threads = {tid for (tid,) in con.execute(threads_of, [device] * len(whole)).fetchall()}
        assert threads
        for table, sql in whole.items():
            mine = raw_select(wh, table, run, device)
            files = sorted(set(re.findall(r"read_parquet\('([^']*)'\)", mine)))
            assert files, table
            read = con.execute(f"select distinct tid, device_id from read_parquet({files!r})").fetchall()
            assert {tid for tid, d in read if d != device} <= threads, (table, device, read)
            own = [f for f in files if Path(f).parent.name == table]
            assert len(own) < len(wh.run_index().files_of_run("raw", table, run))
            wanted = (
                f"select * from ({sql}) where device_id = {device} or tid in ({sorted(threads)})".replace(
                    "[", ""
                ).replace("]", "")
            )
            for a, b in ((mine, wanted), (wanted, mine)):
                assert con.execute(f"select count(*) from (({a}) except all ({b}))").fetchone() == (0,)
            assert con.execute(f"select count(*) from ({mine})").fetchone()[0] > 0
