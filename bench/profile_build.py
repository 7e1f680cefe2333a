"""Where a build's time goes: each SQL file of one run's build, profiled by DuckDB.

    python bench/profile_build.py --warehouse WH                 # the latest run of WH
    python bench/profile_build.py --warehouse WH --run 3f2a      # a run by id or unique prefix
    python bench/profile_build.py --warehouse WH DUMP            # DUMP ingested into WH first
    python bench/profile_build.py --warehouse WH --top 5 --json profile.json

Builds the run's marts once, in this process, the way ``profetl build`` does
(``pipeline.jobs.build.build_marts``), with DuckDB's JSON profiling on: each staging and
intermediate file's ``create table`` and each mart's query (streamed into its file) writes its
own profile (``build_marts(profile_dir=...)``). Nothing is committed: the run keeps the marts
it had. Printed per file, slowest first: the step's seconds as the build timed it (a mart's
include writing its file and its grain audit), its share of the build's steps, and the
operators that took the most time, each with the table or CTE it reads or the tables under
it, as DuckDB's profile names them. An operator's time is DuckDB's, summed over its threads:
the operators of one file can add up to more than the file's seconds on several cores, and
the share shown is the operator's part of the file's summed operator time. "spill MB" is what
the statement wrote to DuckDB's temporary files.

Profiling costs the build some time; compare files within one profile, and builds by
``profetl build`` (or bench/run.py), not by this.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from pipeline.jobs.build import build_marts  # noqa: E402
from pipeline.limits import memory_limit as resolve_memory_limit  # noqa: E402
from pipeline.warehouse.store import Warehouse  # noqa: E402

# operators that only pass rows on: never among the top operators
PASS_THROUGH = {"RESULT_COLLECTOR", "CREATE_TABLE_AS", "PROJECTION", "CTE_SCAN", "DUMMY_SCAN"}


def _ctes(node: dict, names: dict[str, str]) -> dict[str, str]:
    """CTE index -> CTE name, from the CTE operators of a profile's tree."""
    info = node.get("extra_info") or {}
    if "CTE Name" in info and "Table Index" in info:
        names[str(info["Table Index"])] = info["CTE Name"]
    for c in node.get("children") or []:
        _ctes(c, names)
    return names


def _short(table: str) -> str:
    """``memory.main.stg_task_ops`` -> ``stg_task_ops``; a Parquet scan's files -> ``parquet``."""
    return table.rsplit(".", 1)[-1] if "/" not in table else "parquet"


def _source(node: dict, ctes: dict[str, str]) -> str | None:
    """The table or CTE an operator reads or makes itself, if the profile names one."""
    info = node.get("extra_info") or {}
    if "Table" in info:
        return _short(str(info["Table"]))
    if "CTE Name" in info:
        return f"cte {info['CTE Name']}"
    if "CTE Index" in info:
        return f"cte {ctes.get(str(info['CTE Index']), info['CTE Index'])}"
    if "Function" in info and str(info["Function"]).upper().startswith("READ_PARQUET"):
        return "parquet"
    return None


def _under(node: dict, ctes: dict[str, str], limit: int = 3) -> list[str]:
    """The tables and CTEs an operator's input comes from: the nearest named ones below it."""
    out: list[str] = []
    for c in node.get("children") or []:
        s = _source(c, ctes)
        found = [s] if s else _under(c, ctes, limit)
        for f in found:
            if f not in out:
                out.append(f)
    return out[:limit]


def operators(profile: dict) -> list[dict]:
    """Every operator of a DuckDB JSON profile: name, seconds (summed over threads), rows out,
    and what it works on."""
    roots = profile.get("operator") or profile.get("children") or []
    ctes: dict[str, str] = {}
    for r in roots:
        _ctes(r, ctes)
    out = []

    def walk(n: dict) -> None:
        name = n.get("name") or n.get("operator_name") or n.get("type") or "?"
        own = _source(n, ctes)
        on = own if own else ", ".join(_under(n, ctes))
        info = n.get("extra_info") or {}
        if info.get("Join Type"):
            name = f"{name} {info['Join Type']}".rstrip()
        out.append(
            {
                "operator": name,
                "seconds": float(n.get("timing") or n.get("operator_timing") or 0.0),
                "rows": int(n.get("intermediate_rows") or n.get("operator_cardinality") or 0),
                "on": on,
            }
        )
        for c in n.get("children") or []:
            walk(c)

    for r in roots:
        walk(r)
    return out


