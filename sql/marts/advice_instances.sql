-- advice_instances: one row per instance of an advice finding: an op, task or inference a rule
-- flags, with the value measured, the threshold it crossed and the rows that show it.
--
-- Grain:   (run_id, device_id, rule_id, scope, scope_name)
-- Sources: int_warnings
-- Follows: the rules, thresholds and ranks of int_warnings (sql/intermediate/int_warnings.sql,
--          docs/formats.md#rule-advice); its finding is the advice row of the same (run_id,
--          device_id, rule_id, scope). Rows: device, rule, scope, then inferences by number
--          (scope_key) and ops and tasks worst first (rank).
-- Columns:
--   device_id      -     device
--   rule_id        -     memory_bound, compute_underuse, scalar_heavy, low_main_mem_bw, aicpu_critical_path,
--                        queue_dominant or launch_bound
--   scope          -     op, task or inference
--   scope_name     -     op name; "stream S task T" for a task without an op; "inference K" for an inference
--   scope_key      -     the inference number K of an inference (sorts as a number); NULL for an op or task
--   rank           -     1-based rank in its finding, 1 = the worst: largest share_pct, then largest value
--   severity       -     the instance's own: high when share_pct >= high_share_pct (default 10), else medium
--   value          -     the measured value the rule tests (its unit in unit)
--   threshold      -     the threshold it crossed, in force for this build (unit in unit)
--   unit           -     unit of value and threshold: ratio, GB/s or %
--   share_pct      %     the instance's share of its device's time (NULL for an inference)
--   evidence       -     which rows show it: table and filter, with row counts

select
    device_id,
    rule_id,
    scope,
    scope_name,
    scope_key,
    rank,
    severity,
    value,
    threshold,
    unit,
    share_pct,
    evidence
from int_warnings
order by device_id, rule_id, scope, scope_key nulls last, rank
