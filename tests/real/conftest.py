"""Fixtures of the real-data tests."""

from __future__ import annotations

import pytest

from tests.helpers.built import build_dump
from tests.helpers.nights import kept_as_built
from tests.real.job3 import JOB3


@pytest.fixture(scope="session")
def job3(real_data, tmp_path_factory):
    """JOB3 (tests/real/job3.py) ingested and built once per test process: (its run row,
    rows(table)). Read it; a test that changes a warehouse builds its own (at the end of the
    test run the shared one must be as it was built)."""
    root = tmp_path_factory.mktemp("job3")
    built = build_dump(root / "wh", real_data / JOB3)
    with kept_as_built(root, "the shared JOB3 warehouse"):
        yield built
