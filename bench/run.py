"""profetl benchmark: ingest and build of synthetic dumps of growing size.

    python bench/run.py                       # hiprof and ascend910b, ~100 MB, 500 MB and 2 GB
    python bench/run.py --sizes 100 --layouts hiprof
    python bench/run.py --repeat 3             # each size three times, the median run reported
    python bench/run.py --separate             # `profetl ingest` and `profetl build`, two processes
    python bench/run.py --layouts ascend910b --devices 2 --streams 8 --base-inferences 300 --tasks 1000 --sizes 300,2000
                                               # many distinct tasks: 1,000 operators per inference,
                                               # task ids that do not repeat within the base

For each layout a small base dump is made with the library generators
(``pipeline.synth``) and repeated along its timeline to each size with
``pipeline.synth.scale`` (streamed to disk). Each size is then ingested and built by
``profetl run`` (the main job) in a child process, while a sampler reads the resident
memory of the child's whole process tree from /proc. The time is the process's; the
ingest and build columns are the two phases as profetl timed them, "other" the rest
(interpreter start, imports, finding the dump, exit: twice with ``--separate``). The read floor is the
time to read the same files (8 MiB reads) and nothing else, with the page cache as
warm as it is for profetl (the dump was just written or read). On a virtual machine the
"steal" column is the share of the CPUs' time the hypervisor gave to other machines during
the measurement (/proc/stat): a run with steal ran slower by about that much.

Dumps and warehouses go under ``bench/out/`` (git-ignored); results are printed and
written to ``bench/out/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from pipeline.limits import default_memory_limit  # noqa: E402
from pipeline.synth import hiprof as synth_hiprof  # noqa: E402
from pipeline.synth import prof as synth_prof  # noqa: E402
from pipeline.synth.scale import scale  # noqa: E402
from pipeline.warehouse.store import Warehouse  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


# --- memory of a process tree, sampled from /proc -------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree_rss(pid: int) -> list[int]:
    """Resident bytes of ``pid`` and of each of its descendants."""
    kids = _children()
    sizes, todo = [], [pid]
    while todo:
        p = todo.pop()
        todo.extend(kids.get(p, []))
        try:
            with open(f"/proc/{p}/statm") as fh:
                sizes.append(int(fh.read().split()[1]) * PAGE)
        except OSError:
            pass
    return sizes


def cpu_ticks() -> tuple[int, int]:
    """(steal, total) clock ticks of all CPUs since boot, from /proc/stat ((0, 0) where absent)."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    # user nice system idle iowait irq softirq steal guest guest_nice; guest time is in user
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the CPUs' time the hypervisor gave to other machines between two
    cpu_ticks(): a virtual machine runs slower by about that much, whatever runs on it."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def measure(cmd: list[str], interval: float = 0.02) -> dict:
    """Wall time, the CPU seconds of the process tree (user + system of ``cmd`` and of the
    descendants it waited for, from wait4), the peak RSS of the tree and of its largest single
    process (sampled), the host's CPU steal meanwhile, and stdout of ``cmd``. Not the kernel's
    max RSS of the child (wait4's ru_maxrss): Linux carries into it the high-water mark of this
    process at the exec, so after this process generated a dump of some GB every child would
    report that much."""
    ticks = cpu_ticks()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    peak, peak_one = [0], [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            sizes = tree_rss(proc.pid)
            peak[0] = max(peak[0], sum(sizes))
            peak_one[0] = max(peak_one[0], max(sizes, default=0))
            done.wait(interval)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        # a failed dump's reason is in its outcome (stdout, with --json), an error of the command on stderr
        said = (err.decode() + out.decode())[-2000:]
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {said}")
    return {
        "seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss": peak[0],
        "peak_rss_one": peak_one[0],
        "stdout": out.decode(),
        "steal": steal_share(ticks, cpu_ticks()),
    }


# --- dumps ----------------------------------------------------------------------------------


def dump_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def data_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def read_floor(root: Path) -> float:
    """Seconds to read every file of the dump, 8 MiB at a time, and nothing else."""
    t0 = time.perf_counter()
    buf = bytearray(8 << 20)
    for p in data_files(root):
        with open(p, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass
    return time.perf_counter() - t0


def make_base(
    layout: str, out: Path, inferences: int, tasks: int, devices: int = 1, streams: int = 2
) -> Path:
    if out.exists():
        return _dump_root(out)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if layout == "hiprof":
        synth_hiprof.generate(
            tmp,
            synth_hiprof.HiprofConfig(
                devices=devices, streams=streams, inferences=inferences, tasks=tasks, slice_bytes=1 << 40
            ),
        )
    else:
        synth_prof.generate(
            tmp,
            synth_prof.ProfConfig(
                chip=layout,
                devices=devices,
                streams=streams,
                inferences=inferences,
                tasks=tasks,
                slice_bytes=1 << 40,
            ),
        )
    tmp.rename(out)
    return _dump_root(out)


def _dump_root(out: Path) -> Path:
    profs = sorted(out.glob("PROF_*"))
    return profs[0] if len(profs) == 1 else out


# what a size needs on disk beside its dump, as a share of the dump: the warehouse (~0.2x the
# raw bytes) and DuckDB's spill files during the build, with room to spare
DISK_MARGIN = 0.5


def check_disk(out: Path, mb: int, dump_exists: bool) -> str | None:
    """Why ``mb`` MB cannot be benchmarked in ``out`` (too little free disk), or None. A 16 GB
    dump fills 16 GB before its build spills; finding out then wastes the run."""
    need = (0 if dump_exists else mb) + DISK_MARGIN * mb
    free = shutil.disk_usage(out).free / 1e6
    if free < need:
        return (
            f"{mb} MB needs about {need / 1e3:.1f} GB free in {out} (the dump, its warehouse and "
            f"DuckDB's spill files); {free / 1e3:.1f} GB are"
        )
    return None


def make_sized(base_root: Path, base_dir: Path, out: Path, mb: int, slice_bytes: int) -> tuple[Path, float]:
    """The base repeated to about ``mb`` MB; returns its root and the seconds it took (0 if it existed)."""
    marker = out / ".complete"
    rel = base_root.relative_to(base_dir)
    if marker.exists():
        return out / rel, 0.0
    shutil.rmtree(out, ignore_errors=True)
    copies = max(1, round(mb * 1e6 / dump_bytes(base_root)))
    t0 = time.perf_counter()
    scale(base_root, out / rel, copies, slice_bytes=slice_bytes)
    marker.write_text(str(copies))
    return out / rel, time.perf_counter() - t0


# --- one measurement ------------------------------------------------------------------------


def bench_one(dump: Path, wh: Path, memory_limit: str, threads: int, separate: bool = False) -> dict:
    """One measurement: ``profetl run DUMP`` (the main job: ingest and build in one process), or
    with ``separate`` ``profetl ingest`` then ``profetl build``, each a process of its own. Ingest
    and build seconds are the phases as profetl timed them (the run's row); what the processes
    spent around them (interpreter start, imports, finding the dump, exit) is ``other_s``."""
    shutil.rmtree(wh, ignore_errors=True)
    # the writes of earlier measurements (a removed warehouse, a generated dump) reach the disk
    # now, not while this one runs; profetl's own writes are measured with it
    os.sync()
    cli = [sys.executable, "-m", "pipeline.cli"]
    settings = ["--memory-limit", memory_limit, "--threads", str(threads)]
    raw = dump_bytes(dump)
    read_floor(dump)  # warm the page cache the same way for every step
    floor = min(read_floor(dump) for _ in range(2))
    if separate:
        ing = measure(cli + ["ingest", str(dump), "-w", str(wh), "--json"])
        rows = json.loads(ing["stdout"])["rows"]
        bld = measure(cli + ["build", "-w", str(wh), "--json"] + settings)
        (built,) = json.loads(bld["stdout"])
        procs = [ing, bld]
    else:
        one = measure(cli + ["run", str(dump), "-w", str(wh), "--json"] + settings)
        (done,) = json.loads(one["stdout"])
        rows, built = done["ingest"]["rows"], done["build"]
        procs = [one]
    (run,) = Warehouse(wh).run_index().run_records()
    records = sum(n for t, n in rows.items() if t not in ("devices", "ingest_issues"))
    total = sum(p["seconds"] for p in procs)
    return {
        "dump": dump.name,
        "raw_bytes": raw,
        "records": records,
        "processes": len(procs),
        "ingest_s": run["ingest_seconds"],
        "build_s": run["build_seconds"],
        "other_s": total - run["ingest_seconds"] - run["build_seconds"],
        "total_s": total,
        "raw_mb_s": raw / 1e6 / total,
        "records_s": records / total,
        "steal": sum(p["steal"] * p["seconds"] for p in procs) / total,
        "peak_rss_by_process": [p["peak_rss"] for p in procs],
        "peak_rss": max(p["peak_rss"] for p in procs),
        "warehouse_bytes": dump_bytes(wh),
        "read_floor_s": floor,
        "ratio_to_read": total / floor,
        "build_seconds_by_step": built["seconds_by_step"],
        "build_max_rss_by_step": built.get("max_rss_bytes_by_step", {}),
    }


def slowest_steps(r: dict, n: int = 6) -> str:
    """The build steps that took longest, as 'step seconds' pairs (from `profetl build --json`)."""
    steps = sorted(r["build_seconds_by_step"].items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{name} {s:.1f}" for name, s in steps)


def peak_step(r: dict) -> str:
    """The build step in which the build process reached its peak resident memory: the first
    whose high-water mark (`profetl build --json`, max_rss_bytes_by_step) is the last one."""
    marks = r.get("build_max_rss_by_step") or {}
    if not marks:
        return "not reported"
    top = max(marks.values())
    step = next(name for name, v in marks.items() if v == top)
    return f"{step} ({top / 1e6:.0f} MB)"


def machine() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30
    import duckdb
    import numpy
    import pyarrow

    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, numpy {numpy.__version__}, pyarrow {pyarrow.__version__}, "
        f"duckdb {duckdb.__version__}"
    )


def host_speed(repeat: int = 5) -> dict:
    """Seconds of two fixed workloads, the fastest of ``repeat``: a numpy sort of 4M random
    int64s (one core; decoding is numpy) and a DuckDB group-by and sort of 4M rows (every core;
    the build is DuckDB). The bench prints them before and after its runs: the same code on a
    host (or in a spell) where these take 1.3x as long runs about that much slower, so tables
    of different rounds compare through them (bench/HISTORY.md: this host's speed has varied
    by up to 1.5x from one round to the next)."""
    import duckdb
    import numpy as np

    values = np.random.default_rng(7).integers(0, 2**40, 4_000_000)
    con = duckdb.connect()
    query = (
        "select k, count(*) as n, sum(v) as s from (select hash(i) % 100003 as k, i as v from range(4000000) t(i)) "
        "group by k order by s desc"
    )
    sort_s, duck_s = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        np.sort(values)
        sort_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rows = con.execute(query).fetchall()
        duck_s.append(time.perf_counter() - t0)
    con.close()
    assert len(rows) == 100003
    return {"numpy_sort_s": min(sort_s), "duckdb_query_s": min(duck_s)}


def speed_line(when: str, h: dict) -> str:
    return (
        f"host speed {when}: numpy sort of 4M int64 {h['numpy_sort_s']:.3f} s, "
        f"DuckDB group-by and sort of 4M rows {h['duckdb_query_s']:.3f} s"
    )


def table(results: list[dict]) -> str:
    head = (
        "layout",
        "raw MB",
        "records",
        "ingest s",
        "build s",
        "other s",
        "total s",
        "MB/s",
        "rec/s",
        "peak RSS MB",
        "warehouse MB",
        "read s",
        "x read",
        "steal %",
    )
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for r in results:
        lines.append(
            " | ".join(
                [
                    r["layout"],
                    f"{r['raw_bytes'] / 1e6:.0f}",
                    f"{r['records']:,}",
                    f"{r['ingest_s']:.2f}",
                    f"{r['build_s']:.2f}",
                    f"{r['other_s']:.2f}",
                    f"{r['total_s']:.2f}",
                    f"{r['raw_mb_s']:.0f}",
                    f"{r['records_s'] / 1e6:.2f} M",
                    f"{r['peak_rss'] / 1e6:.0f}",
                    f"{r['warehouse_bytes'] / 1e6:.0f}",
                    f"{r['read_floor_s']:.2f}",
                    f"{r['ratio_to_read']:.0f}",
                    f"{100 * r['steal']:.0f}",
                ]
            )
        )
    return "\n".join("| " + line + " |" for line in lines)


# the targets of the speed-and-memory issue, on a 2-core machine
SPEED_MB_S = {"hiprof": 50}  # generation 1; every fixed-size-record generation: 100
SPEED_MB_S_FIXED = 100
PEAK_LIMIT_BYTES = 1e9  # for the 2 GB dump
PEAK_GROWTH = 1.10  # largest dump's peak over the next size's
TIME_GROWTH_PER_BYTE = 4.5 / 4  # 2 GB takes at most 4.5x the 500 MB dump


def marginal_mb_s(small: dict, big: dict) -> float:
    """MB/s of the bytes the bigger dump adds (its extra MB over its extra seconds): the rate
    without the costs every run pays whatever its size (start, imports, planning, exit)."""
    extra_s = big["total_s"] - small["total_s"]
    return (big["raw_bytes"] - small["raw_bytes"]) / 1e6 / extra_s if extra_s > 0 else float("inf")


def added_rate(mb_s: float) -> str:
    """marginal_mb_s as printed: no rate when the bigger dump took no longer."""
    return (
        "the added bytes took no time to tell"
        if mb_s == float("inf")
        else f"the added bytes at {mb_s:.0f} MB/s"
    )


def targets(layout: str, rs: list[dict]) -> list[str]:
    """One line per target: met or not, with the measured value (median runs; the time and
    peak ratios also for the worst pairing of the repeats)."""
    rs = sorted(rs, key=lambda r: r["raw_bytes"])
    out = []

    def line(name: str, ok: bool, value: str) -> None:
        out.append(f"  {'met    ' if ok else 'NOT MET'}  {name}: {value}")

    want = SPEED_MB_S.get(layout, SPEED_MB_S_FIXED)
    slowest = min(rs, key=lambda r: r["raw_mb_s"])
    line(
        f">= {want} MB/s at every size",
        slowest["raw_mb_s"] >= want,
        f"slowest {slowest['raw_mb_s']:.0f} MB/s at {slowest['raw_bytes'] / 1e6:.0f} MB",
    )
    big = rs[-1]
    line(
        f"peak < {PEAK_LIMIT_BYTES / 1e9:.0f} GB at {big['raw_bytes'] / 1e6:.0f} MB",
        big["peak_rss"] < PEAK_LIMIT_BYTES,
        f"{big['peak_rss'] / 1e6:.0f} MB",
    )
    if len(rs) >= 2:
        small = rs[-2]
        growth = big["peak_rss"] / small["peak_rss"]
        worst = max(big.get("peak_rss_all", [big["peak_rss"]])) / min(
            small.get("peak_rss_all", [small["peak_rss"]])
        )
        line(
            f"peak at most {PEAK_GROWTH:.2f}x the {small['raw_bytes'] / 1e6:.0f} MB one",
            growth <= PEAK_GROWTH,
            f"x{growth:.2f} (worst pairing x{worst:.2f})",
        )
        limit = TIME_GROWTH_PER_BYTE * big["raw_bytes"] / small["raw_bytes"]
        ratio = big["total_s"] / small["total_s"]
        worst = max(big.get("total_s_all", [big["total_s"]])) / min(
            small.get("total_s_all", [small["total_s"]])
        )
        line(
            f"time at most {limit:.2f}x the {small['raw_bytes'] / 1e6:.0f} MB one",
            ratio <= limit,
            f"x{ratio:.2f} (worst pairing x{worst:.2f})",
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--sizes", default="100,500,2000", help="raw dump sizes in MB (comma separated)")
    ap.add_argument(
        "--layouts",
        default="hiprof,ascend910b",
        help="hiprof and/or prof chips (ascend910b, ascend910a, ...)",
    )
    ap.add_argument("--base-inferences", type=int, default=50)
    ap.add_argument(
        "--tasks",
        type=int,
        default=500,
        help="kernel tasks per inference of the base dump: each a distinct operator",
    )
    ap.add_argument("--devices", type=int, default=1, help="devices of the base dump")
    ap.add_argument("--streams", type=int, default=2, help="streams per device of the base dump")
    ap.add_argument("--slice-bytes", type=int, default=64 * 1024 * 1024)
    ap.add_argument(
        "--memory-limit",
        default=default_memory_limit(),
        help="DuckDB memory limit of the builds (default: profetl's for this machine)",
    )
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads for the build (0: one per core)")
    ap.add_argument("--keep", action="store_true", help="keep the sized dumps and warehouses")
    ap.add_argument(
        "--separate",
        action="store_true",
        help="time `profetl ingest` and `profetl build` as two processes instead of one `profetl run`",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="ingest and build each size this many times; report the run of median total time",
    )
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    print(machine(), flush=True)
    speed = {"before": host_speed()}
    print(speed_line("before", speed["before"]), flush=True)
    results = []
    for layout in a.layouts.split(","):
        shape = "" if (a.devices, a.streams) == (1, 2) else f"-{a.devices}d{a.streams}s"
        base_dir = a.out / f"base-{layout}-{a.base_inferences}x{a.tasks}{shape}"
        base = make_base(layout, base_dir, a.base_inferences, a.tasks, a.devices, a.streams)
        for mb in (int(s) for s in a.sizes.split(",")):
            sized = a.out / f"{layout}{shape}-{a.base_inferences}x{a.tasks}-{mb}MB"
            short = check_disk(a.out, mb, (sized / ".complete").exists())
            if short:
                print(f"bench: {short}", file=sys.stderr)
                return 2
            dump, gen_s = make_sized(base, base_dir, sized, mb, a.slice_bytes)
            tries = sorted(
                (
                    bench_one(dump, a.out / f"wh-{sized.name}", a.memory_limit, a.threads, a.separate)
                    for _ in range(a.repeat)
                ),
                key=lambda r: r["total_s"],
            )
            r = tries[len(tries) // 2]  # the median run (the host's other load varies run to run)
            r.update(
                layout=layout,
                size_mb=mb,
                generate_s=gen_s,
                repeats=len(tries),
                total_s_all=[t["total_s"] for t in tries],
                peak_rss_all=[t["peak_rss"] for t in tries],
            )
            results.append(r)
            print(
                f"{layout:>10} {r['raw_bytes'] / 1e6:7.0f} MB  ingest {r['ingest_s']:6.2f} s  build {r['build_s']:6.2f} s"
                f"  other {r['other_s']:5.2f} s  {r['raw_mb_s']:5.0f} MB/s  {r['records_s'] / 1e6:5.2f} M rec/s"
                f"  peak {r['peak_rss'] / 1e6:5.0f} MB"
                + (
                    f" (ingest {r['peak_rss_by_process'][0] / 1e6:.0f}, build {r['peak_rss_by_process'][1] / 1e6:.0f})"
                    if r["processes"] == 2
                    else ""
                )
                + f"  warehouse {r['warehouse_bytes'] / 1e6:5.0f} MB  read {r['read_floor_s']:.2f} s"
                f"  = {r['ratio_to_read']:.0f}x read  steal {100 * r['steal']:.0f} %"
                + (
                    f"  (totals of {len(tries)} runs: {', '.join(f'{t:.1f}' for t in r['total_s_all'])} s)"
                    if len(tries) > 1
                    else ""
                ),
                flush=True,
            )
            print(
                f"{'':>10} slowest build steps (s): {slowest_steps(r)}; build's peak memory reached in {peak_step(r)}",
                flush=True,
            )
            if not a.keep:
                shutil.rmtree(sized, ignore_errors=True)
                shutil.rmtree(a.out / f"wh-{sized.name}", ignore_errors=True)
    speed["after"] = host_speed()
    print(speed_line("after", speed["after"]))
    print()
    print(table(results))
    by = {}
    for r in results:
        by.setdefault(r["layout"], []).append(r)
    for layout, rs in by.items():
        rs = sorted(rs, key=lambda r: r["raw_bytes"])
        if len(rs) >= 2:
            a_, b_ = rs[-2], rs[-1]
            worst = ""
            if (
                len(b_["total_s_all"]) > 1
            ):  # the targets hold for any pairing of the runs, not only the medians
                worst = (
                    f"; worst pairing of the runs: time x{max(b_['total_s_all']) / min(a_['total_s_all']):.2f},"
                    f" peak memory x{max(b_['peak_rss_all']) / min(a_['peak_rss_all']):.2f}"
                )
            print(
                f"{layout}: {b_['raw_bytes'] / 1e6:.0f} MB vs {a_['raw_bytes'] / 1e6:.0f} MB: time x{b_['total_s'] / a_['total_s']:.2f}"
                f" (bytes x{b_['raw_bytes'] / a_['raw_bytes']:.2f}), peak memory x{b_['peak_rss'] / a_['peak_rss']:.2f}"
                + worst
                + f"; {added_rate(marginal_mb_s(a_, b_))}"
            )
    for layout, rs in by.items():
        print(f"targets, {layout}:")
        print("\n".join(targets(layout, rs)))
    (a.out / "results.json").write_text(
        json.dumps({"machine": machine(), "host_speed": speed, "results": results}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
