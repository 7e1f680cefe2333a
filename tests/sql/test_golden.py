"""Golden CSVs of data/sample, reviewed like code: `pytest --update-goldens` rewrites them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.outputs.export import fetch, to_csv
from pipeline.jobs.runner import run_roots
from pipeline.warehouse.contracts import contracts
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.store import Warehouse

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    wh = Warehouse(tmp_path_factory.mktemp("wh"))
    with wh.writer():
        outcomes = run_roots(wh, [SAMPLE])
    assert [o.status for o in outcomes] == ["built"], [o.error for o in outcomes]
    return wh, outcomes[0].run_id


@pytest.mark.parametrize("table", sorted(contracts("marts")))
def test_golden_csv(sample_run, table, update_goldens):
    wh, run_id = sample_run
    c, t = fetch(wh, table, [run_id])
    text = to_csv(c, t)
    path = GOLDEN / f"{table}.csv"
    if update_goldens:
        path.write_text(text)
    assert path.exists(), f"{path} missing: run pytest --update-goldens and review it"
    assert text == path.read_text()


def test_sample_is_small_and_made_by_synth(tmp_path):
    """data/sample is exactly what `profetl synth` writes for its documented options."""
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 2 * 1024 * 1024
    made = tmp_path / "resnet50_2dev"
    generate(made, HiprofConfig(devices=2, inferences=4, tasks=10, drop_complete=1, seed=7))
    sample = SAMPLE / "resnet50_2dev"
    names = sorted(p.relative_to(sample) for p in sample.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(made) for p in made.rglob("*") if p.is_file())
    for rel in names:
        assert (sample / rel).read_bytes() == (made / rel).read_bytes(), rel
