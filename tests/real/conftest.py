"""Fixtures of the real-data tests."""

from __future__ import annotations

import pytest

from tests.helpers.built import build_dump
from tests.real.job3 import JOB3


@pytest.fixture(scope="session")
def job3(real_data, tmp_path_factory):
    """JOB3 (tests/real/job3.py) ingested and built once per test process: (its run row,
    rows(table)). Read it; a test that changes a warehouse builds its own."""
    return build_dump(tmp_path_factory.mktemp("job3") / "wh", real_data / JOB3)
