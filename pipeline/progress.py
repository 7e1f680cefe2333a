"""How far a long job has got, for whoever shows it: the library reports, never prints.

A command line that shows progress registers a listener with ``listen``; the library calls
``report`` as it goes: ``phase`` ("ingest" or "build") with ``total`` (bytes of the dump's
files, or build steps) when a phase starts, ``advance`` (bytes decoded, or one step) and
``step`` (the build step running) as it moves. Without a listener a report costs one test.
"""

from __future__ import annotations

from collections.abc import Callable

_listener: Callable[..., None] | None = None


def listen(fn: Callable[..., None] | None) -> Callable[..., None] | None:
    """Make ``fn`` the listener (None: none); returns the previous one, to restore."""
    global _listener
    previous, _listener = _listener, fn
    return previous


def report(**what) -> None:
    if _listener is not None:
        _listener(**what)
