-- op_statistic: one row per (device, op type, core type) with executions and time.
--
-- Grain:   (run_id, device_id, op_type, core_type); core_type NULL is a value
-- Sources: int_op_executions (exported executions, else raw ones)
-- Follows: msprof op_statistic (docs/formats.md#rule-op-statistic):
--          executions of operators with a type, grouped by (op type, core type); Ratio =
--          the group's total time / the device's total * 100. Choices: times in integer ns and
--          the average not rounded (msprof rounds to 0.001 us); executions of tasks without an
--          op type (event records, copies: no operator describes them) are left out, as msprof
--          leaves them. A kernel launched outside any node launch (a task_track without
--          node_basic_info, e.g. AI_CPU data-preparation kernels) has its kernel name as op
--          type (stg_task_ops) and is counted, as msprof counts it; Ratio includes it.
--          Core type: the exported accelerator core (AI_CORE, AI_VECTOR_CORE, MIX_AIC, ...),
--          else the task type.
--          The executions and their ops are int_op_executions' (exported, else raw).
-- Columns:
--   device_id  -      device
--   op_type    -      operator type
--   core_type  -      core the operator ran on (accelerator core where exported, else its task type)
--   count      -      executions
--   total_ns   ns     sum of execution times
--   min_ns     ns     shortest execution
--   avg_ns     ns     total_ns / count, not rounded
--   max_ns     ns     longest execution
--   ratio_pct  %      total_ns / the device's total of all op types * 100

with executions as (
    -- the run's executions, exported or raw (int_op_executions), of operators with a type
    select device_id, op_type, coalesce(accelerator_core, task_type) as core_type, dur_ns
    from int_op_executions
    where op_type is not null
),

grouped as (
    select
        device_id,
        op_type,
        core_type,
        count(*) as count,
        sum(dur_ns)::bigint as total_ns,
        min(dur_ns) as min_ns,
        sum(dur_ns)::double / count(*) as avg_ns,
        max(dur_ns) as max_ns
    from executions
    group by device_id, op_type, core_type
)

select
    device_id,
    op_type,
    core_type,
    count,
    total_ns,
    min_ns,
    avg_ns,
    max_ns,
    total_ns * 100.0 / nullif(sum(total_ns) over (partition by device_id), 0) as ratio_pct
from grouped
order by device_id, total_ns desc, op_type, core_type
