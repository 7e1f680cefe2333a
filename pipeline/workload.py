"""Which workload a run belongs to: the key that groups runs of the same work for trends,
comparisons and ``--workload`` (documented with the runs view in pipeline/warehouse/views.py).

A domain rule, not storage: it names which of a run's raw tables and columns tell its work
apart. The warehouse's writer applies it when it commits a run with a new ingest, and the
upgrade from profetl 0.2's layout when it migrates one, each handing it a reader of the run's
values (``distinct``); it imports nothing of pipeline, so every layer may use it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable


def workload_of(run: dict, distinct: Callable[[str, str], list[str]]) -> str:
    """What the run ran: <layout>/<chip>/<model names joined by +>, or
    <layout>/<chip>/ops-<md5 of the sorted op names joined by commas, 8 digits>, or
    <layout>/<chip>/empty. ``run``: its commit record (``layout``, ``chip``);
    ``distinct(table, column)``: the run's distinct non-null values of a raw table's column,
    sorted."""
    models = distinct("inferences", "model_name")
    if models:
        what = "+".join(models)
    else:
        ops = distinct("task_ops", "op_name")
        what = ("ops-" + hashlib.md5(",".join(ops).encode()).hexdigest()[:8]) if ops else "empty"
    return "/".join(x for x in (run.get("layout"), run.get("chip") or "unknown-chip", what) if x is not None)
