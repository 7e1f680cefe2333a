"""build_marts(profile_dir=...): DuckDB's profile of each step's statement in a file of its own,
the marts the same as without it (bench/profile_build.py reads them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.jobs.build import build_marts
from pipeline.jobs.runner import ingest_dump
from pipeline.jobs.transforms import sql_files
from pipeline.warehouse.store import Warehouse

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "resnet50_2dev"


def test_profiles_one_file_per_step(tmp_path):
    wh = Warehouse(tmp_path / "wh")
    with wh.writer():
        run = ingest_dump(wh, SAMPLE, then_build=False).ingest.row
    plain = build_marts(wh, run)
    profiled = build_marts(wh, run, profile_dir=tmp_path / "profile")
    assert plain.rows_by_mart == profiled.rows_by_mart
    for name, path in plain.files.items():
        assert (
            pq.read_table(path).drop(["run_id"]).equals(pq.read_table(profiled.files[name]).drop(["run_id"]))
        )
    got = {p.name for p in (tmp_path / "profile").glob("*.json")}
    for layer in ("staging", "intermediate", "marts"):
        for f in sql_files(layer):
            if f.stored or layer == "marts":
                assert f"{layer}__{f.name}.json" in got
    for f in sql_files("marts"):
        assert f"marts__{f.name}.grain.json" in got
    profile = json.loads((tmp_path / "profile" / "staging__stg_task_ops.json").read_text())
    assert "create" in profile["query"]["sql"].lower() and "stg_task_ops" in profile["query"]["sql"]
    mart = json.loads((tmp_path / "profile" / "marts__op_summary.json").read_text())
    assert "create" not in mart["query"]["sql"].lower()[:20]
