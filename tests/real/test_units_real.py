"""Every real dump read unit by unit and built device by device (what a Dask cluster runs,
here in a pool of threads of one process) gives the warehouse of one read and one build of
the whole dump: every raw table and mart, EXCEPT ALL both ways."""

from __future__ import annotations

import pytest

from pipeline.jobs.cluster import Threads
from pipeline.jobs.dumps import discover
from pipeline.jobs.runner import run_roots
from pipeline.warehouse.store import Warehouse
from tests.helpers.warehouse_checks import differences

pytestmark = pytest.mark.slow  # ingests and builds every real dump twice


def test_real_dumps_by_units_equal_whole_reads(real_data, tmp_path):
    dumps = discover(real_data)
    assert len(dumps) >= 5, dumps
    whole, units = Warehouse(tmp_path / "whole"), Warehouse(tmp_path / "units")
    with whole.writer():
        a = run_roots(whole, dumps)
    with Threads(2) as pool, units.writer():
        b = run_roots(units, dumps, cluster=pool)
    assert [(o.source_path, o.status) for o in a] == [(o.source_path, o.status) for o in b]
    assert any(o.status == "built" for o in a)
    diff = differences(whole, units)
    assert {t: d for t, d in diff.items() if d[0] or d[1]} == {}
