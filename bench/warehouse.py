"""profetl benchmark: commands over warehouses of many small runs.

    python bench/warehouse.py                         # 100, 1,000 and 10,000 runs
    python bench/warehouse.py --runs 100,1000 --layout legacy --code OLD_CHECKOUT

A base run is made once by ``profetl run`` of the bundled sample dump (data/sample). A
warehouse of N runs is then generated from it without decoding anything: each run is the
base run's raw and mart part files under a new run id and a new collection time, one per
night (``generate``). ``--layout legacy`` writes the layout of profetl 0.2 (a folder and a
commit record per run, one part file per table and run, as the upgrade test's starting point
is); this profetl's readers refuse that layout until ``profetl check --repair`` upgrades it,
so it needs ``--code`` naming a checkout of a profetl that reads it as it is (0.2, or one
before the readers refused it). ``--layout current`` writes the current layout through ``pipeline.warehouse`` (old
runs compacted as profetl compacts them, the newest ones in their own files).

Each figure is one command in a child process, as a user runs it (interpreter start
included): ``runs --last 20``, ``runs --json`` of all runs, ``query`` of an aggregate over all
runs, ``query`` filtered to one run, ``export`` of one mart for all runs and for 10 runs,
one more nightly ``run`` of a new dump (its ingest and build included), and the number of
files in the warehouse. Warehouses go under ``bench/out/`` (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from pipeline.warehouse.contracts import contract  # noqa: E402

SAMPLE = ROOT / "data" / "sample"
NIGHT_US = 86_400 * 1_000_000
FIRST_US = 1_700_000_000 * 1_000_000
ENV = dict(os.environ, PYTHONPATH=str(ROOT))  # --code: another checkout's profetl runs the commands


def profetl(*args: str, capture: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args],
        env=ENV,
        cwd=ENV["PYTHONPATH"],
        capture_output=capture,
        text=True,
        check=True,
    )


def base_run(out: Path) -> Path:
    """A warehouse with the sample dump's one run, made once."""
    wh = out / "base"
    if not (wh / ".done").exists():
        shutil.rmtree(wh, ignore_errors=True)
        profetl("run", str(SAMPLE), "-w", str(wh))
        (wh / ".done").write_text("")
    return wh


def _base_files(base: Path) -> tuple[dict, dict[tuple[str, str], Path]]:
    """The base run's commit record and its part files by (layer, table)."""
    sys.path.insert(0, str(ROOT))
    from pipeline.warehouse.store import Warehouse

    wh = Warehouse(base)
    (run,) = wh.run_index().run_records() if hasattr(wh, "run_index") else wh.runs()
    files = {}
    for layer in ("raw", "marts"):
        for d in sorted((base / layer).iterdir()):
            if d.name.startswith("_"):  # the parts' commit records, not a table
                continue
            f = (
                wh.run_index().files_of_run(layer, d.name, run)[0]
                if hasattr(wh, "run_index")
                else wh.run_files(layer, d.name, run)[0]
                if hasattr(wh, "run_files")
                else wh.run_part(layer, d.name, run)
                if hasattr(wh, "run_part")
                else None
            )
            if f is None:
                (f,) = d.glob("**/*.parquet")
            files[(layer, d.name)] = f
    return run, files


def run_rows(run: dict, n: int) -> list[dict]:
    """``n`` commit records like ``run``, one night apart, with their own ids."""
    rows = []
    for i in range(n):
        start = FIRST_US + i * NIGHT_US
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(start / 1e6))
        rid = f"{stamp}-{i:08x}"
        rows.append(
            dict(
                run,
                run_id=rid,
                collection_start_us=start,
                source_path=f"/nightly/{i}",
                fingerprint=f"bench-{i}",
                ingest_id=f"{stamp}-i{i:07x}",
                build_id=f"{stamp}-b{i:07x}",
            )
        )
    return rows


