"""profetl benchmark: `profetl site` over a year of nights.

    python bench/site.py                       # 365 nights x 5 workloads
    python bench/site.py --nights 30 --workloads 2

A warehouse of NIGHTS x WORKLOADS runs is generated from the bundled sample dump's run as
bench/warehouse.py generates one (``bulk_load``: the base run's part files under new run ids,
old runs in group files as compaction leaves them), each run then given workload
``bench/w<k>`` and its own collection time (night i, workload k an hour after k - 1). Figures:

* full build: `profetl site --out DIR` into an empty DIR (every run's report page, or with
  ``--report-nights N`` those of the last N nights; the measures of every run, the changes,
  every page), as a user runs it (child process);
* incremental build: one more night of every workload committed, then `profetl site` again
  into the same DIR (what the nightly job does after `profetl run`);
* nothing new: `profetl site` again with no new run;
* page load: headless Chromium opening a copy of DIR/index.html (and of a workload page,
  which draws 365 nights of its charts) with a script that writes the page's load time
  (Navigation Timing: navigation start to the end of the load event) into the DOM; also the
  time of the whole browser process, which includes the browser's own start (skipped
  without chromium).

Warehouses and sites go under bench/out/ (git-ignored).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import warehouse as bw  # noqa: E402  (bench/warehouse.py)

HOUR_US = 3_600_000_000


def make(out: Path, nights: int, workloads: int) -> Path:
    from pipeline.warehouse.store import Warehouse

    base = bw.base_run(out)
    wh = out / f"site-wh-{nights}x{workloads}"
    shutil.rmtree(wh, ignore_errors=True)
    wh.mkdir(parents=True)
    run, files = bw._base_files(base)
    import pyarrow.parquet as pq

    tables = {key: pq.read_table(f) for key, f in files.items()}
    rows = bw.run_rows(run, nights * workloads)
    for i, r in enumerate(rows):
        r["collection_start_us"] = bw.FIRST_US + (i // workloads) * bw.NIGHT_US + (i % workloads) * HOUR_US
    w = Warehouse(wh)
    with w.writer():
        bw.bulk_load(w, rows, tables)
        idx = w.index()
        for i, r in enumerate(rows):
            idx[r["run_id"]]["workload"] = f"bench/w{i % workloads}"
        w._write_index(idx)
    return wh


def add_night(wh: Path, night: int, workloads: int) -> None:
    """One more night of every workload: `profetl run` of the sample dump would give every run
    the same id (the id is the dump's), so the runs are committed as ``make`` commits them."""
    from pipeline.warehouse.store import Warehouse

    w = Warehouse(wh)
    base = HERE / "out" / "base"
    run, files = bw._base_files(base)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.warehouse.layout import LAYERS, file_schema
    from pipeline.warehouse.part_rows import conform, with_run
    from pipeline.warehouse.sink import parquet_writer

    tables = {key: pq.read_table(f) for key, f in files.items()}
    with w.writer():
        idx = w.index()
        for k in range(workloads):
            start = bw.FIRST_US + night * bw.NIGHT_US + k * HOUR_US
            rid = f"extra-{night:04d}-{k}"
            r = dict(
                run,
                run_id=rid,
                collection_start_us=start,
                source_path=f"/nightly/extra/{night}/{k}",
                fingerprint=f"bench-extra-{night}-{k}",
                ingest_id=f"i-{rid}",
                build_id=f"b-{rid}",
            )
            for layer, key, id_key in LAYERS:
                for (lay, table), t in tables.items():
                    if lay != layer:
                        continue
                    schema = file_schema(layer, table)
                    f = w.file(layer, table, r[id_key])
                    f.parent.mkdir(parents=True, exist_ok=True)
                    with parquet_writer(f, schema) as out:
                        out.write_table(pa.concat_tables([with_run(conform(t, schema, None), rid)]))
                    w.record(f)
                r[key] = r[id_key]
            r["workload"] = f"bench/w{k}"
            idx[rid] = r
        w._write_index(idx)


def timed(*args: str) -> str:
    """Wall and CPU time (user + system of the child) of one command, as text."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    bw.profetl(*args)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return f"{wall:.2f} s wall, {cpu:.2f} s CPU"


# appended to a copy of the page: the page's own load time (navigation start to the end of
# its load event, Navigation Timing) written into the DOM that --dump-dom prints
TIMING = (
    "<script>window.addEventListener('load', function () { setTimeout(function () {"
    "var n = performance.getEntriesByType('navigation')[0];"
    "document.body.setAttribute('data-load-ms', String(n.loadEventEnd)); }, 0); });</script>"
)


def chromium_load(page: Path) -> tuple[float, float] | None:
    """(the page's load time in the browser, s; the whole browser process, s) or None."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        return None
    timed_page = page.with_name(f".timed-{page.name}")
    text = page.read_text(encoding="utf-8").replace("</body>", TIMING + "</body>")
    timed_page.write_text(text, encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            cmd = [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={profile}",
                "--proxy-server=127.0.0.1:9",
                "--dump-dom",
                timed_page.as_uri(),
            ]
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, check=True, timeout=120, text=True)
            whole = time.perf_counter() - t
    finally:
        timed_page.unlink()
    m = re.search(r'data-load-ms="([0-9.]+)"', p.stdout)
    return (float(m.group(1)) / 1e3 if m else float("nan")), whole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--workloads", type=int, default=5)
    ap.add_argument(
        "--report-nights",
        type=int,
        default=None,
        help="site --report-nights N (default: a report page per run)",
    )
    a = ap.parse_args()
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    t = time.perf_counter()
    wh = make(out, a.nights, a.workloads)
    print(
        f"warehouse of {a.nights * a.workloads} runs generated in {time.perf_counter() - t:.1f} s", flush=True
    )
    site = out / f"site-{a.nights}x{a.workloads}"
    shutil.rmtree(site, ignore_errors=True)
    extra = ["--report-nights", str(a.report_nights)] if a.report_nights else []
    full = timed("site", "--out", str(site), "-w", str(wh), *extra)
    reports = sum(1 for _ in (site / "runs").glob("*.html"))
    print(f"full build: {full} ({reports} report pages)", flush=True)
    same = timed("site", "--out", str(site), "-w", str(wh), *extra)
    print(f"again, nothing new: {same}", flush=True)
    add_night(wh, a.nights, a.workloads)
    inc = timed("site", "--out", str(site), "-w", str(wh), *extra)
    print(f"incremental (one more night of {a.workloads} workloads): {inc}", flush=True)
    workload = sorted((site / "workloads").glob("*.html"))[0]
    for name, page in (("front page", site / "index.html"), ("a workload page", workload)):
        got = chromium_load(page)
        if got is None:
            print(f"{name} load: no chromium")
        else:
            print(
                f"{name} load in headless chromium: {got[0]:.3f} s in the page, {got[1]:.2f} s the browser process"
            )
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    print(
        f"site: {sum(1 for _ in site.rglob('*.html'))} pages, {size / 1e6:.0f} MB; "
        f"index.html {(site / 'index.html').stat().st_size / 1e3:.0f} kB"
    )


if __name__ == "__main__":
    main()
