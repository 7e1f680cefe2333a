"""Shared fixtures: synthetic runs through the whole pipeline, the real-data folder, goldens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from pipeline.export import fetch
from pipeline.jobs import ingest_dump
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.synth.truth import Truth
from pipeline.warehouse import Warehouse

REPO = Path(__file__).resolve().parent.parent
REAL_DATA = REPO.parent / "shared" / "real-data"


# Property tests check what decoders and readers return, not how fast: no per-example deadline
# (on a shared 2-core CI host a first example that imports or collects garbage can take 250 ms).
settings.register_profile("profetl", deadline=None)
settings.load_profile("profetl")


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", help="Rewrite tests/golden/*.csv from the current output.")


@pytest.fixture
def update_goldens(request) -> bool:
    return request.config.getoption("--update-goldens")


@pytest.fixture
def real_data() -> Path:
    """The shared real profiling output; tests using it skip when it is not beside the repo."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"real data folder not present ({REAL_DATA})")
    return REAL_DATA


@dataclass
class SynthRun:
    truth: Truth
    dump: Path
    wh: Warehouse
    run_id: str
    outcome: object
    config: HiprofConfig | None = None

    def rows(self, table: str) -> list[dict]:
        _, t = fetch(self.wh, table, [self.run_id])
        return t.to_pylist()


@pytest.fixture
def synth_run(tmp_path):
    """Factory: write a synthetic dump with the given config, ingest and build it."""

    def make(**kwargs) -> SynthRun:
        cfg = HiprofConfig(**kwargs)
        dump = tmp_path / f"dump-{len(list(tmp_path.iterdir()))}"
        truth = generate(dump, cfg)
        wh = Warehouse(tmp_path / "wh")
        with wh.writer():
            outcome = ingest_dump(wh, dump)
        return SynthRun(truth, dump, wh, outcome.run_id, outcome, cfg)

    return make