def generate_legacy(base: Path, wh: Path, n: int) -> None:
    """profetl 0.2's layout: runs/run_id=<id>/run.parquet and one part file per table and run
    (hard links to the base run's files: the bytes are the same)."""
    run, files = _base_files(base)
    schema = contract("raw", "runs").schema
    for r in run_rows(run, n):
        for (layer, table), f in files.items():
            part = r["ingest_id"] if layer == "raw" else r["build_id"]
            d = wh / layer / table / f"run_id={r['run_id']}"
            d.mkdir(parents=True, exist_ok=True)
            os.link(f, d / f"part-{part}.parquet")
        d = wh / "runs" / f"run_id={r['run_id']}"
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([r], schema=schema), d / "run.parquet")


def generate_current(base: Path, wh: Path, n: int) -> None:
    """The current layout, written by ``bulk_load``."""
    from pipeline.warehouse.store import Warehouse

    run, files = _base_files(base)
    tables = {key: pq.read_table(f) for key, f in files.items()}
    w = Warehouse(wh)
    with w.writer() as writer:
        bulk_load(writer, run_rows(run, n), tables)


def bulk_load(w, rows: list[dict], tables: dict[tuple[str, str], pa.Table]) -> None:
    """Commit many runs at once whose rows are the same ``tables`` (one run's raw and mart
    tables by (layer, table)) through the writer ``w`` (``Warehouse.writer()``, on an empty
    warehouse), old runs in groups as compaction would leave them: for generating big
    warehouses quickly."""
    from pipeline.warehouse import compaction
    from pipeline.warehouse.layout import LAYERS, file_schema, new_id, part_file
    from pipeline.warehouse.part_rows import conform, with_run
    from pipeline.warehouse.sink import parquet_writer

    idx = w.run_index().rows_by_run_id()
    keep = rows[-compaction.KEEP_FRESH :]
    old = rows[: -compaction.KEEP_FRESH] if len(rows) > compaction.KEEP_FRESH else []
    chunks = [old[i : i + compaction.GROUP_RUNS] for i in range(0, len(old), compaction.GROUP_RUNS)]
    for layer, key, id_key in LAYERS:
        for chunk in [[r] for r in keep] + chunks:
            part = chunk[0][id_key] if len(chunk) == 1 and chunk[0] in keep else "c" + new_id()
            for (lay, table), t in tables.items():
                if lay != layer:
                    continue
                schema = file_schema(layer, table)
                whole = pa.concat_tables([with_run(conform(t, schema, None), r["run_id"]) for r in chunk])
                f = part_file(w.path, layer, table, part)
                f.parent.mkdir(parents=True, exist_ok=True)
                with parquet_writer(f, schema) as out:
                    out.write_table(whole, row_group_size=compaction.GROUP_ROW_GROUP_ROWS)
                w.record_file_in_place(f)
            for r in chunk:
                idx.setdefault(r["run_id"], dict(r))[key] = part
    last = idx[rows[-1]["run_id"]]
    workload = w.workload(last, last["raw_part"])
    for r in rows:
        idx[r["run_id"]]["workload"] = workload
    w.write_index(idx)


def generate(base: Path, wh: Path, n: int, layout: str) -> None:
    shutil.rmtree(wh, ignore_errors=True)
    wh.mkdir(parents=True)
    (generate_legacy if layout == "legacy" else generate_current)(base, wh, n)


CPU: dict[str, float] = {}


