"""Absurd control-file values are bad metadata naming the field, never an internal error:
the dump is still built (with the loss reported) and nothing overflows."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pipeline.jobs.runner import run_roots
from pipeline.warehouse.store import Warehouse


def _edit_json(path: Path, key: str, raw: str, inside: str | None = None) -> None:
    """Set ``key`` (in the first element of ``inside``) to the JSON text ``raw``, as written."""
    d = json.loads(path.read_text())
    (d[inside][0] if inside else d)[key] = "@@"
    path.write_text(json.dumps(d).replace('"@@"', raw))


def _sync(key: str, digits: str):
    return lambda d: (d / "host_start.log.0").write_text(f"[Host]\n{key}: {digits}\ncntvct: 5\n")


HIPROF = {
    "start 1e30": (
        lambda d: _edit_json(d / "start_info.0", "collectionTimeBegin", "1e30"),
        "collectionTimeBegin",
    ),
    "start 10^40": (
        lambda d: _edit_json(d / "start_info.0", "collectionTimeBegin", str(10**40)),
        "collectionTimeBegin",
    ),
    "hwts 1e308": (
        lambda d: _edit_json(d / "info.json.0", "hwts_frequency", "1e308", "DeviceInfo"),
        "hwts_frequency",
    ),
    "hwts 1e-300": (
        lambda d: _edit_json(d / "info.json.0", "hwts_frequency", "1e-300", "DeviceInfo"),
        "hwts_frequency",
    ),
    "cpu 1e308": (lambda d: _edit_json(d / "info.json.0", "Frequency", "1e308", "CPU"), "Frequency"),
    "device id 2^32": (lambda d: _edit_json(d / "info.json.0", "id", str(2**32), "DeviceInfo"), "id"),
    "ai_core_num 2^40": (
        lambda d: _edit_json(d / "info.json.0", "ai_core_num", str(2**40), "DeviceInfo"),
        "ai_core_num",
    ),
    "deep json": (lambda d: (d / "info.json.0").write_text("[" * 100_000 + "]" * 100_000), "nested too deep"),
    "deep json value": (
        lambda d: (d / "sample.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        "nested too deep",
    ),
    "sync 40 digits": (_sync("clock_monotonic_raw", "9" * 40), "clock_monotonic_raw"),
    "sync 5000 digits": (_sync("clock_monotonic_raw", "9" * 5000), "clock_monotonic_raw"),
    "event id 2^160": (
        lambda d: _edit_json(d / "sample.json", "ai_core_profiling_events", '"0x' + "f" * 40 + '"'),
        "ai_core_profiling_events",
    ),
}
PROF = {
    "drvVersion 10^40": ("info.json", lambda p: _edit_json(p, "drvVersion", str(10**40)), "drvVersion"),
    "drvVersion 1e308": ("info.json", lambda p: _edit_json(p, "drvVersion", "1e308"), "drvVersion"),
    "prof hwts 1e308": (
        "info.json",
        lambda p: _edit_json(p, "hwts_frequency", "1e308", "DeviceInfo"),
        "hwts_frequency",
    ),
    "prof cpu 1e308": ("info.json", lambda p: _edit_json(p, "Frequency", "1e308", "CPU"), "Frequency"),
}


def _ingest(d: Path, wh: Path):
    w = Warehouse(wh)
    with w.writer():
        [o] = run_roots(w, [d])
    return o


@pytest.mark.parametrize("case", list(HIPROF))
def test_absurd_hiprof_metadata_is_bad_metadata(small_dumps, tmp_path, case):
    damage, field = HIPROF[case]
    d = tmp_path / "dump"
    shutil.copytree(small_dumps / "hiprof", d)
    damage(d)
    o = _ingest(d, tmp_path / "wh")
    assert o.status == "built", o.error
    assert any("bad_metadata" in i and field in i for i in o.issues), o.issues
    assert o.losses.get("bad_metadata")


@pytest.mark.parametrize("case", list(PROF))
def test_absurd_prof_metadata_is_bad_metadata(small_dumps, tmp_path, case):
    name, damage, field = PROF[case]
    d = tmp_path / "dump"
    shutil.copytree(small_dumps / "prof", d)
    edited = 0
    for p in d.rglob(name + "*"):
        if p.suffix != ".done":
            try:
                damage(p)
                edited += 1
            except (KeyError, IndexError):  # a file without that section (the host's info.json)
                pass
    assert edited
    o = _ingest(d, tmp_path / "wh")
    assert o.status == "built", o.error
    assert any("bad_metadata" in i and field in i for i in o.issues), o.issues


def test_symlink_loops_are_not_followed(small_dumps, tmp_path):
    d = tmp_path / "dump"
    shutil.copytree(small_dumps / "hiprof", d)
    os.symlink(d / "data" / "loop", d / "data" / "loop")
    os.symlink("..", d / "data" / "up")
    o = _ingest(d, tmp_path / "wh")
    assert o.status == "built", o.error
