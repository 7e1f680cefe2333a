"""Golden CSVs, reviewed like code: `pytest --update-goldens` rewrites them.

Every mart's golden is data/sample's but those data/sample has no rows of (a golden
without rows cannot fail): ai_core_samples (data/sample is task-based), step_trace_reduces
(an inference dump has no all-reduce) and aicpu_ops (an Ascend310 dump has no AI CPU task
records), whose goldens are small PROF_* dumps synth writes, and comm_iteration_ops and
comm_iteration_links (raw dumps hold no communication tasks), whose golden is the small
torch_npu export of tests/sql/test_comm_iterations.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.outputs.export import fetch, to_csv
from pipeline.synth import prof as synth_prof
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.warehouse.contracts import contracts
from pipeline.warehouse.store import Warehouse
from tests.readers.test_exported_totals import export
from tests.sql import test_comm_iterations

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
GOLDEN = REPO / "tests" / "golden"

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)


# marts whose golden comes from a synth dump rather than data/sample, and the dump's options
FROM_SYNTH = {
    "ai_core_samples": synth_prof.ProfConfig(
        chip="ascend910a", devices=1, inferences=2, tasks=3, sample_based=True, sample_cores=2, seed=7
    ),
    "step_trace_reduces": synth_prof.ProfConfig(
        chip="ascend910a", devices=1, inferences=2, tasks=3, training=True, seed=7
    ),
    "aicpu_ops": synth_prof.ProfConfig(
        chip="ascend910a", devices=1, inferences=2, tasks=5, aicpu="text", seed=7
    ),
}


# marts whose golden comes from a hand-written export (communication tasks: exports only)
FROM_EXPORT = ("comm_iteration_ops", "comm_iteration_links")


def _built(wh: Warehouse, root: Path) -> str:
    with wh.writer():
        outcomes = run_roots(wh, [root])
    assert [o.status for o in outcomes] == ["built"], [o.error for o in outcomes]
    return outcomes[0].run_id


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    wh = Warehouse(tmp_path_factory.mktemp("wh"))
    return wh, _built(wh, SAMPLE)


@pytest.fixture(scope="module")
def synth_runs(tmp_path_factory):
    runs = {}
    for table, cfg in FROM_SYNTH.items():
        d = tmp_path_factory.mktemp(f"golden-{table}")
        synth_prof.generate(d / "dump", cfg)
        wh = Warehouse(d / "wh")
        runs[table] = wh, _built(wh, d / "dump")
    return runs


@pytest.fixture(scope="module")
def export_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("golden-comm")
    dump = export(d, {"trace_view.json": json.dumps(test_comm_iterations._trace())})
    wh = Warehouse(d / "wh")
    return wh, _built(wh, dump)


@pytest.mark.parametrize("table", sorted(contracts("marts")))
def test_golden_csv(request, table, update_goldens):
    if table in FROM_SYNTH:
        wh, run_id = request.getfixturevalue("synth_runs")[table]
    elif table in FROM_EXPORT:
        wh, run_id = request.getfixturevalue("export_run")
    else:
        wh, run_id = request.getfixturevalue("sample_run")
    c, t = fetch(wh, table, [run_id])
    text = to_csv(c, t)
    path = GOLDEN / f"{table}.csv"
    if update_goldens:
        path.write_text(text)
    assert path.exists(), f"{path} missing: run pytest --update-goldens and review it"
    assert text == path.read_text()
    assert len(text.splitlines()) > 1, f"{path} holds no rows: a golden that cannot fail"


def test_the_sample_has_no_rows_of_the_synth_goldens(sample_run):
    """data/sample is task-based (its AI Core counters are per task, ai_core_metrics), an
    inference dump (step trace without all-reduce) and an Ascend310 dump (no AI CPU task
    records): those three tables are empty for it."""
    wh, run_id = sample_run
    assert [fetch(wh, t, [run_id])[1].num_rows for t in sorted(FROM_SYNTH)] == [0, 0, 0]
    assert [fetch(wh, t, [run_id])[1].num_rows for t in FROM_EXPORT] == [0, 0]
    assert fetch(wh, "ai_core_metrics", [run_id])[1].num_rows > 0


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
