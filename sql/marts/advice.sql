-- advice: one row per finding: a rule and the kind of scope it flags (op, task or inference) on
-- a device, with how many instances it flags, the worst of them, the value measured there, the
-- threshold it crossed and a one-sentence suggestion. Each instance is a row of
-- advice_instances.
--
-- Grain:   (run_id, device_id, rule_id, scope)
-- Sources: int_warnings
-- Follows: the rules, thresholds and ranks of int_warnings (sql/intermediate/int_warnings.sql,
--          docs/formats.md#rule-advice): the original tool's guide (pipe ratios, memory_bound,
--          main-memory bandwidth) and profetl's own rules. A run of 300 inferences that are all
--          launch-bound is one launch_bound finding of 300 instances, not 300 rows. The worst
--          instances are the ranks 1 to 3 (largest share of the device's time, then largest
--          value); value, threshold and unit are the worst instance's; share_pct the instances'
--          shares summed, severity high when that sum >= high_share_pct (default 10), else
--          medium (launch_bound: medium). A regression against earlier runs needs other runs:
--          not here, the report computes it (pipeline/analysis/advice.py). Rows: device, high
--          first, share desc.
-- Columns:
--   device_id      -     device
--   severity       -     high or medium
--   rule_id        -     memory_bound, compute_underuse, scalar_heavy, low_main_mem_bw, aicpu_critical_path,
--                        queue_dominant or launch_bound
--   scope          -     op, task or inference: the kind of the instances
--   instances      -     how many ops, tasks or inferences the rule flags (rows of advice_instances)
--   worst          -     the names of the worst instances (up to 3, worst first, comma-separated): op name,
--                        "stream S task T" or "inference K"
--   value          -     the measured value the rule tests, of the worst instance (its unit in unit)
--   threshold      -     the threshold it crossed, in force for this build (unit in unit)
--   unit           -     unit of value and threshold: ratio, GB/s or %
--   share_pct      %     the instances' summed share of their device's time (NULL for inferences)
--   evidence       -     which rows show it: the advice_instances filter, with the row count
--   suggestion     -     what to try, in one sentence

select *
from (
    select
        device_id,
        any_value(finding_severity) as severity,
        rule_id,
        scope,
        any_value(instances) as instances,
        string_agg(scope_name, ', ' order by rank) filter (where rank <= 3) as worst,
        any_value(value) filter (where rank = 1) as value,
        any_value(threshold) filter (where rank = 1) as threshold,
        any_value(unit) filter (where rank = 1) as unit,
        any_value(finding_share_pct) as share_pct,
        format(
            'advice_instances: device_id = {} and rule_id = ''{}'' and scope = ''{}'' ({} row{})',
            device_id, rule_id, scope, any_value(instances),
            case when any_value(instances) = 1 then '' else 's' end
        ) as evidence,
        any_value(suggestion) as suggestion
    from int_warnings
    group by device_id, rule_id, scope
)
order by device_id, severity = 'medium', share_pct desc nulls last, rule_id, scope
