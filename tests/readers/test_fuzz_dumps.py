"""Whole dumps of every generation, damaged at random: a clean result or a one-line error, and
every byte of every recognised data file decoded or reported."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.errors import PipelineError
from pipeline.jobs.runner import run_roots
from pipeline.synth.hiprof import HiprofConfig
from pipeline.synth.hiprof import generate as generate_hiprof
from pipeline.synth.prof import ProfConfig
from pipeline.synth.prof import generate as generate_prof
from pipeline.warehouse.store import Warehouse

pytestmark = pytest.mark.slow  # ingests and builds whole dumps (docs/testing.md)

BASES: dict[str, Path] = {}


def _base(kind: str) -> Path:
    """One pristine dump per kind, made once per test session."""
    if kind not in BASES:
        d = Path(tempfile.mkdtemp(prefix=f"fuzz-{kind}-"))
        if kind == "hiprof":
            generate_hiprof(d / "dump", HiprofConfig(inferences=2, tasks=4, slice_bytes=300))
        else:
            generate_prof(
                d / "dump", ProfConfig(chip=kind, devices=1, inferences=2, tasks=4, slice_bytes=300)
            )
        BASES[kind] = d / "dump"
    return BASES[kind]


def _data_files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.parent.name == "data" and not p.name.endswith((".done", ".complete"))
    )


damage = st.lists(
    st.tuples(st.sampled_from(["cut", "flip", "zero", "drop"]), st.integers(0, 10**6), st.integers(0, 10**6)),
    min_size=1,
    max_size=4,
)


@pytest.mark.parametrize("kind", ["hiprof", "ascend910a", "ascend310p", "ascend910b"])
@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=damage)
@example(damage=[("cut", 743, 743)])  # hiprof: a cut Runtime.api slice misframes records (stream id > 2^31)
def test_damaged_dump_is_read_or_refused_cleanly(kind, damage):
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump"
        shutil.copytree(_base(kind), dump)
        files = _data_files(dump)
        for action, which, where in damage:
            f = files[which % len(files)]
            if not f.exists():
                continue
            data = bytearray(f.read_bytes())
            if action == "drop":
                f.unlink()
                continue
            if not data:
                continue
            pos = where % len(data)
            if action == "cut":
                data = data[:pos]
            elif action == "flip":
                data[pos] ^= 1 << (where % 8)
            else:
                data[pos : pos + 64] = bytes(len(data[pos : pos + 64]))
            f.write_bytes(bytes(data))
        wh = Warehouse(Path(tmp) / "wh")
        try:
            with wh.writer():
                outcomes = run_roots(wh, [dump])
        except PipelineError as e:
            assert "\n" not in str(e)
            return
        for o in outcomes:
            assert o.status == "built" or (
                o.error and "\n" not in o.error and "internal error" not in o.error
            ), o.error
        for r in wh.run_index().run_records():
            assert r["bytes_decoded"] + r["bytes_skipped"] == r["data_bytes"], r["run_id"]
