"""Shared fixtures: synthetic runs through the whole pipeline, the real-data folder, goldens."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from pipeline.jobs.runner import ingest_dump
from pipeline.outputs.export import fetch
from pipeline.synth.hiprof import HiprofConfig, generate
from pipeline.synth.truth import Truth
from pipeline.warehouse.store import Warehouse

REPO = Path(__file__).resolve().parent.parent
# A folder of public repositories' profiling test data, laid out as OWNER+REPO/<path in that
# repository> (README.md, Development, lists what the real-data tests read).
REAL_DATA_ENV = "PROFETL_REAL_DATA"


# Property tests check what decoders and readers return, not how fast: no per-example deadline
# (on a shared 2-core CI host a first example that imports or collects garbage can take 250 ms).
settings.register_profile("profetl", deadline=None)
settings.load_profile("profetl")


# Test files whose tests run on one worker of `pytest -n` together, one after another: the
# files that start Dask clusters, so that two clusters never fight for the cores.
SHARED_WORKER_FILES = {
    "tests/jobs/test_cluster.py": "dask",
    "tests/outputs/test_dask_read.py": "dask",
}


def pytest_xdist_make_scheduler(config, log):
    """With `--dist loadfile` (pyproject.toml) a test file is the unit a worker takes, so a
    module's fixtures are made once per run of the suite, not once per worker that gets one of
    its tests; the files of SHARED_WORKER_FILES go to one worker as one unit. (pytest-xdist's own
    `loadgroup` groups by a suffix it adds to the test ids, which pytest 9 no longer lets a
    plugin change: with pytest 9 it sent a group's tests to every worker.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return SHARED_WORKER_FILES.get(path, path)

    return FilesAndGroups(config, log)


# Then the files that hold the longest single tests (`pytest --durations=30`), so that none of
# them is what one worker still runs at the end while the others have nothing left.
LONG_FILES = (
    "tests/real/test_units_real.py",
    "tests/warehouse/test_warehouse_crash.py",
    "tests/outputs/test_site.py",
    "tests/synth/test_synth_options.py",
    "tests/readers/test_fuzz_dumps.py",
    "tests/analysis/test_trend.py",
    "tests/project/test_lint.py",
)


def pytest_collection_modifyitems(config, items):
    """The files of SHARED_WORKER_FILES first: the longest unit a worker takes (the Dask tests,
    a few minutes together) starts at once, and the other worker meanwhile takes the rest, rather
    than one worker starting it when the others' work is nearly done; then LONG_FILES, longest
    first; then the rest in the order collected (a file's tests stay together)."""

    def rank(item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path in SHARED_WORKER_FILES:
            return 0
        return 1 + LONG_FILES.index(path) if path in LONG_FILES else 1 + len(LONG_FILES)

    items.sort(key=rank)


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens", action="store_true", help="Rewrite tests/golden/*.csv from the current output."
    )


@pytest.fixture
def update_goldens(request) -> bool:
    return request.config.getoption("--update-goldens")


@pytest.fixture(scope="session")
def real_data() -> Path:
    """Real profiling output from public repositories: the folder ``PROFETL_REAL_DATA`` names.
    Tests using it skip when the variable is unset or names no folder."""
    value = os.environ.get(REAL_DATA_ENV, "")
    if not value:
        pytest.skip(
            f"set {REAL_DATA_ENV} to a folder of real profiling data laid out as "
            "OWNER+REPO/<path> (see docs/testing.md#real-data)"
        )
    folder = Path(value).expanduser()
    if not folder.is_dir():
        pytest.skip(f"{REAL_DATA_ENV}={value} is not a folder (see docs/testing.md#real-data)")
    return folder


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


def make_synth_run(where: Path, **kwargs) -> SynthRun:
    """A synthetic dump of the given config written in ``where``, ingested and built there."""
    cfg = HiprofConfig(**kwargs)
    dump = where / f"dump-{len(list(where.iterdir()))}"
    truth = generate(dump, cfg)
    wh = Warehouse(where / "wh")
    with wh.writer():
        outcome = ingest_dump(wh, dump)
    return SynthRun(truth, dump, wh, outcome.run_id, outcome, cfg)


@pytest.fixture
def synth_run(tmp_path):
    """Factory: write a synthetic dump with the given config, ingest and build it."""
    return lambda **kwargs: make_synth_run(tmp_path, **kwargs)


@pytest.fixture(scope="session")
def small_dumps(tmp_path_factory) -> Path:
    """A folder with two one-inference synthetic dumps, ``hiprof`` and ``prof`` (Ascend910B),
    written once per test process for the tests that damage a copy of one. Copy before changing."""
    from pipeline.synth.prof import ProfConfig
    from pipeline.synth.prof import generate as generate_prof

    base = tmp_path_factory.mktemp("small-dumps")
    generate(base / "hiprof", HiprofConfig(inferences=1, seed=1))
    generate_prof(base / "prof", ProfConfig(inferences=1, seed=1))
    return base


@pytest.fixture(scope="session")
def sample_nights(tmp_path_factory):
    """Factory: ``sample_nights(count, small_groups=False)``, the sample dump run as ``count``
    nights (tests/helpers/nights.py), built once per test process for each pair of arguments and
    shared by every test file that asks for it. ``Nights.copy`` before changing the warehouse:
    at the end of the test run each shared warehouse and its dumps must be as they were built."""
    from tests.helpers.nights import build_nights, kept_as_built

    built = {}
    with ExitStack() as checks:

        def get(count: int, small_groups: bool = False):
            key = (count, small_groups)
            if key not in built:
                root = tmp_path_factory.mktemp(f"nights-{count}{'-small-groups' if small_groups else ''}")
                built[key] = build_nights(root, count, small_groups)
                checks.enter_context(kept_as_built(root, f"the shared sample_nights{key}"))
            return built[key]

        yield get


@pytest.fixture
def small_groups():
    """Compaction at the sizes of a test (tests/helpers/nights.py) while the test runs."""
    from tests.helpers.nights import compaction_at_test_sizes

    with compaction_at_test_sizes():
        yield
