"""profetl on a Dask cluster against in-process: a multi-device job, and the scaling model.

    python bench/cluster.py                        # a 4-device ascend910b job of ~2 GB
    python bench/cluster.py --layout hiprof --mb 420
    python bench/cluster.py --workers 1,2 --repeat 2
    python bench/cluster.py --night 8             # and a night of 8 single-device dumps

A base job of ``--devices`` devices is generated with the library generator and repeated
along its timeline to about ``--mb`` MB (``pipeline.synth.scale``, as bench/run.py does).
Then, in turn and in the same minutes, ``profetl run JOB`` in-process, ``profetl run JOB
--workers N`` for each N, and ``profetl run JOB --read-threads N`` (the devices decoded side by
side in threads of one process, built as one) are timed as child processes, with the peak resident memory of the
largest single process of the process tree (the coordinator or one worker) and of the tree as
a whole, sampled from /proc. One device of the job on its own (a 1-device dump of the same
base, scaled alike) gives the per-device time ``t_dev`` in-process.

Each worker's DuckDB runs on one thread (``--threads 1``), and so does the one-device
reference, so that W workers use W cores; the in-process run has DuckDB's default, a thread
per core. The scaling model the numbers are checked against:

    T(D devices, W workers) = c + ceil(D / W) * t

``c`` is what does not divide among the workers (the cluster's start-up, the starting
process's share, the longest unit that is not a device: a PROF_* job's host folder), ``t`` one
device's read and build as a task; both are fitted from the W = 1 and W = 2 points, and the
model then predicts other D and W (a task's time taken as proportional to its device's bytes).
The cluster's start-up alone and the 1-device dump's time are printed beside them.

Beside the wall time, each variant's CPU seconds are those of its whole process tree (user +
system, from ``wait4``: the command and every descendant it waited for, the Dask workers
included), so that a cluster's extra work shows even where its wall time gains. ``--night N``
also times a night of N single-device dumps (each a 1-device dump of ``--night-mb`` MB with a
collection start of its own, so N runs), in-process and with ``--workers 2``: the case of a
nightly job that ingests many one-device dumps. The goals these numbers are held to
(docs/architecture.md#cluster) are printed after them.

Dumps and warehouses go under ``bench/out/`` (git-ignored); results are printed and written to
``bench/out/cluster.json``.

``--device-tasks`` measures instead what one device's build task costs inside the job against
the same device's bytes as a 1-device dump: each dump ingested by ``--read-threads 2`` (the
units and shards of a cluster's ingest), then ``build_marts(..., device=d)`` of every device,
each a child process with one DuckDB thread, timed with the bytes and rows of the raw files
its reads name. ``--code DIR,DIR`` runs it with other checkouts' profetl (an earlier commit's
tree, for before and after), alternating between them in every round.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from run import dump_bytes, machine, measure  # noqa: E402

from pipeline.synth import hiprof as synth_hiprof  # noqa: E402
from pipeline.synth import prof as synth_prof  # noqa: E402
from pipeline.synth.scale import scale  # noqa: E402


def make_job(
    layout: str, devices: int, out: Path, mb: int, inferences: int, tasks: int, start_us: int | None = None
) -> Path:
    """A job of ``devices`` devices of about ``mb`` MB in all (kept between runs); ``start_us``:
    its collection start, when not the generator's."""
    start = {} if start_us is None else {"start_us": start_us}
    base = out.with_name(out.name + "-base")
    if not base.exists():
        tmp = base.with_name(base.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if layout == "hiprof":
            synth_hiprof.generate(
                tmp,
                synth_hiprof.HiprofConfig(
                    devices=devices, inferences=inferences, tasks=tasks, slice_bytes=1 << 40, **start
                ),
            )
        else:
            synth_prof.generate(
                tmp,
                synth_prof.ProfConfig(
                    chip=layout,
                    devices=devices,
                    inferences=inferences,
                    tasks=tasks,
                    slice_bytes=1 << 40,
                    **start,
                ),
            )
        tmp.rename(base)
    marker = out / ".complete"
    if not marker.exists():
        shutil.rmtree(out, ignore_errors=True)
        copies = max(1, round(mb * 1e6 / dump_bytes(base)))
        scale(base, out / "job", copies)
        marker.write_text(str(copies))
    return out / "job"


def cluster_start(workers: int) -> float:
    """Seconds to start a local cluster of ``workers`` and have each worker import profetl's
    readers and build (what the first tasks would otherwise pay)."""
    code = (
        "import time; t = time.perf_counter(); from pipeline.jobs.cluster import Cluster\n"
        f"c = Cluster(workers={workers})\n"
        "c.client.run(lambda: __import__('pipeline.jobs.build') and __import__('pipeline.readers.prof.reader'))\n"
        "print(time.perf_counter() - t); c.close()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return float(out.stdout.split()[-1])


def run_job(job: Path, wh: Path, extra: list[str]) -> dict:
    """``profetl run JOB`` with ``extra`` options (JOB: a dump, or a folder of a night's dumps)."""
    shutil.rmtree(wh, ignore_errors=True)
    os.sync()
    r = measure([sys.executable, "-m", "pipeline.cli", "run", str(job), "-w", str(wh), "--json", *extra])
    outcomes = json.loads(r["stdout"])
    assert outcomes and all(o["status"] == "built" for o in outcomes), outcomes
    return {
        "seconds": r["seconds"],
        "cpu_seconds": r["cpu_seconds"],
        "peak_rss_one": r["peak_rss_one"],
        "peak_rss_tree": r["peak_rss"],
        "runs": len(outcomes),
        # summed over the runs: work done, not wall time, for a night
        "ingest_s": sum(o["ingest"]["seconds"] for o in outcomes),
        "build_s": sum(o["build"]["seconds"] for o in outcomes),
    }


def make_night(args, dumps: int, mb: int) -> Path:
    """A folder of ``dumps`` single-device dumps of about ``mb`` MB each, a day apart (kept between runs)."""
    night = args.out / f"cluster-{args.layout}-night-{dumps}x{mb}mb"
    for k in range(dumps):
        dump = night / f"dump-{k}"
        if dump.exists():
            continue
        job = make_job(
            args.layout,
            1,
            args.out / f"cluster-{args.layout}-night-{mb}mb-{k}",
            mb,
            args.inferences,
            args.tasks,
            start_us=1_767_225_600_000_000 + k * 86_400_000_000,
        )
        night.mkdir(parents=True, exist_ok=True)
        job.rename(dump)  # (a dump's folder is searched as it is: links are not followed)
    return night


def goals(best: dict[str, dict]) -> None:
    """The cluster's goals on a 2-core machine (docs/architecture.md#cluster), met or not."""
    inproc = best["in-process"]
    rows = []
    if "--workers 2" in best:
        w2 = best["--workers 2"]
        rows.append(("job: --workers 2 wall / in-process <= 1.00", w2["seconds"] / inproc["seconds"], 1.0))
        rows.append(
            ("job: --workers 2 CPU / in-process <= 1.25", w2["cpu_seconds"] / inproc["cpu_seconds"], 1.25)
        )
    if "night in-process" in best:
        n1, n2 = best["night in-process"], best["night --workers 2"]
        rows.append(("night: --workers 2 wall / in-process <= 0.80", n2["seconds"] / n1["seconds"], 0.8))
        rows.append(
            ("night: --workers 2 CPU / in-process <= 1.25", n2["cpu_seconds"] / n1["cpu_seconds"], 1.25)
        )
    for name, value, goal in rows:
        print(f"goal {name}: {value:.2f} {'met' if value <= goal else 'NOT met'}")


# one device's build task of a warehouse's only run, in a child process: the raw files its reads
# name (their bytes, and rows of THREAD_TABLES), then build_marts of that device timed
DEVICE_TASK = """
import json, re, sys, time
from pathlib import Path
import pyarrow.parquet as pq
from pipeline.jobs.build import build_marts
from pipeline.jobs.raw_reads import THREAD_TABLES, raw_select
from pipeline.warehouse.contracts import RAW_TABLES
from pipeline.warehouse.store import Warehouse
wh = Warehouse(Path(sys.argv[1]))
device = int(sys.argv[2])
(run,) = wh.run_index().run_records()
named = set()
for t in RAW_TABLES:
    named |= {p for p in re.findall(r"read_parquet[(]'([^']*)'[)]", raw_select(wh, t, run, device))}
host = sum(pq.read_metadata(p).num_rows for p in named if Path(p).parent.name in THREAD_TABLES)
t0 = time.perf_counter()
r = build_marts(wh, run, None, 1, device)
took = time.perf_counter() - t0
wh.drop_temp(Path(r.folder))
print(json.dumps({"seconds": took, "bytes": sum(Path(p).stat().st_size for p in named), "host_rows": host,
                  "code": __import__("pipeline").__file__}))
"""


def device_tasks(code: Path, job: Path, one: Path, out: Path, devices: int, label: str) -> list[dict]:
    """Each device's build task of ``job`` and device 0 of the 1-device dump ``one``, with the
    profetl of the checkout ``code`` (ingested by it too, into warehouses of its own)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    rows = []
    for name, dump, devs in (("job", job, range(devices)), ("one", one, [0])):
        wh = out / f"tasks-{label}-{name}-wh"
        # ingested again every round, timed too
        shutil.rmtree(wh, ignore_errors=True)
        cmd = [
            sys.executable,
            "-m",
            "pipeline.cli",
            "ingest",
            str(next(d for d in dump.iterdir() if d.is_dir())),  # the job's one dump
            "-w",
            str(wh),
            "--read-threads",
            "2",
        ]
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=code, env=env, check=True, capture_output=True)
        took = time.perf_counter() - t0
        rows.append({"code": label, "dump": name, "ingest_s": took, "load": os.getloadavg()[0]})
        print(f"{label:<8} {name:<4} ingest --read-threads 2: {took:6.1f} s (load {rows[-1]['load']:.1f})")
        for d in devs:
            cmd = [sys.executable, "-c", DEVICE_TASK, str(wh), str(d)]
            p = subprocess.run(cmd, cwd=code, env=env, check=True, capture_output=True, text=True)
            r = json.loads(p.stdout.splitlines()[-1])
            assert Path(r.pop("code")).is_relative_to(code), "the checkout's profetl did not run"
            rows.append({"code": label, "dump": name, "device": d, **r, "load": os.getloadavg()[0]})
            print(
                f"{label:<8} {name:<4} device {d}: {r['seconds']:6.1f} s, {r['bytes'] / 1e6:7.1f} MB of raw "
                f"files named, {r['host_rows']:>10,} rows of host threads' tables (load {rows[-1]['load']:.1f})",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--layout", default="ascend910b", help="hiprof, or a PROF_* chip (ascend910b, ...)")
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--mb", type=int, default=2000, help="size of the whole job in MB")
    ap.add_argument("--workers", default="1,2", help="worker counts to measure (comma separated)")
    ap.add_argument(
        "--read-threads", dest="threads", default="2", help="--read-threads values to measure ('' for none)"
    )
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--inferences", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--predict", default="64x2000@16", help="DEVICESxMB_PER_DEVICE@WORKERS to predict")
    ap.add_argument("--night", type=int, default=0, help="also a night of this many single-device dumps")
    ap.add_argument("--night-mb", type=int, default=250, help="MB of each dump of --night")
    ap.add_argument(
        "--device-tasks", action="store_true", help="time each device's build task against a 1-device dump's"
    )
    ap.add_argument(
        "--code", default=str(ROOT), help="checkouts to run --device-tasks with (comma separated)"
    )
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    tag = f"cluster-{args.layout}"
    job = make_job(
        args.layout,
        args.devices,
        args.out / f"{tag}-{args.devices}dev-{args.mb}mb",
        args.mb,
        args.inferences,
        args.tasks,
    )
    one = make_job(
        args.layout,
        1,
        args.out / f"{tag}-1dev-{args.mb // args.devices}mb",
        args.mb // args.devices,
        args.inferences,
        args.tasks,
    )
    job_mb, one_mb = dump_bytes(job) / 1e6, dump_bytes(one) / 1e6
    if args.device_tasks:
        print(
            f"{machine()}\njob: {args.layout}, {args.devices} devices, {job_mb:.0f} MB; one device: {one_mb:.0f} MB"
        )
        codes = [Path(c).resolve() for c in args.code.split(",")]
        tasks = []
        for _ in range(args.repeat):  # alternate, so every checkout sees the same host
            for i, code in enumerate(codes):
                tasks += device_tasks(code, job, one, args.out, args.devices, f"code{i}")
        (args.out / "cluster-tasks.json").write_text(
            json.dumps({"codes": args.code, "tasks": tasks}, indent=1)
        )
        return 0
    workers = [int(w) for w in args.workers.split(",")]
    threads = [int(n) for n in args.threads.split(",") if n]
    night = make_night(args, args.night, args.night_mb) if args.night else None
    points: dict[str, list[dict]] = {}
    for _ in range(args.repeat):  # alternate, so every variant sees the same host
        points.setdefault("in-process", []).append(run_job(job, args.out / f"{tag}-wh", []))
        # a task's DuckDB on one thread, so that W workers use W cores
        points.setdefault("one device", []).append(run_job(one, args.out / f"{tag}-wh", ["--threads", "1"]))
        for w in workers:
            points.setdefault(f"--workers {w}", []).append(
                run_job(job, args.out / f"{tag}-wh", ["--workers", str(w), "--threads", "1"])
            )
        for n in threads:
            points.setdefault(f"--read-threads {n}", []).append(
                run_job(job, args.out / f"{tag}-wh", ["--read-threads", str(n)])
            )
        if night is not None:
            points.setdefault("night in-process", []).append(run_job(night, args.out / f"{tag}-wh", []))
            points.setdefault("night --workers 2", []).append(
                run_job(night, args.out / f"{tag}-wh", ["--workers", "2", "--threads", "1"])
            )
    best = {k: min(v, key=lambda r: r["seconds"]) for k, v in points.items()}

    print(f"{machine()}")
    print(f"job: {args.layout}, {args.devices} devices, {job_mb:.0f} MB; one device alone: {one_mb:.0f} MB")
    if night is not None:
        print(
            f"night: {args.night} single-device dumps of {dump_bytes(night) / 1e6 / args.night:.0f} MB each"
        )
    print(
        f"{'variant':<19} {'seconds':>8} {'CPU s':>7} {'ingest s':>9} {'build s':>8} "
        f"{'peak 1 proc':>12} {'peak tree':>10}"
    )
    for k, r in best.items():
        print(
            f"{k:<19} {r['seconds']:8.1f} {r['cpu_seconds']:7.1f} {r['ingest_s']:9.1f} {r['build_s']:8.1f} "
            f"{r['peak_rss_one'] / 2**20:9.0f} MiB {r['peak_rss_tree'] / 2**20:6.0f} MiB"
        )
    goals(best)

    # the model: T(W) = c + ceil(D / W) * t, fitted from W = 1 and W = 2
    D = args.devices
    one_dev = best["one device"]
    t_dev = one_dev["ingest_s"] + one_dev["build_s"]  # a 1-device dump's work, one DuckDB thread
    model: dict = {"t_dev_s": t_dev, "device_mb": one_mb, "start_s": {w: cluster_start(w) for w in workers}}
    if 1 in workers and 2 in workers:
        t1, t2 = best["--workers 1"]["seconds"], best["--workers 2"]["seconds"]
        t = (t1 - t2) / (D - math.ceil(D / 2))
        c = t1 - D * t
        model.update(t_task_s=t, serial_s=c)
        print(
            f"model: T(W) = c + ceil(D/W) x t, from W = 1 and 2: c = {c:.1f} s (what does not divide among "
            f"workers), t = {t:.1f} s per device task (a {one_mb:.0f} MB device; alone as a 1-device dump: "
            f"{t_dev:.1f} s); cluster start-up alone: "
            + ", ".join(f"{model['start_s'][w]:.1f} s at W = {w}" for w in workers)
        )
        for w in workers:
            print(
                f"  --workers {w}: model {c + math.ceil(D / w) * t:.1f} s, measured {best[f'--workers {w}']['seconds']:.1f} s"
            )
        pd, pmb, pw = (float(x) for x in args.predict.replace("@", "x").split("x"))
        k = pmb / one_mb  # a task's time taken as proportional to its device's bytes; c as it is
        predicted = c + math.ceil(pd / pw) * t * k
        model["prediction_s"] = predicted
        print(
            f"prediction: {pd:.0f} devices x {pmb:.0f} MB on {pw:.0f} workers: {predicted / 60:.1f} min "
            f"(t = {t * k:.0f} s per device; in-process at this job's rate: "
            f"{best['in-process']['seconds'] * pd * pmb / job_mb / 60:.0f} min)"
        )
    (args.out / "cluster.json").write_text(json.dumps({"points": points, "model": model}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
