"""Advice: the thresholds of the ``advice`` marts, and the rule that needs other runs.

The rules (sql/intermediate/int_warnings.sql, read by the marts ``advice``, one row per
finding, and ``advice_instances``, one per instance; docs/formats.md#rule-advice) read their
thresholds as DuckDB variables ``advice_<name>`` with defaults written in the SQL. A warehouse may set
them in its ``advice.toml``::

    [advice]
    memory_bound_min = 1.2
    min_share_pct = 2

The build sets each one given there before the marts run, so every run built into that
warehouse uses them; the mart's ``threshold`` column shows the value in force.

The regression rule compares a run with earlier runs of its workload, which a build (one
run) cannot see: ``regressions`` computes it from pipeline.compare when a report is made.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from pipeline.errors import UsageError
from pipeline.resources import SQL_DIR, folder
from pipeline.warehouse.store import Warehouse

ADVICE_FILE = "advice.toml"
_VARIABLE = re.compile(r"coalesce\(getvariable\('advice_([a-z0-9_]+)'\),\s*([0-9.]+)\)")

# the regression rule (report time): an op slower than the median of the last N runs
REGRESSION_LAST = 5
REGRESSION_PCT = 10.0
REGRESSION_MIN_NS = 1000.0


def defaults() -> dict[str, float]:
    """Each threshold of sql/intermediate/int_warnings.sql by name, with its default."""
    text = (folder(SQL_DIR, "intermediate") / "int_warnings.sql").read_text(encoding="utf-8")
    return {name: float(value) for name, value in _VARIABLE.findall(text)}


def configured(wh: Warehouse) -> dict[str, float]:
    """The thresholds the warehouse's advice.toml sets (none without the file). A name the mart
    does not know or a value that is not a number is a UsageError naming the file."""
    path = wh.path / ADVICE_FILE
    if not path.is_file():
        return {}
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"{path}: {e}") from None
    section = doc.get("advice", {})
    if not isinstance(section, dict):
        raise UsageError(f"{path}: [advice] must be a table of name = number")
    known = defaults()
    out = {}
    for name, value in section.items():
        if name not in known:
            raise UsageError(f"{path}: unknown advice threshold {name!r}; known: {', '.join(sorted(known))}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{path}: advice threshold {name} = {value!r} is not a number")
        out[name] = float(value)
    return out


def set_thresholds(con, values: dict[str, float]) -> None:
    """Make ``values`` the advice thresholds of DuckDB connection ``con``."""
    for name, value in values.items():
        con.execute(f"set variable advice_{name} = {float(value)!r}::double")


@dataclass
class Instance:
    """One row of advice_instances, as the report shows it under its finding."""

    scope_name: str
    rank: int
    severity: str
    value: float | None
    share_pct: float | None
    evidence: str


@dataclass
class Finding:
    """One row of advice, as the report shows it (the mart's columns, and run-level ones), with
    the instances shown under it (``shown`` of ``instances``, worst first but inferences by
    number)."""

    device_id: int | None
    severity: str
    rule_id: str
    scope: str
    instances: int
    worst: str
    value: float | None
    threshold: float | None
    unit: str
    share_pct: float | None
    evidence: str
    suggestion: str
    shown: list[Instance] = field(default_factory=list)


def regressions(
    wh: Warehouse,
    run_id: str,
    last: int = REGRESSION_LAST,
    threshold_pct: float = REGRESSION_PCT,
    min_ns: float = REGRESSION_MIN_NS,
) -> tuple[list[Finding], str | None]:
    """The regression rule: ops whose mean time in the run is at least ``threshold_pct`` % above
    the median of the ``last`` earlier runs of its workload (pipeline.compare, op means), either
    value at least ``min_ns``. Returns the finding (one, its instances the ops, the worst the
    slowest down: largest ratio) and, when there is no baseline, why not."""
    from pipeline.analysis.compare import compare

    try:
        cmp = compare(
            wh, run_id, last=last, by="op", stat="mean", threshold_pct=threshold_pct, min_value=min_ns
        )
    except UsageError as e:
        return [], str(e)
    if not cmp.regressions:
        return [], None
    worst = sorted(cmp.regressions, key=lambda c: (-c.ratio, c.name))
    shown = [
        Instance(
            c.name,
            k,
            "high",
            c.ratio,
            None,
            f"mean {c.before:.0f} ns in the {cmp.baseline}, {c.after:.0f} ns now",
        )
        for k, c in enumerate(worst, 1)
    ]
    return [
        Finding(
            None,
            "high",
            "regression",
            "op",
            len(worst),
            ", ".join(c.name for c in worst[:3]),
            worst[0].ratio,
            1 + threshold_pct / 100,
            "ratio",
            None,
            f"profetl compare {run_id} --last {last} --by op --threshold {threshold_pct:g} --min {min_ns:g}",
            "Slower than in the earlier runs of this workload: look at what changed (CANN, driver, model, "
            "shapes) and at these ops' rows in both runs.",
            shown,
        )
    ], None
