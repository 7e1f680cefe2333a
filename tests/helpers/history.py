"""A warehouse of several synthetic nights with known differences, for compare, trend and timeline."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from pipeline.jobs.runner import ingest_dump
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.synth.truth import Truth
from pipeline.warehouse.layout import part_files
from pipeline.warehouse.store import Warehouse

DAY_US = 86_400_000_000
START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


@dataclass
class Night:
    run_id: str
    truth: Truth
    cfg: HiprofConfig


def build_history(root: Path, configs: list[dict]) -> tuple[Warehouse, list[Night]]:
    """One synthetic run per config, collected one day apart (unless a config sets start_us)."""
    wh = Warehouse(root / "wh")
    nights = []
    for i, kw in enumerate(configs):
        cfg = HiprofConfig(**({"start_us": START_US + i * DAY_US} | kw))
        dump = root / f"night-{i}"
        truth = generate(dump, cfg)
        with wh.writer():
            o = ingest_dump(wh, dump)
        assert o.status == "built", o.error
        nights.append(Night(o.run_id, truth, cfg))
    return wh, nights


def op_running(truth: Truth, op_name: str) -> list[int]:
    """Running time (COMPLETE - RUNNING) of every completed instance of the op, all devices."""
    return [
        x.complete_ns - x.running_ns
        for x in truth.instances
        if x.op_name == op_name and x.complete_ns is not None
    ]


def op_mean(truth: Truth, op_name: str) -> float:
    d = op_running(truth, op_name)
    return sum(d) / len(d)


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# the mart columns the site's tracked metrics read (pipeline/analysis/run_stats.py): scaled per night
SCALED = {
    "task_scheduler": ("running_ns", "time_ns"),
    "ai_core_metrics": ("aicore_time_us",),
    "runtime_api_summary": ("time_ns",),
    "acl_api": ("dur_us",),
    "step_trace_summary": ("iteration_ns",),
}


def base_tables(root: Path, cfg: HiprofConfig | None = None) -> tuple[dict, dict]:
    """One synthetic run ingested and built: its index row and its raw and mart tables by (layer, table)."""
    import pyarrow.parquet as pq

    wh = Warehouse(root / "base")
    dump = root / "base-dump"
    generate(dump, cfg or HiprofConfig(devices=1, inferences=2, tasks=4, seed=5))
    with wh.writer():
        o = ingest_dump(wh, dump)
    assert o.status == "built", o.error
    run = wh.run_index().rows_by_run_id()[o.run_id]
    tables = {}
    for layer, key in (("raw", "raw_part"), ("marts", "mart_part")):
        for d in sorted((wh.path / layer).iterdir()):
            if d.name.startswith("_") or not d.is_dir():
                continue
            files = [f for f in part_files(wh.path, layer, d.name, run[key]) if f.exists()]
            if files:
                tables[(layer, d.name)] = pq.read_table(files[0])
    return run, tables


def scaled(tables: dict, factor: float) -> dict:
    """The tables with the tracked time columns multiplied by ``factor`` (integers rounded)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = dict(tables)
    for (layer, table), t in tables.items():
        if layer != "marts" or table not in SCALED:
            continue
        for col in SCALED[table]:
            if col not in t.schema.names:
                continue
            i = t.schema.get_field_index(col)
            typ = t.schema.field(i).type
            x = pc.multiply(pc.cast(t.column(col), pa.float64()), factor)
            if pa.types.is_integer(typ):
                x = pc.round(x)
            t = t.set_column(i, col, pc.cast(x, typ))
        out[(layer, table)] = t
    return out


def load_nights(
    wh: Warehouse,
    run: dict,
    tables: dict,
    nights: dict[str, list[float]],
    first: int = 0,
    columns: dict[str, list[dict]] | None = None,
) -> list[dict]:
    """Commit, without decoding, one run per night and workload into the empty warehouse ``wh``:
    ``nights`` maps a workload key to the factor of each night (night i collected i days after
    START_US, workload k an hour after workload k-1; ``first``: the number of the first night,
    to add nights to a warehouse loaded before); a run's tracked times are the base run's times
    times its factor; ``columns``: per workload, the run columns to set on each night (a dict
    per night, such as a version that changes; the night's number indexes the list). Returns
    the index rows, oldest first."""
    import pyarrow as pa

    from pipeline.warehouse.layout import LAYERS, file_schema, part_file
    from pipeline.warehouse.part_rows import conform, with_run
    from pipeline.warehouse.sink import parquet_writer

    rows = []
    for k, (workload, factors) in enumerate(nights.items()):
        for i, f in enumerate(factors, start=first):
            start = START_US + i * DAY_US + k * 3_600_000_000
            rid = f"night{i:04d}-w{k}"
            rows.append(
                (
                    dict(
                        run,
                        run_id=rid,
                        collection_start_us=start,
                        source_path=f"/nightly/{workload}/{i}",
                        fingerprint=f"fp-{rid}",
                        ingest_id=f"i-{rid}",
                        build_id=f"b-{rid}",
                        workload=workload,
                    )
                    | ((columns or {}).get(workload) or [{}] * (first + len(factors)))[i],
                    f,
                )
            )
    rows.sort(key=lambda x: x[0]["collection_start_us"])
    idx = wh.run_index().rows_by_run_id()
    with wh.writer() as writer:
        for layer, key, id_key in LAYERS:
            for r, factor in rows:
                part = r[id_key]
                for (lay, table), t in scaled(tables, factor).items():
                    if lay != layer:
                        continue
                    schema = file_schema(layer, table)
                    f = part_file(wh.path, layer, table, part)
                    f.parent.mkdir(parents=True, exist_ok=True)
                    with parquet_writer(f, schema) as out:
                        out.write_table(pa.concat_tables([with_run(conform(t, schema, None), r["run_id"])]))
                    writer.record_file_in_place(f)
                idx.setdefault(r["run_id"], dict(r))[key] = part
        writer.write_index(idx)
    return [r for r, _ in rows]