def summarize(profile: dict, top: int) -> dict:
    ops = [o for o in operators(profile) if o["operator"].split()[0] not in PASS_THROUGH]
    total = sum(o["seconds"] for o in ops) or 1.0
    system = profile.get("system") or {}
    return {
        "cpu_seconds": float((profile.get("query") or {}).get("cpu_time") or 0.0),
        "spill_bytes": int(system.get("total_bytes_spilled") or 0),
        "peak_buffer_bytes": int(system.get("peak_buffer_memory") or 0),
        "top": [dict(o, share=o["seconds"] / total) for o in sorted(ops, key=lambda o: -o["seconds"])[:top]],
    }


def ingest(wh: Path, dump: Path) -> str:
    """``profetl ingest DUMP`` into ``wh``: the run id."""
    r = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "ingest", str(dump), "-w", str(wh), "--json"],
        capture_output=True,
        text=True,
        # this tree's profetl, the dump's path as given (from the caller's folder)
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    if r.returncode:
        sys.exit(f"ingest of {dump} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    return json.loads(r.stdout)["run_id"]


def profile_run(wh: Warehouse, run: dict, memory_limit: str | None, threads: int | None, top: int) -> dict:
    """Build ``run``'s marts with profiling (nothing committed): the build's seconds and each
    step's seconds, peak memory and summarised profile, in step order."""
    pdir = Path(tempfile.mkdtemp(prefix="profetl-profile-"))
    try:
        t0 = time.monotonic()
        b = build_marts(wh, run, memory_limit, threads, profile_dir=pdir)
        seconds = time.monotonic() - t0
        wh.drop_temp(Path(b.folder))
        steps = []
        total = sum(b.seconds_by_step.values()) or 1.0
        for step, sec in b.seconds_by_step.items():
            path = pdir / f"{step.replace('/', '__')}.json"
            summary = summarize(json.loads(path.read_text()), top) if path.exists() else None
            steps.append(
                {
                    "step": step,
                    "seconds": sec,
                    "share": sec / total,
                    "max_rss_bytes": b.max_rss_by_step.get(step),
                    "profile": summary,
                }
            )
        return {
            "run_id": run["run_id"],
            "source_path": run.get("source_path"),
            "records": run.get("records_decoded"),
            "memory_limit": b.memory_limit,
            "staging": b.staging,
            "build_seconds": seconds,
            "steps_seconds": sum(b.seconds_by_step.values()),
            "steps": steps,
        }
    finally:
        shutil.rmtree(pdir, ignore_errors=True)


def render(p: dict, top: int) -> str:
    lines = [
        f"run {p['run_id']} ({p['source_path']}, {p['records'] or '?'} records): build "
        f"{p['build_seconds']:.2f} s, steps {p['steps_seconds']:.2f} s, memory limit "
        f"{p['memory_limit']}, staging in {p['staging']}",
        "",
        f"| file | s | share | spill MB | top {top} operators (share of the file's operator time, on) |",
        "|---|---|---|---|---|",
    ]
    for s in sorted(p["steps"], key=lambda s: -s["seconds"]):
        prof = s["profile"]
        ops = (
            "; ".join(
                f"{o['operator']} {o['share']:.0%}" + (f" ({o['on']})" if o["on"] else "")
                for o in prof["top"]
            )
            if prof
            else "(a view: no statement of its own; the files reading it run its query)"
        )
        spill = f"{prof['spill_bytes'] / 1e6:.0f}" if prof else ""
        lines.append(f"| {s['step']} | {s['seconds']:.2f} | {s['share']:.1%} | {spill} | {ops} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump", nargs="?", type=Path, help="a dump to ingest into the warehouse first")
    ap.add_argument("--warehouse", "-w", type=Path, required=True)
    ap.add_argument(
        "--run", default=None, help="run id, unique prefix or latest (default: the dump's, else latest)"
    )
    ap.add_argument(
        "--memory-limit",
        default=None,
        help="DuckDB memory limit of the build (default: profetl's for this machine)",
    )
    ap.add_argument("--threads", type=int, default=0, help="DuckDB threads for the build (0: one per core)")
    ap.add_argument("--top", type=int, default=3, help="operators shown per file")
    ap.add_argument("--json", type=Path, default=None, help="also write the profile as JSON here")
    a = ap.parse_args(argv)
    ref = a.run
    if a.dump is not None:
        got = ingest(a.warehouse, a.dump)
        ref = ref or got
    wh = Warehouse(a.warehouse)
    run = wh.run_index().resolve_run(ref or "latest")
    p = profile_run(wh, run, resolve_memory_limit(a.memory_limit), a.threads or None, a.top)
    print(render(p, a.top))
    if a.json:
        a.json.write_text(json.dumps(p, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
