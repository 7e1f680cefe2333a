"""Two source trees of profetl, the same dumps: are every raw and mart table and the trace the same?

    python bench/compare_builds.py OLD_SRC NEW_SRC --out DIR [DUMP ...]

Makes the standard synthetic dumps (the sample run, hiprof with 2 devices and lost COMPLETEs,
prof of ascend910a, ascend310p and ascend910b with 2 devices each) plus any DUMP given, and
runs ``profetl run`` and ``profetl timeline`` on each with each tree's code (``python -m
pipeline.cli`` with PYTHONPATH set to the tree) into a warehouse of its own. Then every mart
and raw table of the two warehouses is compared with EXCEPT ALL in both directions (so duplicate
rows count), and the two traces byte for byte. Dumps of the same folder name (``rank0_ascend_pt``
under several parents) are told apart by their parents' names. For a change that must not alter any output (a
refactoring of the SQL): exit status 1 and the differing tables listed when anything differs.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

SYNTH = {
    "hiprof2": ["--layout", "hiprof", "--devices", "2", "--inferences", "4", "--drop-complete", "3"],
    "ascend910a": ["--layout", "prof", "--chip", "ascend910a", "--devices", "2"],
    "ascend310p": ["--layout", "prof", "--chip", "ascend310p", "--devices", "2"],
    "ascend910b": ["--layout", "prof", "--chip", "ascend910b", "--devices", "2"],
}


def _cli(src: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args], env=env, capture_output=True, text=True
    )


def _dumps(out: Path, extra: list[Path]) -> dict[str, Path]:
    dumps = {"sample": ROOT / "data" / "sample"}
    for name, args in SYNTH.items():
        d = out / "dumps" / name
        if not d.exists():
            r = _cli(ROOT, "synth", *args, str(d))
            if r.returncode:
                sys.exit(f"synth {name}: {r.stderr}")
        dumps[name] = d
    for p in extra:
        name, parents = p.name, p.resolve().parents
        for parent in parents:  # the parents' names until the name is unique
            if name not in dumps:
                break
            name = f"{parent.name}-{name}"
        dumps[name] = p
    return dumps


def _build(src: Path, dump: Path, wh: Path, trace: Path) -> None:
    r = _cli(src, "run", str(dump), "--warehouse", str(wh))
    if r.returncode not in (0, 5):  # 5: built, with data lost (the dump's own damage, counted)
        sys.exit(f"{src}: run {dump} failed ({r.returncode}): {r.stderr.strip()}")
    r = _cli(src, "timeline", "latest", "--warehouse", str(wh), "--out", str(trace))
    if r.returncode:
        sys.exit(f"{src}: timeline of {dump} failed ({r.returncode}): {r.stderr.strip()}")


def _marts(wh: Path, layer: str = "marts") -> set[str]:
    # (a folder starting with "_", the parts' commit records, is no table)
    d = wh / layer
    return {p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith("_")} if d.exists() else set()


def compare(old_wh: Path, new_wh: Path) -> list[str]:
    """The differences between the marts and raw tables of two warehouses of one run, one
    line each."""
    out = []
    con = duckdb.connect()
    for layer in ("marts", "raw"):
        out += _compare_layer(con, old_wh, new_wh, layer)
    return out


def _compare_layer(con: duckdb.DuckDBPyConnection, old_wh: Path, new_wh: Path, layer: str) -> list[str]:
    out = []
    tables = _marts(old_wh, layer) | _marts(new_wh, layer)
    for t in sorted(tables):
        if t not in _marts(old_wh, layer) or t not in _marts(new_wh, layer):
            out.append(f"{layer}/{t}: only in {'new' if t not in _marts(old_wh, layer) else 'old'}")
            continue
        old = f"read_parquet('{old_wh}/{layer}/{t}/**/*.parquet', hive_partitioning = false)"
        new = f"read_parquet('{new_wh}/{layer}/{t}/**/*.parquet', hive_partitioning = false)"
        if [c[:2] for c in con.sql(f"describe select * from {old}").fetchall()] != [
            c[:2] for c in con.sql(f"describe select * from {new}").fetchall()
        ]:
            out.append(f"{layer}/{t}: columns differ")
            continue
        gone = con.sql(
            f"select count(*) from (select * from {old} except all select * from {new})"
        ).fetchall()[0][0]
        added = con.sql(
            f"select count(*) from (select * from {new} except all select * from {old})"
        ).fetchall()[0][0]
        rows = con.sql(f"select count(*) from {old}").fetchall()[0][0]
        if gone or added:
            out.append(f"{layer}/{t}: {gone} of {rows} old rows not in new, {added} new rows not in old")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("dumps", type=Path, nargs="*", help="more dumps (exported runs, real data)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_intermixed_args()
    a.out.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name, dump in _dumps(a.out, a.dumps).items():
        result = {}
        for side, src in (("old", a.old), ("new", a.new)):
            wh = a.out / side / name
            shutil.rmtree(wh, ignore_errors=True)
            trace = a.out / side / f"{name}.trace.json"
            _build(src.resolve(), dump.resolve(), wh, trace)
            result[side] = (wh, trace)
        diffs = compare(result["old"][0], result["new"][0])
        tables = len(_marts(result["old"][0]))
        raw = len(_marts(result["old"][0], "raw"))
        if result["old"][1].read_bytes() != result["new"][1].read_bytes():
            diffs.append("timeline JSON differs")
        bad += bool(diffs)
        print(
            f"{name}: {tables} mart and {raw} raw tables, "
            + ("identical, timeline identical" if not diffs else "DIFFERENT")
        )
        for d in diffs:
            print(f"  {d}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
