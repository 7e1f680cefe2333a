"""How far a long job has got, for whoever shows it: the library reports, never prints.

A command line that shows progress registers a listener with ``listen``; the library calls
``report`` as it goes: ``phase`` ("ingest" or "build") with ``total`` (bytes of the dump's
files, or build steps) when a phase starts, ``advance`` (bytes decoded, or one step) and
``step`` (the build step running) as it moves. Without a listener a report costs two tests.

A night on a cluster (``pipeline.jobs.runner.run_roots``) runs several dumps' jobs at once,
each in a thread of its own whose reports it sums up (``redirected``); the listener then hears
the night's: ``phase="night"`` with ``total`` (the night's dumps) and ``unit="runs"``, then
``advance=1`` as each dump's run is committed (or fails), and ``units=(done, known)`` as
units of work on the cluster finish or are handed to it (``known`` grows as dumps start).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager

_listener: Callable[..., None] | None = None
_thread = threading.local()  # .to: where this thread's reports go instead (``redirected``)

# the unit of a phase whose items are units of work (pipeline.jobs.cluster.Units.run)
UNITS = "devices"


def listen(fn: Callable[..., None] | None) -> Callable[..., None] | None:
    """Make ``fn`` the listener (None: none); returns the previous one, to restore."""
    global _listener
    previous, _listener = _listener, fn
    return previous


@contextmanager
def redirected(fn: Callable[..., None]):
    """The reports made by this thread in the block go to ``fn``, not to the listener: a job
    running in a thread of a bigger one, which reports for all of them."""
    previous = getattr(_thread, "to", None)
    _thread.to = fn
    try:
        yield
    finally:
        _thread.to = previous


def report(**what) -> None:
    to = getattr(_thread, "to", None) or _listener
    if to is not None:
        to(**what)


def report_to_listener(**what) -> None:
    """``report`` to the listener, past this thread's redirection: what a job that sums up
    the reports of others (``redirected``) reports itself."""
    if _listener is not None:
        _listener(**what)