def timed(name: str, *args: str) -> float:
    """Wall time of one command; its CPU time (user + system, all threads) goes to ``CPU``
    under the command's name: on a busy machine the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    profetl(*args)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[name] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall


def count_files(wh: Path) -> int:
    return sum(len(fs) for _, _, fs in os.walk(wh))


def nightly_dump(out: Path, i: int) -> Path:
    """A copy of the sample dump that is a new run: its start_info names another start."""
    d = out / f"night-{i}"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(SAMPLE, d)
    for f in d.rglob("start_info*"):
        if f.is_file() and not f.name.endswith(".done"):
            f.write_text(f.read_text() + " " * (i + 1))  # another control-file hash: another run id
    return d


def bench(wh: Path, out: Path, n: int) -> dict:
    w = str(wh)
    sql_all = "SELECT count(*) AS n, sum(dur_ns) AS total_ns FROM op_summary"
    one = profetl("runs", "--last", "1", "--json", "-w", w).stdout
    run_id = json.loads(one)[0]["run_id"]
    sql_one = f"SELECT op_type, sum(dur_ns) FROM op_summary WHERE run_id = '{run_id}' GROUP BY 1"
    r = {"runs": n}
    CPU.clear()
    r["runs_last20_s"] = timed("runs_last20", "runs", "--last", "20", "-w", w)
    r["runs_json_s"] = timed("runs_json", "runs", "--json", "-w", w)
    r["query_all_s"] = timed("query_all", "query", sql_all, "-w", w)
    r["query_one_s"] = timed("query_one", "query", sql_one, "-w", w)
    r["export_all_s"] = timed(
        "export_all",
        "export",
        "op_summary",
        "--since",
        "2000-01-01",
        "--format",
        "parquet",
        "-o",
        str(out / "export.parquet"),
        "-w",
        w,
    )
    since = time.strftime("%Y-%m-%dT%H:%M", time.gmtime((FIRST_US + (n - 10) * NIGHT_US) / 1e6))
    r["export_10_s"] = timed(
        "export_10",
        "export",
        "op_summary",
        "--since",
        since,
        "--format",
        "parquet",
        "-o",
        str(out / "export10.parquet"),
        "-w",
        w,
    )
    dump = nightly_dump(out, n)
    r["nightly_run_s"] = timed("nightly_run", "run", str(dump), "-w", w)
    shutil.rmtree(dump, ignore_errors=True)
    r["files"] = count_files(wh)
    r["cpu_s"] = {k: round(v, 2) for k, v in CPU.items()}
    r["load"] = os.getloadavg()[0]
    return r


COLUMNS = [
    "runs",
    "runs_last20_s",
    "runs_json_s",
    "query_all_s",
    "query_one_s",
    "export_all_s",
    "export_10_s",
    "nightly_run_s",
    "files",
    "generate_s",
    "load",
]


def table(results: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in results:
        lines.append(
            "| "
            + " | ".join(f"{r[c]:.2f}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in COLUMNS)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "warehouse")
    ap.add_argument("--runs", default="100,1000,10000", help="warehouse sizes in runs (comma separated)")
    ap.add_argument("--layout", choices=("current", "legacy"), default="current")
    ap.add_argument("--keep", action="store_true", help="keep the generated warehouses")
    ap.add_argument(
        "--code",
        type=Path,
        help="run the commands with the profetl of this checkout "
        "(e.g. an older commit's `git archive`, to time the layout it wrote)",
    )
    a = ap.parse_args(argv)
    if a.layout == "legacy" and not a.code:
        ap.error(
            "--layout legacy needs --code OLD_CHECKOUT: this profetl's readers refuse profetl 0.2's "
            "layout until `profetl check --repair` upgrades it"
        )
    if a.code:
        ENV["PYTHONPATH"] = str(a.code.resolve())
    a.out.mkdir(parents=True, exist_ok=True)
    base = base_run(a.out)
    results = []
    for n in (int(x) for x in a.runs.split(",")):
        wh = a.out / f"{a.layout}-{n}{'-' + a.code.name if a.code else ''}"
        t = time.perf_counter()
        generate(base, wh, n, a.layout)
        gen = time.perf_counter() - t
        r = bench(wh, a.out, n) | {"generate_s": gen, "layout": a.layout}
        results.append(r)
        print(json.dumps(r), flush=True)
        if not a.keep:
            shutil.rmtree(wh, ignore_errors=True)
    print(table(results))
    (a.out / f"results-{a.layout}{'-' + a.code.name if a.code else ''}.json").write_text(
        json.dumps(results, indent=1)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
