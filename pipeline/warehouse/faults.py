"""Named crash points for the crash-consistency tests.

``checkpoint(name)`` does nothing unless the environment variable ``PROFETL_CRASH_AT``
names that point, in which case the process dies on the spot with ``os._exit``: no
``finally`` blocks, no flushing, as under ``kill -9``. tests/warehouse/test_warehouse_crash.py
kills a writer at every point and checks that the warehouse is still consistent.

With ``PROFETL_CRASH_ONCE`` naming a file as well, only the first process to reach the point
dies (it creates the file; the others find it and go on): a Dask worker killed once in the
middle of a task, whose task the scheduler then retries (tests/jobs/test_cluster.py).
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
# reached only on a Dask worker (``--workers`` / ``--scheduler``)
CLUSTER_POINTS = (
    "unit_read",  # a worker has written one unit's raw files (pipeline.jobs.units)
    "unit_split",  # a worker has split one table of a unit by device (pipeline.jobs.units)
    "device_built",  # a worker has written one device's mart files (pipeline.jobs.build)
)


def checkpoint(name: str) -> None:
    if os.environ.get("PROFETL_CRASH_AT") == name:
        once = os.environ.get("PROFETL_CRASH_ONCE")
        if once:
            try:
                os.close(os.open(once, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return
        os._exit(137)
