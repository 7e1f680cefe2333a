"""Every reader profetl has, listed once, and which one reads a folder.

A reader is a package of ``pipeline/readers/`` with one face, so that the jobs never ask which
generation a dump is (docs/architecture.md#readers):

- ``LAYOUTS``: the layouts it reads (the ``layout`` column of a run);
- ``detect(path)``: the layout of the folder ``path``, or None when it is not one of them;
- ``scan(root, layout)``: the dump's files as this reader sorts them (one listing, taken once,
  that the rest of the face is given);
- ``identity(scanned)``: the collection start and the texts that name the dump (its control
  files; an export's files), read before any data;
- ``units(scanned)``: what the dump is read in, on a cluster (``[None]``: as a whole);
- ``read(scanned, sink, log, unit, first, workdir)``: the dump (``unit`` None) or one unit of
  it into ``sink``; returns its ``RunMeta``;
- ``merge_metas(metas)``: the run's metadata from its units' reads, in unit order.

``tests/readers/test_catalog.py`` checks that every reader has the face.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from pipeline.readers import exported, hiprof, prof

# raw data (generations 1-3) first: where present it is read rather than its exports
READERS: tuple[ModuleType, ...] = (prof, hiprof, exported)
FACE = ("LAYOUTS", "detect", "scan", "identity", "units", "read", "merge_metas")
# a PROF_* tree or a job whose data/ is gone: read as its exports, when it has them
_RAW_WITHOUT_DATA = ("msprof_prof", "msprof_job")


def detect(path: Path) -> str | None:
    """The layout of a dump folder, or None when it is not one profetl reads."""
    raw = prof.detect(path) or hiprof.detect(path)
    export_layout = exported.detect(path)  # None where raw data of any generation is present
    if export_layout is not None and raw in (None, *_RAW_WITHOUT_DATA):
        return export_layout  # a PROF_* tree or job whose data/ is gone, or a torch_npu rank folder
    return raw


def reader_of(layout: str) -> ModuleType:
    """The reader of ``layout``."""
    for r in READERS:
        if layout in r.LAYOUTS:
            return r
    raise ValueError(f"no reader reads the layout {layout!r}")
