"""Named crash points for the crash-consistency tests.

``checkpoint(name)`` does nothing unless the environment variable ``PROFETL_CRASH_AT``
names that point, in which case the process dies on the spot with ``os._exit``: no
``finally`` blocks, no flushing, as under ``kill -9``. tests/warehouse/test_warehouse_crash.py
kills a writer at every point and checks that the warehouse is still consistent.
"""

from __future__ import annotations

import os

POINTS = (
    "raw_written",  # raw part files complete in the temporary folder
    "raw_moved",  # raw part files renamed into their tables' folders, not committed
    "marts_written",  # mart part files renamed into their tables' folders, not committed
    "before_commit",  # the new run index written to a temporary name
    "after_commit",  # the run is committed; the old part files are still on disk
)


def checkpoint(name: str) -> None:
    if os.environ.get("PROFETL_CRASH_AT") == name:
        os._exit(137)
